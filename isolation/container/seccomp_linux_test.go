package container

import (
	"encoding/json"
	"errors"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	planner "github.com/sandboxed-dev/sandboxed/sandbox"
)

func TestSeccompProfileNarrowsTheEngineDefault(t *testing.T) {
	def, err := seccompProfile(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !allows(def, "ptrace") || !allows(def, "msgget") {
		t.Fatal("the engine's default profile should allow ptrace and msgget (the plan narrows them)")
	}

	reduced, err := seccompProfile(planner.SeccompProfile(privilege.Reduced), nil)
	if err != nil {
		t.Fatal(err)
	}
	if reduced.DefaultAction != specs.ActErrno {
		t.Errorf("default action %s: the result stays an allowlist", reduced.DefaultAction)
	}
	for _, n := range []string{"ptrace", "userfaultfd", "msgget", "semget", "shmget", "mknod", "io_uring_setup", "process_vm_readv"} {
		if allows(reduced, n) {
			t.Errorf("reduced profile allows %s", n)
		}
	}
	for _, n := range []string{"read", "execve", "clone", "wait4", "connect"} {
		if !allows(reduced, n) {
			t.Errorf("reduced profile refuses %s", n)
		}
	}
	// socket: the plan's families (unix, inet, inet6, netlink) only.
	fams := map[uint64]bool{}
	for _, r := range rulesFor(reduced, "socket") {
		if r.Action != specs.ActAllow || len(r.Args) != 1 || r.Args[0].Op != specs.OpEqualTo {
			t.Fatalf("socket rule %+v: want EQ family rules only", r)
		}
		fams[r.Args[0].Value] = true
	}
	if len(fams) != 4 || !fams[1] || !fams[2] || !fams[10] || !fams[16] {
		t.Errorf("socket families allowed %v", fams)
	}
	// clone keeps the engine's namespace-flag restriction; clone3 ENOSYS.
	for _, r := range rulesFor(reduced, "clone") {
		if r.Action == specs.ActAllow && len(r.Args) == 0 {
			t.Error("clone allowed with any flags")
		}
	}
	if c3 := rulesFor(reduced, "clone3"); len(c3) != 1 || c3[0].Action != specs.ActErrno || c3[0].ErrnoRet == nil || *c3[0].ErrnoRet != 38 {
		t.Errorf("clone3 rules %+v, want ENOSYS", c3)
	}

	same, err := seccompProfile(planner.SeccompProfile(privilege.SameAsUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	if allows(same, "ptrace") || !allows(same, "msgget") || len(rulesFor(same, "socket")) != 4 {
		t.Errorf("same-as-user: ptrace %v msgget %v socket %+v", allows(same, "ptrace"), allows(same, "msgget"), rulesFor(same, "socket"))
	}
}

func TestSeccompProfileKeepsThePlansErrno(t *testing.T) {
	e := uint(38)
	p, err := seccompProfile(&specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Syscalls:      []specs.LinuxSyscall{{Names: []string{"getcpu"}, Action: specs.ActErrno, ErrnoRet: &e}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rulesFor(p, "getcpu")
	if len(r) != 1 || r[0].Action != specs.ActErrno || *r[0].ErrnoRet != 38 {
		t.Errorf("getcpu rules %+v", r)
	}
}

func TestSeccompProfileRefusesAllowlists(t *testing.T) {
	_, err := seccompProfile(&specs.LinuxSeccomp{DefaultAction: specs.ActErrno}, nil)
	if !errors.Is(err, isolation.ErrUnsupported) {
		t.Errorf("allowlist plan profile: %v", err)
	}
}

func TestSeccompIntersection(t *testing.T) {
	engine := []specs.LinuxSyscall{{Names: []string{"x"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 40, Op: specs.OpNotEqual}, {Index: 1, Value: 7, Op: specs.OpLessThan}}}}
	plan := []specs.LinuxSyscall{
		{Names: []string{"x"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 2, Op: specs.OpEqualTo}}},
		{Names: []string{"x"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 40, Op: specs.OpEqualTo}}},
	}
	got := intersectAllows(engine, plan)
	if len(got) != 1 || len(got[0].Args) != 2 || got[0].Args[0].Value != 2 || got[0].Args[1].Index != 1 {
		t.Errorf("intersection %+v: want family 2 only, with the engine's condition on arg 1", got)
	}
	plan[0].Args[0].Op = specs.OpGreaterThan
	if got := intersectAllows(engine, plan); len(got) != 1 || got[0].Args[0].Op != specs.OpNotEqual {
		t.Errorf("non-EQ plan rules: %+v, want the engine's rules", got)
	}
}

func TestNodeProfile(t *testing.T) {
	b, err := NodeProfile()
	if err != nil {
		t.Fatal(err)
	}
	var prof specs.LinuxSeccomp
	if err := json.Unmarshal(b, &prof); err != nil {
		t.Fatalf("not an OCI seccomp profile: %v", err)
	}
	if prof.DefaultAction == specs.ActAllow {
		t.Fatalf("default action %s: want an allowlist", prof.DefaultAction)
	}
	allowed := map[string]bool{}
	for _, r := range prof.Syscalls {
		for _, n := range r.Names {
			if r.Action == specs.ActAllow && len(r.Args) == 0 {
				allowed[n] = true
			}
		}
	}
	// glibc's select under gVisor, and the Linux name elsewhere; nothing
	// that needs a capability.
	for _, n := range []string{"pselect6", "pselect", "read"} {
		if !allowed[n] {
			t.Errorf("%s not allowed", n)
		}
	}
	for _, n := range []string{"mount", "bpf", "unshare", "setns"} {
		if allowed[n] {
			t.Errorf("%s allowed without capabilities", n)
		}
	}
}
