package seccomp

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"
)

// CompileList is the compiler as it was before the binary search: a
// straight list of rules, each reloading the syscall number. The tests
// hold the search to its answers.
func CompileList(p *specs.LinuxSeccomp) ([]bpf.RawInstruction, error) {
	info, def, a, err := begin(p)
	if err != nil {
		return nil, err
	}

	for i, rule := range p.Syscalls {
		act, err := action(rule.Action, rule.ErrnoRet)
		if err != nil {
			return nil, fmt.Errorf("compile seccomp profile: rule %d (%v): %w", i, rule.Names, err)
		}
		nrs := numbers(info, rule.Names)
		if len(nrs) == 0 {
			continue
		}
		if len(rule.Args) == 0 {
			// Unconditional: one load, a run of compares, one return.
			for start := 0; start < len(nrs); start += 100 {
				chunk := nrs[start:min(start+100, len(nrs))]
				match, next := a.fresh("match"), a.fresh("next")
				a.emit(bpf.LoadAbsolute{Off: offNr, Size: 4})
				for _, nr := range chunk {
					a.jump(bpf.JumpEqual, nr, match, "")
				}
				a.emit(bpf.Jump{Skip: 1})
				a.label(match)
				a.emit(bpf.RetConstant{Val: act})
				a.label(next)
			}
			continue
		}
		for _, nr := range nrs {
			end := a.fresh("end")
			a.emit(bpf.LoadAbsolute{Off: offNr, Size: 4})
			a.jump(bpf.JumpEqual, nr, "", end)
			for _, c := range rule.Args {
				if err := a.cond(c, end); err != nil {
					return nil, fmt.Errorf("compile seccomp profile: rule %d (%v): %w", i, rule.Names, err)
				}
			}
			a.emit(bpf.RetConstant{Val: act})
			a.label(end)
		}
	}
	a.emit(bpf.RetConstant{Val: def})

	insts, err := a.resolve()
	if err != nil {
		return nil, fmt.Errorf("compile seccomp profile: %w", err)
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("assemble seccomp program: %w", err)
	}
	if len(raw) > 4096 {
		return nil, fmt.Errorf("compile seccomp profile: %d instructions, the kernel takes 4096: %w", len(raw), ErrUnsupported)
	}
	return raw, nil
}
