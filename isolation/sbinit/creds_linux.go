package sbinit

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/isolation/seccomp"
)

// capNames maps capability names to numbers (linux/capability.h).
var capNames = map[string]uintptr{
	"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_FOWNER": 3,
	"CAP_FSETID": 4, "CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8,
	"CAP_LINUX_IMMUTABLE": 9, "CAP_NET_BIND_SERVICE": 10, "CAP_NET_BROADCAST": 11,
	"CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13, "CAP_IPC_LOCK": 14, "CAP_IPC_OWNER": 15,
	"CAP_SYS_MODULE": 16, "CAP_SYS_RAWIO": 17, "CAP_SYS_CHROOT": 18, "CAP_SYS_PTRACE": 19,
	"CAP_SYS_PACCT": 20, "CAP_SYS_ADMIN": 21, "CAP_SYS_BOOT": 22, "CAP_SYS_NICE": 23,
	"CAP_SYS_RESOURCE": 24, "CAP_SYS_TIME": 25, "CAP_SYS_TTY_CONFIG": 26, "CAP_MKNOD": 27,
	"CAP_LEASE": 28, "CAP_AUDIT_WRITE": 29, "CAP_AUDIT_CONTROL": 30, "CAP_SETFCAP": 31,
	"CAP_MAC_OVERRIDE": 32, "CAP_MAC_ADMIN": 33, "CAP_SYSLOG": 34, "CAP_WAKE_ALARM": 35,
	"CAP_BLOCK_SUSPEND": 36, "CAP_AUDIT_READ": 37, "CAP_PERFMON": 38, "CAP_BPF": 39,
	"CAP_CHECKPOINT_RESTORE": 40,
}

// rlimitNames maps OCI rlimit names to resources.
var rlimitNames = map[string]int{
	"RLIMIT_AS": unix.RLIMIT_AS, "RLIMIT_CORE": unix.RLIMIT_CORE, "RLIMIT_CPU": unix.RLIMIT_CPU,
	"RLIMIT_DATA": unix.RLIMIT_DATA, "RLIMIT_FSIZE": unix.RLIMIT_FSIZE, "RLIMIT_LOCKS": unix.RLIMIT_LOCKS,
	"RLIMIT_MEMLOCK": unix.RLIMIT_MEMLOCK, "RLIMIT_MSGQUEUE": unix.RLIMIT_MSGQUEUE,
	"RLIMIT_NICE": unix.RLIMIT_NICE, "RLIMIT_NOFILE": unix.RLIMIT_NOFILE, "RLIMIT_NPROC": unix.RLIMIT_NPROC,
	"RLIMIT_RSS": unix.RLIMIT_RSS, "RLIMIT_RTPRIO": unix.RLIMIT_RTPRIO, "RLIMIT_RTTIME": unix.RLIMIT_RTTIME,
	"RLIMIT_SIGPENDING": unix.RLIMIT_SIGPENDING, "RLIMIT_STACK": unix.RLIMIT_STACK,
}

func capMask(names []string) (uint64, error) {
	var m uint64
	for _, n := range names {
		c, ok := capNames[strings.ToUpper(n)]
		if !ok {
			return 0, fmt.Errorf("unknown capability %q", n)
		}
		m |= 1 << c
	}
	return m, nil
}

func lastCap() uintptr {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 && n < 64 {
			return uintptr(n)
		}
	}
	return 40
}

// thisThread runs a per-thread syscall on the calling (locked) thread,
// from which every command is forked.
func thisThread(trap, a1, a2, a3 uintptr) error {
	if _, _, e := unix.RawSyscall(trap, a1, a2, a3); e != 0 {
		return e
	}
	return nil
}

// allThreads runs a per-thread syscall on every thread when the runtime
// allows it (no cgo), and at least on the calling (locked) thread. Each
// call stops the world, so it is kept for what matters to the init's
// other threads: their capability sets.
func allThreads(trap, a1, a2, a3 uintptr) error {
	if _, _, e := syscall.AllThreadsSyscall(trap, a1, a2, a3); e == 0 {
		return nil
	} else if e != syscall.ENOTSUP {
		return e
	}
	if _, _, e := unix.RawSyscall(trap, a1, a2, a3); e != 0 {
		return e
	}
	return nil
}

// dropPrivileges switches the init, and so every command it forks, to the
// spec's process credentials. Order matters: the bounding set needs
// CAP_SETPCAP (gone after setuid to non-root); the seccomp filter comes
// last because it forbids what the earlier steps use.
func dropPrivileges(spec *specs.Spec) error {
	p := spec.Process
	if p == nil {
		return fmt.Errorf("drop privileges: spec has no process")
	}
	// Compile before anything is dropped, so a bad profile fails setup
	// before it changed anything.
	var prog []bpf.RawInstruction
	if spec.Linux != nil && spec.Linux.Seccomp != nil {
		var err error
		if prog, err = seccomp.Compile(spec.Linux.Seccomp); err != nil {
			return err
		}
	}
	for _, rl := range p.Rlimits {
		res, ok := rlimitNames[rl.Type]
		if !ok {
			return fmt.Errorf("set rlimit: unknown %q", rl.Type)
		}
		lim := unix.Rlimit{Cur: rl.Soft, Max: rl.Hard}
		if err := unix.Setrlimit(res, &lim); err != nil {
			return fmt.Errorf("set rlimit %s: %w", rl.Type, err)
		}
	}
	var caps specs.LinuxCapabilities
	if p.Capabilities != nil {
		caps = *p.Capabilities
	}
	bounding, err := capMask(caps.Bounding)
	if err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	for c := uintptr(0); c <= lastCap(); c++ {
		if bounding&(1<<c) != 0 {
			continue
		}
		// The bounding set only matters to the thread that forks commands;
		// the other threads lose every capability below.
		if err := thisThread(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	// Setting a non-zero uid clears the permitted and effective sets;
	// with uid 0 (root, or root of a user namespace) the capset below sets
	// them exactly.
	gids := make([]int, 0, len(p.User.AdditionalGids))
	for _, g := range p.User.AdditionalGids {
		gids = append(gids, int(g))
	}
	if err := syscall.Setgroups(gids); err != nil {
		return fmt.Errorf("set supplementary groups: %w", err)
	}
	if err := syscall.Setresgid(int(p.User.GID), int(p.User.GID), int(p.User.GID)); err != nil {
		return fmt.Errorf("set gid %d: %w", p.User.GID, err)
	}
	if err := syscall.Setresuid(int(p.User.UID), int(p.User.UID), int(p.User.UID)); err != nil {
		return fmt.Errorf("set uid %d: %w", p.User.UID, err)
	}
	eff, err := capMask(caps.Effective)
	if err != nil {
		return fmt.Errorf("set capabilities: %w", err)
	}
	perm, err := capMask(caps.Permitted)
	if err != nil {
		return fmt.Errorf("set capabilities: %w", err)
	}
	inh, err := capMask(caps.Inheritable)
	if err != nil {
		return fmt.Errorf("set capabilities: %w", err)
	}
	if err := capset(eff, perm, inh); err != nil {
		return err
	}
	if err := thisThread(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	if p.NoNewPrivileges || prog != nil {
		// Set here; the seccomp filter's TSYNC sets it on every thread.
		if err := thisThread(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); err != nil {
			return fmt.Errorf("set no_new_privs: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("clear dumpable: %w", err)
	}
	if prog != nil {
		if err := seccomp.Load(prog); err != nil {
			return err
		}
	}
	return nil
}

func capset(eff, perm, inh uint64) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{
		{Effective: uint32(eff), Permitted: uint32(perm), Inheritable: uint32(inh)},
		{Effective: uint32(eff >> 32), Permitted: uint32(perm >> 32), Inheritable: uint32(inh >> 32)},
	}
	if err := allThreads(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); err != nil {
		return fmt.Errorf("set capabilities: %w", err)
	}
	return nil
}
