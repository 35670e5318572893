package seccomp

import (
	"fmt"

	"github.com/elastic/go-seccomp-bpf/arch"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"
)

// CompileList is the compiler as it was before the binary search: a
// straight list of rules, each reloading the syscall number. The tests
// hold the search to its answers.
func CompileList(p *specs.LinuxSeccomp) ([]bpf.RawInstruction, error) {
	if p == nil {
		return nil, fmt.Errorf("compile seccomp profile: no profile: %w", ErrInvalid)
	}
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("compile seccomp profile: %v: %w", err, ErrUnsupported)
	}
	if p.DefaultAction == specs.ActNotify {
		// Every syscall, the listener's own answers included, would wait.
		return nil, fmt.Errorf("compile seccomp profile: a default action of %s: %w", p.DefaultAction, ErrUnsupported)
	}
	def, err := action(p.DefaultAction, p.DefaultErrnoRet)
	if err != nil {
		return nil, fmt.Errorf("compile seccomp profile: default action: %w", err)
	}
	a := &asm{}
	// Any other ABI than the native one gets ENOSYS: a denylist must not
	// be bypassable through int 0x80 or x32.
	a.emit(bpf.LoadAbsolute{Off: offArch, Size: 4})
	a.jump(bpf.JumpEqual, uint32(info.ID), "", "bad-abi")
	if info.ID == arch.X86_64.ID {
		a.emit(bpf.LoadAbsolute{Off: offNr, Size: 4})
		a.jump(bpf.JumpGreaterOrEqual, x32Bit, "bad-abi", "")
	}
	a.emit(bpf.Jump{Skip: 1})
	a.label("bad-abi")
	a.emit(bpf.RetConstant{Val: retErrno | enosys})

	for i, rule := range p.Syscalls {
		act, err := action(rule.Action, rule.ErrnoRet)
		if err != nil {
			return nil, fmt.Errorf("compile seccomp profile: rule %d (%v): %w", i, rule.Names, err)
		}
		var nrs []uint32
		seen := map[string]bool{}
		for _, name := range rule.Names {
			nr, ok := info.SyscallNames[name]
			if !ok || seen[name] {
				continue // another architecture's syscall, or repeated
			}
			seen[name] = true
			nrs = append(nrs, uint32(nr|info.SeccompMask))
		}
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
