package sandbox

import (
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation/landlock"
)

// Errno values used by the profiles (Linux, all architectures we build).
const (
	errnoEPERM        = 1
	errnoENOSYS       = 38
	errnoEAFNOSUPPORT = 97
	// errnoEPROTONOSUPPORT is what socket() returns on a kernel built
	// without the protocol, so programs fall back as they would there.
	errnoEPROTONOSUPPORT = 93
)

// ipprotoMPTCP is IPPROTO_MPTCP (linux/in.h).
const ipprotoMPTCP = 262

// The set-user-ID and set-group-ID mode bits (linux/stat.h).
const (
	modeSetUID = 0o4000
	modeSetGID = 0o2000
)

// modeArgs names, for each syscall that sets a file's mode from an
// argument, which argument holds the mode (x86_64 and arm64 alike).
var modeArgs = []struct {
	name  string
	index uint
}{
	{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2},
	{"open", 2}, {"openat", 3}, {"creat", 1}, {"mknod", 1}, {"mknodat", 2},
}

// Clone namespace flags (linux/sched.h).
const (
	cloneNewTime   = 0x00000080
	cloneNewNS     = 0x00020000
	cloneNewCgroup = 0x02000000
	cloneNewUTS    = 0x04000000
	cloneNewIPC    = 0x08000000
	cloneNewUser   = 0x10000000
	cloneNewPID    = 0x20000000
	cloneNewNet    = 0x40000000
)

// deniedSyscalls fail with EPERM in every sandbox: at least Docker's
// default denials (kernel modules, mounts, namespaces, tracing, keyrings,
// clocks, bpf, io_uring, ...).
var deniedSyscalls = []string{
	"acct", "add_key", "adjtimex", "bpf", "clock_adjtime", "clock_settime", "clock_settime64",
	"create_module", "delete_module", "finit_module", "fanotify_init", "fsconfig", "fsmount",
	"fsopen", "fspick", "get_kernel_syms", "get_mempolicy", "init_module", "io_uring_enter",
	"io_uring_register", "io_uring_setup", "ioperm", "iopl", "kcmp", "kexec_file_load",
	"kexec_load", "keyctl", "lookup_dcookie", "mbind", "migrate_pages", "mount", "mount_setattr",
	"move_mount", "move_pages", "name_to_handle_at", "nfsservctl", "open_by_handle_at",
	"open_tree", "open_tree_attr", "perf_event_open", "pidfd_getfd", "pivot_root",
	"process_madvise", "process_vm_readv", "process_vm_writev", "ptrace", "query_module",
	"quotactl", "quotactl_fd", "reboot", "request_key", "set_mempolicy", "setdomainname",
	"sethostname", "setns", "settimeofday", "stime", "swapoff", "swapon", "syslog", "_sysctl",
	"sysfs", "umount", "umount2", "unshare", "uselib", "userfaultfd", "ustat", "vhangup",
	"afs_syscall", "tuxcall", "security", "vserver", "lsm_set_self_attr",
}

// reducedDenied fail with EPERM under the reduced privilege as well.
var reducedDenied = []string{
	"chroot", "mknod", "mknodat", "memfd_secret", "remap_file_pages",
	"msgget", "semget", "shmget",
}

// SeccompProfile is the seccomp profile of priv, as data (OCI format).
// Default allow; the listed syscalls fail with EPERM; clone with any
// namespace flag fails with EPERM; clone3 fails with ENOSYS so that libc
// falls back to clone, whose flags the filter can see; personality is
// limited to the harmless personas; socket families other than unix,
// inet, inet6 and netlink fail with EAFNOSUPPORT, and Multipath TCP
// sockets with EPROTONOSUPPORT. reduced also forbids chroot, mknod and
// System V IPC. elevated gets the same profile as same-as-user: its extra
// capabilities live in a user namespace.
//
// No privilege may give a file the set-user-ID or set-group-ID bit
// (chmod, open with O_CREAT, mknod: EPERM; openat2, whose mode the filter
// cannot see, fails with ENOSYS so that libc falls back to openat). A
// file in a write grant belongs on the host to the invoking user, root
// when sandboxed runs as root: a setuid copy of a shell there would be a
// root shell for anyone on the host who can reach the directory.
//
// The uid/gid-changing syscalls are not filtered: without capabilities
// every change except a no-op already fails with EPERM.
//
// The profile of a privilege is made once and shared by every spec of
// it, so that the backends' caches of what they make of a profile (its
// BPF program, its engine JSON), which know a profile by its pointer,
// serve every run: callers must not change it (WithSeccomp replaces it).
func SeccompProfile(priv privilege.Privilege) *specs.LinuxSeccomp {
	switch priv {
	case privilege.SameAsUser, privilege.Reduced, privilege.Elevated:
	default:
		return newSeccompProfile(priv)
	}
	profilesMu.Lock()
	defer profilesMu.Unlock()
	p, ok := profiles[priv]
	if !ok {
		p = newSeccompProfile(priv)
		profiles[priv] = p
	}
	return p
}

var (
	profilesMu sync.Mutex
	profiles   = map[privilege.Privilege]*specs.LinuxSeccomp{}
	// landlockProfiles are LandlockSeccompProfile's, made once each.
	landlockProfiles = map[landlockProfileKey]*specs.LinuxSeccomp{}
)

type landlockProfileKey struct {
	priv    privilege.Privilege
	network bool
}

// LandlockSeccompProfile is the profile of a landlock-tier run of priv,
// with network when the run has egress: SeccompProfile(priv) with the
// tier's rules first (landlock.SeccompRules: no sockets but TCP ones
// whose connect the init supervises, and those only with network; no
// IPC of the host, no chown or xattr changes). Like SeccompProfile's, it
// is made once per privilege and must not be changed.
func LandlockSeccompProfile(priv privilege.Privilege, network bool) *specs.LinuxSeccomp {
	base := SeccompProfile(priv)
	profilesMu.Lock()
	defer profilesMu.Unlock()
	k := landlockProfileKey{priv, network}
	p, ok := landlockProfiles[k]
	if !ok {
		p = landlock.WithSeccompRules(base, network)
		landlockProfiles[k] = p
	}
	return p
}

// newSeccompProfile makes the profile of priv (SeccompProfile).
func newSeccompProfile(priv privilege.Privilege) *specs.LinuxSeccomp {
	p := &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Architectures: []specs.Arch{specs.ArchX86_64, specs.ArchAARCH64},
	}
	eperm := func(names ...string) specs.LinuxSyscall {
		e := uint(errnoEPERM)
		return specs.LinuxSyscall{Names: names, Action: specs.ActErrno, ErrnoRet: &e}
	}
	allowIf := func(name string, args ...specs.LinuxSeccompArg) specs.LinuxSyscall {
		return specs.LinuxSyscall{Names: []string{name}, Action: specs.ActAllow, Args: args}
	}
	eq := func(i uint, v uint64) specs.LinuxSeccompArg {
		return specs.LinuxSeccompArg{Index: i, Value: v, Op: specs.OpEqualTo}
	}

	denied := append([]string(nil), deniedSyscalls...)
	if priv != privilege.SameAsUser && priv != privilege.Elevated {
		denied = append(denied, reducedDenied...)
	}
	p.Syscalls = append(p.Syscalls, eperm(denied...))

	// clone: one rule per namespace flag (each is "this bit is set").
	// Argument 0 holds the flags on x86_64 and arm64.
	for _, flag := range []uint64{cloneNewNS, cloneNewCgroup, cloneNewUTS, cloneNewIPC, cloneNewUser, cloneNewPID, cloneNewNet, cloneNewTime} {
		r := eperm("clone")
		r.Args = []specs.LinuxSeccompArg{{Index: 0, Value: flag, ValueTwo: flag, Op: specs.OpMaskedEqual}}
		p.Syscalls = append(p.Syscalls, r)
	}
	enosys := uint(errnoENOSYS)
	p.Syscalls = append(p.Syscalls, specs.LinuxSyscall{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys})

	// personality: PER_LINUX, PER_LINUX32, UNAME26 variants and the query.
	for _, v := range []uint64{0x0, 0x0008, 0x20000, 0x20008, 0xffffffff} {
		p.Syscalls = append(p.Syscalls, allowIf("personality", eq(0, v)))
	}
	p.Syscalls = append(p.Syscalls, eperm("personality"))

	for _, m := range modeArgs {
		for _, bit := range []uint64{modeSetUID, modeSetGID} {
			r := eperm(m.name)
			r.Args = []specs.LinuxSeccompArg{{Index: m.index, Value: bit, ValueTwo: bit, Op: specs.OpMaskedEqual}}
			p.Syscalls = append(p.Syscalls, r)
		}
	}
	p.Syscalls = append(p.Syscalls, specs.LinuxSyscall{Names: []string{"openat2"}, Action: specs.ActErrno, ErrnoRet: &enosys})

	{
		// Multipath TCP is refused whatever the family: Landlock's TCP
		// rules do not cover it, and Go since 1.24 asks for it by default
		// (and falls back to TCP when refused). The protocol argument is
		// an int: only its low 32 bits count. The container tier's
		// translation leaves refusals by argument to the engine, so there
		// (no Landlock, network none) Multipath TCP stays open.
		e := uint(errnoEPROTONOSUPPORT)
		p.Syscalls = append(p.Syscalls, specs.LinuxSyscall{Names: []string{"socket"}, Action: specs.ActErrno, ErrnoRet: &e,
			Args: []specs.LinuxSeccompArg{{Index: 2, Value: 0xffffffff, ValueTwo: ipprotoMPTCP, Op: specs.OpMaskedEqual}}})
	}
	{
		// Every privilege: AF_UNIX 1, AF_INET 2, AF_INET6 10, AF_NETLINK
		// 16 only. Other families are not all confined by the network
		// namespace (AF_VSOCK reaches the hypervisor and host services
		// past the egress proxy).
		for _, fam := range []uint64{1, 2, 10, 16} {
			p.Syscalls = append(p.Syscalls, allowIf("socket", eq(0, fam)))
		}
		e := uint(errnoEAFNOSUPPORT)
		p.Syscalls = append(p.Syscalls, specs.LinuxSyscall{Names: []string{"socket"}, Action: specs.ActErrno, ErrnoRet: &e})
	}
	return p
}
