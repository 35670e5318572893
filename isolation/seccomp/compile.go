package seccomp

import (
	"fmt"
	"math/bits"

	libseccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"
)

// Kernel constants, spelled out so this file builds on every OS.
const (
	retErrno = 0x00050000 // SECCOMP_RET_ERRNO
	eperm    = 1
	enosys   = 38
	archOff  = 4 // offsetof(struct seccomp_data, arch)
)

// Compile turns p into a BPF program for the native architecture. The
// program begins with an architecture guard: any other audit arch gets
// ENOSYS.
func Compile(p *specs.LinuxSeccomp) ([]bpf.RawInstruction, error) {
	if p == nil {
		return nil, fmt.Errorf("compile seccomp profile: no profile: %w", ErrInvalid)
	}
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("compile seccomp profile: %v: %w", err, ErrUnsupported)
	}
	def, err := action(p.DefaultAction, p.DefaultErrnoRet)
	if err != nil {
		return nil, fmt.Errorf("compile seccomp profile: default action: %w", err)
	}
	policy := libseccomp.Policy{DefaultAction: libseccomp.ActionAllow}
	for i, rule := range p.Syscalls {
		g, err := group(info, rule)
		if err != nil {
			return nil, fmt.Errorf("compile seccomp profile: rule %d (%v): %w", i, rule.Names, err)
		}
		if g != nil {
			policy.Syscalls = append(policy.Syscalls, *g)
		}
	}
	if len(policy.Syscalls) == 0 {
		// The library wants at least one group; this one never matches.
		policy.Syscalls = []libseccomp.SyscallGroup{{
			NamesWithCondtions: []libseccomp.NameWithConditions{{
				Name:       "getpid",
				Conditions: libseccomp.ArgumentConditions{{Argument: 0, Operation: libseccomp.Equal, Value: 1}},
			}},
			Action: libseccomp.ActionAllow,
		}}
	}
	insts, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("compile seccomp profile: %v: %w", err, ErrInvalid)
	}
	// The library returns the default action on the last instruction (and
	// on a foreign arch); make it ours.
	if n := len(insts); n > 0 {
		if r, ok := insts[n-1].(bpf.RetConstant); ok && r.Val == uint32(libseccomp.ActionAllow) {
			insts[n-1] = bpf.RetConstant{Val: uint32(def)}
		}
	}
	guard := []bpf.Instruction{
		bpf.LoadAbsolute{Off: archOff, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: retErrno | enosys},
	}
	raw, err := bpf.Assemble(append(guard, insts...))
	if err != nil {
		return nil, fmt.Errorf("assemble seccomp program: %w", err)
	}
	if len(raw) > 4096 {
		return nil, fmt.Errorf("compile seccomp profile: %d instructions, the kernel takes 4096: %w", len(raw), ErrUnsupported)
	}
	return raw, nil
}

func action(a specs.LinuxSeccompAction, errno *uint) (libseccomp.Action, error) {
	switch a {
	case specs.ActAllow:
		return libseccomp.ActionAllow, nil
	case specs.ActErrno:
		e := uint32(eperm)
		if errno != nil {
			e = uint32(*errno)
		}
		if e == 0 || e > 0xffff {
			return 0, fmt.Errorf("errno %d: %w", e, ErrInvalid)
		}
		return libseccomp.Action(retErrno | e), nil
	case specs.ActKill, specs.ActKillThread:
		return libseccomp.ActionKillThread, nil
	case specs.ActKillProcess:
		return libseccomp.ActionKillProcess, nil
	case specs.ActTrap:
		return libseccomp.ActionTrap, nil
	case specs.ActLog:
		return libseccomp.ActionLog, nil
	}
	return 0, fmt.Errorf("action %q: %w", a, ErrUnsupported)
}

func group(info *arch.Info, rule specs.LinuxSyscall) (*libseccomp.SyscallGroup, error) {
	act, err := action(rule.Action, rule.ErrnoRet)
	if err != nil {
		return nil, err
	}
	conds, err := conditions(rule.Args)
	if err != nil {
		return nil, err
	}
	g := &libseccomp.SyscallGroup{Action: act}
	seen := map[string]bool{}
	for _, name := range rule.Names {
		if _, ok := info.SyscallNames[name]; !ok || seen[name] {
			continue // another architecture's syscall, or repeated
		}
		seen[name] = true
		if len(conds) == 0 {
			g.Names = append(g.Names, name)
		} else {
			g.NamesWithCondtions = append(g.NamesWithCondtions, libseccomp.NameWithConditions{Name: name, Conditions: conds})
		}
	}
	if len(g.Names)+len(g.NamesWithCondtions) == 0 {
		return nil, nil
	}
	return g, nil
}

func conditions(args []specs.LinuxSeccompArg) (libseccomp.ArgumentConditions, error) {
	var out libseccomp.ArgumentConditions
	for _, a := range args {
		if a.Index > 5 {
			return nil, fmt.Errorf("argument index %d: %w", a.Index, ErrInvalid)
		}
		c := libseccomp.Condition{Argument: uint32(a.Index), Value: a.Value}
		switch a.Op {
		case specs.OpEqualTo:
			c.Operation = libseccomp.Equal
		case specs.OpNotEqual:
			c.Operation = libseccomp.NotEqual
		case specs.OpLessThan:
			c.Operation = libseccomp.LessThan
		case specs.OpLessEqual:
			c.Operation = libseccomp.LessOrEqual
		case specs.OpGreaterThan:
			c.Operation = libseccomp.GreaterThan
		case specs.OpGreaterEqual:
			c.Operation = libseccomp.GreaterOrEqual
		case specs.OpMaskedEqual:
			switch {
			case a.ValueTwo == 0:
				c.Operation = libseccomp.BitsNotSet
			case a.ValueTwo == a.Value && bits.OnesCount64(a.Value) == 1:
				c.Operation = libseccomp.BitsSet
			default:
				return nil, fmt.Errorf("masked-equal with mask %#x and value %#x: %w", a.Value, a.ValueTwo, ErrUnsupported)
			}
		default:
			return nil, fmt.Errorf("operator %q: %w", a.Op, ErrUnsupported)
		}
		out = append(out, c)
	}
	return out, nil
}
