package sbinit

import (
	"errors"
	"reflect"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/seccomp"
)

func TestNewSetup(t *testing.T) {
	spec := &specs.Spec{
		Hostname: "box",
		Process: &specs.Process{
			User:            specs.User{UID: 1000, GID: 100, AdditionalGids: []uint32{5}},
			Cwd:             "/work",
			NoNewPrivileges: true,
			Capabilities:    &specs.LinuxCapabilities{Bounding: []string{"CAP_CHOWN", "cap_kill"}, Effective: []string{"CAP_CHOWN"}},
			Rlimits:         []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: 1024, Hard: 2048}},
		},
		Mounts: append(isolation.SkeletonMounts(1<<20), []specs.Mount{
			{Destination: "/work/in/", Type: "bind", Source: "/data/in", Options: []string{"bind", "ro"}},
			{Destination: "/work/out", Source: "/data/out", Options: []string{"rbind", "rw", "noexec"}},
			{Destination: "/cache", Type: "tmpfs", Options: []string{"size=4096", "mode=0700", "nosuid", "ro"}},
		}...),
		Linux: &specs.Linux{
			MaskedPaths:   []string{"/proc/kcore"},
			ReadonlyPaths: []string{"/proc/sys"},
			Seccomp: &specs.LinuxSeccomp{DefaultAction: specs.ActAllow, Syscalls: []specs.LinuxSyscall{
				{Names: []string{"mount"}, Action: specs.ActErrno},
			}},
		},
	}
	s, err := NewSetup(spec, seccomp.Compile)
	if err != nil {
		t.Fatal(err)
	}
	if s.Hostname != "box" || s.Cwd != "/work" || s.UID != 1000 || s.GID != 100 || !reflect.DeepEqual(s.Groups, []uint32{5}) || !s.NoNewPrivs {
		t.Errorf("identity: %+v", s)
	}
	if s.Bounding != 1<<0|1<<5 || s.Effective != 1 || s.Permitted != 0 {
		t.Errorf("caps: %#x %#x %#x", s.Bounding, s.Effective, s.Permitted)
	}
	if !reflect.DeepEqual(s.Rlimits, []Rlimit{{Resource: 7, Soft: 1024, Hard: 2048}}) {
		t.Errorf("rlimits: %+v", s.Rlimits)
	}
	want := []Mount{
		{Source: "/data/in", Destination: "/work/in", ReadOnly: true},
		{Source: "/data/out", Destination: "/work/out", NoExec: true},
		{Destination: "/cache", ReadOnly: true, Data: "size=4096,mode=0700"},
	}
	if !reflect.DeepEqual(s.Mounts, want) {
		t.Errorf("mounts:\n got %+v\nwant %+v", s.Mounts, want)
	}
	prog, err := decodeBPF(s.Seccomp)
	if err != nil || len(prog) < 5 {
		t.Fatalf("seccomp: %d instructions, %v", len(prog), err)
	}
	if _, ok := bpf.Disassemble(prog); !ok {
		t.Error("seccomp program does not disassemble")
	}
	if !reflect.DeepEqual(encodeBPF(prog), s.Seccomp) {
		t.Error("BPF encoding does not round-trip")
	}
}

func TestNewSetupRejects(t *testing.T) {
	base := func() *specs.Spec {
		return &specs.Spec{Process: &specs.Process{}, Linux: &specs.Linux{}}
	}
	cases := map[string]func(*specs.Spec){
		"unknown cap":      func(s *specs.Spec) { s.Process.Capabilities = &specs.LinuxCapabilities{Bounding: []string{"CAP_NOPE"}} },
		"ambient caps":     func(s *specs.Spec) { s.Process.Capabilities = &specs.LinuxCapabilities{Ambient: []string{"CAP_CHOWN"}} },
		"unknown rlimit":   func(s *specs.Spec) { s.Process.Rlimits = []specs.POSIXRlimit{{Type: "RLIMIT_NOPE"}} },
		"relative dest":    func(s *specs.Spec) { s.Mounts = []specs.Mount{{Destination: "work", Type: "tmpfs"}} },
		"root dest":        func(s *specs.Spec) { s.Mounts = []specs.Mount{{Destination: "/", Type: "tmpfs"}} },
		"relative source":  func(s *specs.Spec) { s.Mounts = []specs.Mount{{Destination: "/w", Type: "bind", Source: "data"}} },
		"unclean source":   func(s *specs.Spec) { s.Mounts = []specs.Mount{{Destination: "/w", Type: "bind", Source: "/a/../b"}} },
		"unsupported type": func(s *specs.Spec) { s.Mounts = []specs.Mount{{Destination: "/w", Type: "nfs"}} },
		"bind below /proc": func(s *specs.Spec) {
			s.Mounts = []specs.Mount{{Destination: "/proc/kcore", Type: "bind", Source: "/data"}}
		},
		"tmpfs below /proc": func(s *specs.Spec) {
			s.Mounts = []specs.Mount{{Destination: "/proc/sys/x/..", Type: "tmpfs"}}
		},
		"tmp of no size": func(s *specs.Spec) { s.Mounts = []specs.Mount{{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs"}} },
		"proc with exec": func(s *specs.Spec) {
			s.Mounts = []specs.Mount{{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid"}}}
		},
		"writable dev": func(s *specs.Spec) {
			s.Mounts = []specs.Mount{{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "noexec", "mode=755"}}}
		},
		"mqueue": func(s *specs.Spec) {
			s.Mounts = []specs.Mount{{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue"}}
		},
		"bad seccomp": func(s *specs.Spec) { s.Linux.Seccomp = &specs.LinuxSeccomp{DefaultAction: "SCMP_ACT_NOPE"} },
	}
	for name, mutate := range cases {
		s := base()
		mutate(s)
		if _, err := NewSetup(s, seccomp.Compile); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := NewSetup(&specs.Spec{}, seccomp.Compile); !errors.Is(err, ErrSetup) {
		t.Errorf("no process: %v", err)
	}
}
