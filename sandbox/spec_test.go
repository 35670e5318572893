package sandbox

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/internal/testenv"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/seccomp"
)

func TestDefaultSpecIsClosed(t *testing.T) {
	for _, priv := range []privilege.Privilege{privilege.SameAsUser, privilege.Reduced, privilege.Elevated, "bogus"} {
		s := DefaultSpec("run-1", priv)
		if !s.Root.Readonly || !s.Process.NoNewPrivileges {
			t.Errorf("%s: root rw or no_new_privs off", priv)
		}
		if s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction != specs.ActAllow || len(s.Linux.Seccomp.Syscalls) == 0 {
			t.Errorf("%s: no seccomp profile", priv)
		}
		ns := map[specs.LinuxNamespaceType]bool{}
		for _, n := range s.Linux.Namespaces {
			ns[n.Type] = true
		}
		for _, want := range []specs.LinuxNamespaceType{specs.PIDNamespace, specs.NetworkNamespace, specs.IPCNamespace, specs.UTSNamespace, specs.MountNamespace, specs.CgroupNamespace} {
			if !ns[want] {
				t.Errorf("%s: namespace %s missing", priv, want)
			}
		}
		if got := ns[specs.UserNamespace]; got != (priv == privilege.Elevated) {
			t.Errorf("%s: user namespace = %v", priv, got)
		}
		caps := s.Process.Capabilities
		if priv == privilege.Elevated {
			if !reflect.DeepEqual(caps.Bounding, DockerDefaultCaps) || s.Process.User.UID != 0 {
				t.Errorf("elevated: caps %v uid %d", caps.Bounding, s.Process.User.UID)
			}
		} else if len(caps.Bounding)+len(caps.Effective)+len(caps.Permitted)+len(caps.Inheritable)+len(caps.Ambient) != 0 {
			t.Errorf("%s: has capabilities %+v", priv, caps)
		}
		if priv == privilege.Reduced && (s.Process.User.UID != privilege.NobodyID || s.Process.User.GID != privilege.NobodyID) {
			t.Errorf("reduced: user %+v", s.Process.User)
		}
		if s.Annotations[isolation.AnnotationRunID] != "run-1" || s.Linux.CgroupsPath != "/sandboxed/run-1" {
			t.Errorf("%s: run id not recorded", priv)
		}
		nofile := false
		for _, r := range s.Process.Rlimits {
			nofile = nofile || r.Type == "RLIMIT_NOFILE" && r.Hard == DefaultNoFile
		}
		if !nofile {
			t.Errorf("%s: no NOFILE limit", priv)
		}
		for _, p := range []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/scsi", "/proc/acpi", "/sys/firmware"} {
			if !contains(s.Linux.MaskedPaths, p) {
				t.Errorf("%s: %s not masked", priv, p)
			}
		}
		for _, p := range []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"} {
			if !contains(s.Linux.ReadonlyPaths, p) {
				t.Errorf("%s: %s not read-only", priv, p)
			}
		}
		for _, m := range s.Mounts {
			if m.Type == "bind" {
				t.Errorf("%s: default spec binds %s", priv, m.Source)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestSpecOpts(t *testing.T) {
	cases := []struct {
		name  string
		opts  []SpecOpt
		check func(*specs.Spec) bool
		err   bool
	}{
		{"memory sets swap equal", []SpecOpt{WithMemory(1 << 20)}, func(s *specs.Spec) bool {
			m := s.Linux.Resources.Memory
			return *m.Limit == 1<<20 && *m.Swap == 1<<20
		}, false},
		{"memory zero", []SpecOpt{WithMemory(0)}, nil, true},
		{"pids", []SpecOpt{WithPids(32)}, func(s *specs.Spec) bool { return *s.Linux.Resources.Pids.Limit == 32 }, false},
		{"pids negative", []SpecOpt{WithPids(-1)}, nil, true},
		{"cpus", []SpecOpt{WithCPUs(1.5)}, func(s *specs.Spec) bool {
			c := s.Linux.Resources.CPU
			return *c.Quota == 150000 && *c.Period == 100000
		}, false},
		{"cpus zero", []SpecOpt{WithCPUs(0)}, nil, true},
		{"tmpfs", []SpecOpt{WithTmpfs(1 << 20)}, func(s *specs.Spec) bool {
			for _, m := range s.Mounts {
				if m.Destination == "/tmp" {
					n := 0
					for _, o := range m.Options {
						if len(o) > 5 && o[:5] == "size=" {
							n++
							if o != "size=1048576" {
								return false
							}
						}
					}
					return n == 1
				}
			}
			return false
		}, false},
		{"read bind", []SpecOpt{WithReadBind("/data/in", "/work/in")}, func(s *specs.Spec) bool {
			m := s.Mounts[len(s.Mounts)-1]
			return m.Type == "bind" && m.Source == "/data/in" && m.Destination == "/work/in" && contains(m.Options, "ro") && contains(m.Options, "nosuid")
		}, false},
		{"write bind", []SpecOpt{WithWriteBind("/data/out", "/work/out")}, func(s *specs.Spec) bool {
			m := s.Mounts[len(s.Mounts)-1]
			return contains(m.Options, "rw") && !contains(m.Options, "ro")
		}, false},
		{"later bind replaces", []SpecOpt{WithReadBind("/a", "/w"), WithWriteBind("/b", "/w")}, func(s *specs.Spec) bool {
			n := 0
			for _, m := range s.Mounts {
				if m.Destination == "/w" {
					n++
				}
			}
			return n == 1 && s.Mounts[len(s.Mounts)-1].Source == "/b"
		}, false},
		{"relative bind", []SpecOpt{WithReadBind("data", "/w")}, nil, true},
		{"unclean bind", []SpecOpt{WithReadBind("/a/../etc", "/w")}, nil, true},
		{"bind over root", []SpecOpt{WithReadBind("/a", "/")}, nil, true},
		{"user", []SpecOpt{WithUser(1000, 100)}, func(s *specs.Spec) bool { return s.Process.User.UID == 1000 && s.Process.User.GID == 100 }, false},
		{"env", []SpecOpt{WithEnv([]string{"PATH=/bin", "A=b=c"})}, func(s *specs.Spec) bool { return len(s.Process.Env) == 2 }, false},
		{"env bad", []SpecOpt{WithEnv([]string{"NOEQUALS"})}, nil, true},
		{"cwd", []SpecOpt{WithCwd("/work/")}, func(s *specs.Spec) bool { return s.Process.Cwd == "/work" }, false},
		{"cwd relative", []SpecOpt{WithCwd("work")}, nil, true},
		{"elevated", []SpecOpt{WithElevated(), WithElevated()}, func(s *specs.Spec) bool {
			n := 0
			for _, ns := range s.Linux.Namespaces {
				if ns.Type == specs.UserNamespace {
					n++
				}
			}
			return n == 1 && len(s.Process.Capabilities.Effective) == len(DockerDefaultCaps)
		}, false},
		{"seccomp nil", []SpecOpt{WithSeccomp(nil)}, nil, true},
		{"hostname", []SpecOpt{WithHostname("box")}, func(s *specs.Spec) bool { return s.Hostname == "box" }, false},
		{"hostname bad", []SpecOpt{WithHostname("a b")}, nil, true},
		{"annotation", []SpecOpt{WithAnnotation(isolation.AnnotationTool, "t")}, func(s *specs.Spec) bool { return s.Annotations[isolation.AnnotationTool] == "t" }, false},
	}
	for _, c := range cases {
		s, err := NewSpec("r", privilege.SameAsUser, c.opts...)
		if c.err {
			if !errors.Is(err, ErrSpec) {
				t.Errorf("%s: err = %v, want ErrSpec", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !c.check(s) {
			t.Errorf("%s: spec not as expected", c.name)
		}
	}
	// Options must not share state between specs.
	a := DefaultSpec("a", privilege.Reduced)
	a.Linux.MaskedPaths[0] = "changed"
	if DefaultSpec("b", privilege.Reduced).Linux.MaskedPaths[0] == "changed" {
		t.Error("default specs share slices")
	}
}

// runFilter runs prog on a synthetic seccomp_data (see the seccomp
// package's tests for the byte order).
func runFilter(t *testing.T, prog []bpf.RawInstruction, auditArch uint32, nr int, args ...uint64) uint32 {
	t.Helper()
	insts, _ := bpf.Disassemble(prog)
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 64)
	word := func(off int, v uint32) { binary.BigEndian.PutUint32(data[off:], v) }
	word(0, uint32(nr))
	word(4, auditArch)
	little := binary.NativeEndian.Uint16([]byte{1, 0}) == 1
	for i, a := range args {
		lo, hi := uint32(a), uint32(a>>32)
		if !little {
			lo, hi = hi, lo
		}
		word(16+8*i, lo)
		word(20+8*i, hi)
	}
	ret, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(ret)
}

func TestSeccompProfiles(t *testing.T) {
	info, err := arch.GetInfo("")
	testenv.Need(t, "a seccomp architecture table for this machine", err)
	nr := func(n string) int {
		v, ok := info.SyscallNames[n]
		if !ok {
			t.Fatalf("no syscall %s", n)
		}
		return v
	}
	const allow, eperm, enosys, eafnosupport = 0x7fff0000, 0x50000 | 1, 0x50000 | 38, 0x50000 | 97
	for _, priv := range []privilege.Privilege{privilege.SameAsUser, privilege.Reduced, privilege.Elevated} {
		prog, err := seccomp.Compile(SeccompProfile(priv))
		if err != nil {
			t.Fatalf("%s: %v", priv, err)
		}
		run := func(name string, args ...uint64) uint32 {
			return runFilter(t, prog, uint32(info.ID), nr(name), args...)
		}
		for _, name := range []string{"mount", "umount2", "pivot_root", "ptrace", "kexec_load", "bpf", "keyctl", "add_key",
			"perf_event_open", "userfaultfd", "open_by_handle_at", "init_module", "finit_module", "delete_module", "reboot",
			"swapon", "setns", "unshare", "io_uring_setup", "acct", "settimeofday", "clock_settime", "sethostname", "iopl",
			"name_to_handle_at", "syslog", "fsopen", "fsmount", "move_mount", "open_tree", "process_vm_readv", "kcmp"} {
			if got := run(name); got != eperm {
				t.Errorf("%s: %s = %#x, want EPERM", priv, name, got)
			}
		}
		for _, name := range []string{"read", "write", "openat", "execve", "wait4", "socket" /* AF_UNIX below */, "seccomp", "setuid"} {
			if got := run(name, 1); got != allow {
				t.Errorf("%s: %s = %#x, want allow", priv, name, got)
			}
		}
		if got := run("clone", 0x01200011); got != allow {
			t.Errorf("%s: fork-like clone = %#x", priv, got)
		}
		for _, flag := range []uint64{0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x80} {
			if got := run("clone", 0x11|flag); got != eperm {
				t.Errorf("%s: clone with %#x = %#x, want EPERM", priv, flag, got)
			}
		}
		if got := run("clone3"); got != enosys {
			t.Errorf("%s: clone3 = %#x", priv, got)
		}
		if got := run("personality", 0xffffffff); got != allow {
			t.Errorf("%s: personality query = %#x", priv, got)
		}
		if got := run("personality", 0x0040000); got != eperm {
			t.Errorf("%s: personality ADDR_NO_RANDOMIZE = %#x", priv, got)
		}
		wantChroot := uint32(allow)
		if priv == privilege.Reduced {
			wantChroot = eperm
		}
		// Socket families are narrowed for every privilege.
		for _, fam := range []uint64{17, 40} { // AF_PACKET, AF_VSOCK
			if got := run("socket", fam); got != eafnosupport {
				t.Errorf("%s: socket(%d) = %#x, want EAFNOSUPPORT", priv, fam, got)
			}
		}
		if got := run("socket", 2); got != allow {
			t.Errorf("%s: socket(AF_INET) = %#x, want allow", priv, got)
		}
		// Multipath TCP escapes Landlock's TCP rules: refused in every
		// family, whatever the high bits of the int argument hold.
		for _, args := range [][]uint64{{2, 1, 262}, {10, 1, 262}, {2, 1, 1<<32 | 262}, {2, 0x80801, 262}} {
			if got := run("socket", args...); got != 0x50000|93 {
				t.Errorf("%s: socket%v = %#x, want EPROTONOSUPPORT", priv, args, got)
			}
		}
		if got := run("socket", 2, 1, 6); got != allow {
			t.Errorf("%s: socket(AF_INET, SOCK_STREAM, IPPROTO_TCP) = %#x, want allow", priv, got)
		}
		// No set-user-ID or set-group-ID bit, by any call that sets a mode.
		for _, c := range []struct {
			name string
			args []uint64
		}{
			{"chmod", []uint64{0, 0o4755}}, {"chmod", []uint64{0, 0o2755}}, {"fchmod", []uint64{3, 0o6755}},
			{"fchmodat", []uint64{0, 0, 0o4700}}, {"openat", []uint64{0, 0, 0x41, 0o4755}}, {"creat", []uint64{0, 0o2755}},
		} {
			if got := run(c.name, c.args...); got != eperm {
				t.Errorf("%s: %s%o = %#x, want EPERM", priv, c.name, c.args, got)
			}
		}
		for _, c := range []struct {
			name string
			args []uint64
		}{{"chmod", []uint64{0, 0o755}}, {"fchmodat", []uint64{0, 0, 0o1777}}, {"openat", []uint64{0, 0, 0x41, 0o644}}} {
			if got := run(c.name, c.args...); got != allow {
				t.Errorf("%s: %s%o = %#x, want allow", priv, c.name, c.args, got)
			}
		}
		if got := run("openat2"); got != enosys {
			t.Errorf("%s: openat2 = %#x, want ENOSYS", priv, got)
		}
		if got := run("chroot"); got != wantChroot {
			t.Errorf("%s: chroot = %#x, want %#x", priv, got, wantChroot)
		}
		for _, fam := range []uint64{1, 2, 10, 16} {
			if got := run("socket", fam); got != allow {
				t.Errorf("%s: socket(%d) = %#x", priv, fam, got)
			}
		}
	}
}

// TestSeccompProfileShared: every spec of a privilege holds the same
// profile, which the backends' compiled-program caches know by pointer.
func TestSeccompProfileShared(t *testing.T) {
	for _, priv := range []privilege.Privilege{privilege.SameAsUser, privilege.Reduced, privilege.Elevated} {
		a, err := NewSpec("run-a", priv)
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewSpec("run-b", priv)
		if err != nil {
			t.Fatal(err)
		}
		if a.Linux.Seccomp != b.Linux.Seccomp || a.Linux.Seccomp != SeccompProfile(priv) {
			t.Errorf("%s: two specs hold different seccomp profiles", priv)
		}
	}
}
