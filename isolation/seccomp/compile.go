package seccomp

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/elastic/go-seccomp-bpf/arch"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"
)

// Kernel constants, spelled out so this file builds on every OS.
const (
	retKillThread  = 0x00000000
	retKillProcess = 0x80000000
	retTrap        = 0x00030000
	retErrno       = 0x00050000
	retLog         = 0x7ffc0000
	retUserNotif   = 0x7fc00000
	retAllow       = 0x7fff0000

	eperm  = 1
	enosys = 38

	offNr   = 0  // offsetof(struct seccomp_data, nr)
	offArch = 4  // offsetof(struct seccomp_data, arch)
	offArgs = 16 // offsetof(struct seccomp_data, args)

	x32Bit = 0x40000000 // __X32_SYSCALL_BIT
)

// Compile turns p into a BPF program for the native architecture.
//
// After the architecture check, the program finds the syscall number by a
// balanced binary search over ranges of numbers that share one answer, so
// that a syscall runs a dozen instructions rather than one compare per
// listed syscall. A syscall named by a rule with argument conditions ends
// the search in its own block: the conditional rules naming it, in profile
// order, each falling through to the next when its arguments do not match,
// up to the first unconditional rule naming it, or else the default action.
// That is the answer of a straight list of the rules, first match wins.
//
// The argument conditions of github.com/elastic/go-seccomp-bpf v1.6.0 leave
// an argument in the accumulator for the following groups; this package
// therefore uses only its syscall tables and builds the program itself
// with golang.org/x/net/bpf.
func Compile(p *specs.LinuxSeccomp) ([]bpf.RawInstruction, error) {
	info, def, a, err := begin(p)
	if err != nil {
		return nil, err
	}
	prologue, err := a.resolve()
	if err != nil {
		return nil, fmt.Errorf("compile seccomp profile: %w", err)
	}

	// The rules naming each syscall, in profile order, up to the first
	// unconditional one (the rules after it are never reached).
	byNr := map[uint32][]rule{}
	for i, r := range p.Syscalls {
		act, err := action(r.Action, r.ErrnoRet)
		if err != nil {
			return nil, fmt.Errorf("compile seccomp profile: rule %d (%v): %w", i, r.Names, err)
		}
		nrs := numbers(info, r.Names)
		if len(nrs) == 0 {
			continue
		}
		// Check the conditions even where no syscall reaches them.
		for _, c := range r.Args {
			if err := (&asm{}).cond(c, "fail"); err != nil {
				return nil, fmt.Errorf("compile seccomp profile: rule %d (%v): %w", i, r.Names, err)
			}
		}
		for _, nr := range nrs {
			rs := byNr[nr]
			if len(rs) > 0 && len(rs[len(rs)-1].args) == 0 {
				continue
			}
			byNr[nr] = append(rs, rule{args: r.Args, act: act})
		}
	}

	// Ranges of numbers with one answer, covering 0 to 0xffffffff.
	nrs := make([]uint32, 0, len(byNr))
	for nr := range byNr {
		nrs = append(nrs, nr)
	}
	slices.Sort(nrs)
	var ranges []span
	add := func(s span) {
		if n := len(ranges); n > 0 && s.code == nil && ranges[n-1].code == nil && ranges[n-1].ret == s.ret {
			return // the previous range extends to this one
		}
		ranges = append(ranges, s)
	}
	next := uint32(0) // the first number not yet in a range
	for _, nr := range nrs {
		if nr > next {
			add(span{first: next, ret: def})
		}
		rs := byNr[nr]
		if len(rs) == 1 && len(rs[0].args) == 0 {
			add(span{first: nr, ret: rs[0].act})
		} else {
			code, err := conditional(rs, def)
			if err != nil {
				return nil, fmt.Errorf("compile seccomp profile: syscall %d: %w", nr, err)
			}
			add(span{first: nr, code: code})
		}
		next = nr + 1
	}
	if len(nrs) == 0 || nrs[len(nrs)-1] != 0xffffffff {
		add(span{first: next, ret: def})
	}

	insts := append(prologue, bpf.LoadAbsolute{Off: offNr, Size: 4})
	insts = append(insts, search(ranges)...)
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("assemble seccomp program: %w", err)
	}
	if len(raw) > 4096 {
		return nil, fmt.Errorf("compile seccomp profile: %d instructions, the kernel takes 4096: %w", len(raw), ErrUnsupported)
	}
	return raw, nil
}

// rule is one rule of a profile as it applies to one syscall.
type rule struct {
	args []specs.LinuxSeccompArg
	act  uint32
}

// span is a range of syscall numbers, from first up to the next span's
// first, with one answer: the return value ret, or code when it depends
// on the arguments.
type span struct {
	first uint32
	ret   uint32
	code  []bpf.Instruction
}

// conditional is the code of a syscall named by conditional rules: each
// rule in turn, then the default action.
func conditional(rs []rule, def uint32) ([]bpf.Instruction, error) {
	a := &asm{}
	for _, r := range rs {
		end := a.fresh("end")
		for _, c := range r.args {
			if err := a.cond(c, end); err != nil {
				return nil, err
			}
		}
		a.emit(bpf.RetConstant{Val: r.act})
		a.label(end)
	}
	if len(rs[len(rs)-1].args) > 0 {
		a.emit(bpf.RetConstant{Val: def})
	}
	return a.resolve()
}

// search is the binary search over ranges, sorted and covering every
// number, with the syscall number in the accumulator. Every path ends in
// a return. A split whose lower half is too long for a conditional jump
// (255 instructions) over it goes to the upper half by an unconditional
// jump.
func search(ranges []span) []bpf.Instruction {
	if len(ranges) == 1 {
		if ranges[0].code != nil {
			return ranges[0].code
		}
		return []bpf.Instruction{bpf.RetConstant{Val: ranges[0].ret}}
	}
	mid := len(ranges) / 2
	lower, upper := search(ranges[:mid]), search(ranges[mid:])
	var out []bpf.Instruction
	if len(lower) <= 255 {
		out = append(out, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: ranges[mid].first, SkipTrue: uint8(len(lower))})
	} else {
		out = append(out,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: ranges[mid].first, SkipFalse: 1},
			bpf.Jump{Skip: uint32(len(lower))})
	}
	out = append(out, lower...)
	return append(out, upper...)
}

// begin checks p and returns this architecture's tables, the default
// action's return value, and a program that starts with the ABI check:
// any other ABI than the native one gets ENOSYS (a denylist must not be
// bypassable through int 0x80 or x32).
func begin(p *specs.LinuxSeccomp) (*arch.Info, uint32, *asm, error) {
	if p == nil {
		return nil, 0, nil, fmt.Errorf("compile seccomp profile: no profile: %w", ErrInvalid)
	}
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, 0, nil, fmt.Errorf("compile seccomp profile: %v: %w", err, ErrUnsupported)
	}
	if p.DefaultAction == specs.ActNotify {
		// Every syscall, the listener's own answers included, would wait.
		return nil, 0, nil, fmt.Errorf("compile seccomp profile: a default action of %s: %w", p.DefaultAction, ErrUnsupported)
	}
	def, err := action(p.DefaultAction, p.DefaultErrnoRet)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("compile seccomp profile: default action: %w", err)
	}
	if err := checkProfile(p, info); err != nil {
		return nil, 0, nil, fmt.Errorf("compile seccomp profile: %w", err)
	}
	a := &asm{}
	a.emit(bpf.LoadAbsolute{Off: offArch, Size: 4})
	a.jump(bpf.JumpEqual, uint32(info.ID), "", "bad-abi")
	if info.ID == arch.X86_64.ID {
		a.emit(bpf.LoadAbsolute{Off: offNr, Size: 4})
		a.jump(bpf.JumpGreaterOrEqual, x32Bit, "bad-abi", "")
	}
	a.emit(bpf.Jump{Skip: 1})
	a.label("bad-abi")
	a.emit(bpf.RetConstant{Val: retErrno | enosys})
	return info, def, a, nil
}

// numbers are the syscall numbers of names on this architecture, each
// once; names of other architectures' syscalls are left out.
func numbers(info *arch.Info, names []string) []uint32 {
	var nrs []uint32
	seen := map[string]bool{}
	for _, name := range names {
		nr, ok := info.SyscallNames[name]
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
		nrs = append(nrs, uint32(nr|info.SeccompMask))
	}
	return nrs
}

func action(a specs.LinuxSeccompAction, errno *uint) (uint32, error) {
	if errno != nil && a != specs.ActErrno && a != specs.ActTrace {
		// An errno the action would not return: refused, not dropped.
		return 0, fmt.Errorf("errno %d with action %q, which returns none: %w", *errno, a, ErrInvalid)
	}
	switch a {
	case specs.ActAllow:
		return retAllow, nil
	case specs.ActErrno:
		e := uint32(eperm)
		if errno != nil {
			e = uint32(*errno)
		}
		if e == 0 || e > 0xffff {
			return 0, fmt.Errorf("errno %d: %w", e, ErrInvalid)
		}
		return retErrno | e, nil
	case specs.ActKill, specs.ActKillThread:
		return retKillThread, nil
	case specs.ActKillProcess:
		return retKillProcess, nil
	case specs.ActTrap:
		return retTrap, nil
	case specs.ActLog:
		return retLog, nil
	case specs.ActNotify:
		return retUserNotif, nil
	}
	return 0, fmt.Errorf("action %q: %w", a, ErrUnsupported)
}

// asm is a tiny assembler with named forward labels.
type asm struct {
	insts  []bpf.Instruction
	jumps  map[int][2]string // instruction index -> true, false label ("" = next)
	labels map[string]int
	n      int
}

func (a *asm) emit(i bpf.Instruction) { a.insts = append(a.insts, i) }

func (a *asm) fresh(prefix string) string {
	a.n++
	return fmt.Sprintf("%s-%d", prefix, a.n)
}

func (a *asm) label(l string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[l] = len(a.insts)
}

func (a *asm) jump(cond bpf.JumpTest, val uint32, t, f string) {
	if a.jumps == nil {
		a.jumps = map[int][2]string{}
	}
	a.jumps[len(a.insts)] = [2]string{t, f}
	a.emit(bpf.JumpIf{Cond: cond, Val: val})
}

func (a *asm) resolve() ([]bpf.Instruction, error) {
	skip := func(from int, l string) (uint8, error) {
		if l == "" {
			return 0, nil
		}
		to, ok := a.labels[l]
		if !ok {
			return 0, fmt.Errorf("label %s: undefined", l)
		}
		d := to - from - 1
		if d < 0 || d > 255 {
			return 0, fmt.Errorf("jump of %d instructions to %s: %w", d, l, ErrUnsupported)
		}
		return uint8(d), nil
	}
	for i, tf := range a.jumps {
		j := a.insts[i].(bpf.JumpIf)
		var err error
		if j.SkipTrue, err = skip(i, tf[0]); err != nil {
			return nil, err
		}
		if j.SkipFalse, err = skip(i, tf[1]); err != nil {
			return nil, err
		}
		a.insts[i] = j
	}
	return a.insts, nil
}

// ldArg loads the high (hi) or low half of argument i.
func (a *asm) ldArg(i uint, hi bool) {
	off := uint32(offArgs + 8*i)
	little := binary.NativeEndian.Uint16([]byte{1, 0}) == 1
	if hi == little {
		off += 4
	}
	a.emit(bpf.LoadAbsolute{Off: off, Size: 4})
}

// cond emits a 64-bit comparison of one argument; on mismatch it jumps to
// fail, on match it falls through.
func (a *asm) cond(c specs.LinuxSeccompArg, fail string) error {
	if c.Index > 5 {
		return fmt.Errorf("argument index %d: %w", c.Index, ErrInvalid)
	}
	hi, lo := uint32(c.Value>>32), uint32(c.Value)
	pass := a.fresh("pass")
	switch c.Op {
	case specs.OpEqualTo:
		a.ldArg(c.Index, true)
		a.jump(bpf.JumpEqual, hi, "", fail)
		a.ldArg(c.Index, false)
		a.jump(bpf.JumpEqual, lo, "", fail)
	case specs.OpNotEqual:
		a.ldArg(c.Index, true)
		a.jump(bpf.JumpEqual, hi, "", pass)
		a.ldArg(c.Index, false)
		a.jump(bpf.JumpEqual, lo, fail, "")
	case specs.OpGreaterThan, specs.OpGreaterEqual:
		a.ldArg(c.Index, true)
		a.jump(bpf.JumpGreaterThan, hi, pass, "")
		a.jump(bpf.JumpEqual, hi, "", fail)
		a.ldArg(c.Index, false)
		test := bpf.JumpGreaterThan
		if c.Op == specs.OpGreaterEqual {
			test = bpf.JumpGreaterOrEqual
		}
		a.jump(test, lo, "", fail)
	case specs.OpLessThan, specs.OpLessEqual:
		a.ldArg(c.Index, true)
		a.jump(bpf.JumpGreaterOrEqual, hi, "", pass) // hi < vhi
		a.jump(bpf.JumpEqual, hi, "", fail)          // hi > vhi
		a.ldArg(c.Index, false)
		test := bpf.JumpGreaterOrEqual // lo >= vlo fails LT
		if c.Op == specs.OpLessEqual {
			test = bpf.JumpGreaterThan // lo > vlo fails LE
		}
		a.jump(test, lo, fail, "")
	case specs.OpMaskedEqual:
		// (arg & Value) == ValueTwo, half by half.
		hi2, lo2 := uint32(c.ValueTwo>>32), uint32(c.ValueTwo)
		a.ldArg(c.Index, true)
		a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: hi})
		a.jump(bpf.JumpEqual, hi2, "", fail)
		a.ldArg(c.Index, false)
		a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: lo})
		a.jump(bpf.JumpEqual, lo2, "", fail)
	default:
		return fmt.Errorf("operator %q: %w", c.Op, ErrUnsupported)
	}
	a.label(pass)
	return nil
}

// ociArches are the architecture names of the OCI runtime spec, by the
// name the syscall tables give the native one.
var ociArches = map[specs.Arch]string{
	specs.ArchX86: "i386", specs.ArchX86_64: "x86_64", specs.ArchX32: "x32", specs.ArchARM: "arm",
	specs.ArchAARCH64: "aarch64", specs.ArchMIPS: "mips", specs.ArchMIPS64: "mips64", specs.ArchMIPS64N32: "mips64n32",
	specs.ArchMIPSEL: "mipsel", specs.ArchMIPSEL64: "mipsel64", specs.ArchMIPSEL64N32: "mipsel64n32",
	specs.ArchPPC: "ppc", specs.ArchPPC64: "ppc64", specs.ArchPPC64LE: "ppc64le", specs.ArchS390: "s390",
	specs.ArchS390X: "s390x", specs.ArchPARISC: "parisc", specs.ArchPARISC64: "parisc64",
	specs.ArchRISCV64: "riscv64", specs.ArchLOONGARCH64: "loongarch64",
}

// checkProfile refuses what of p the filter would not honour: an
// architecture name it does not know, a list of architectures without
// this one (the filter admits the native architecture alone; the others
// listed get ENOSYS, as any other). A syscall name this architecture
// does not have is left out: there is no such call to filter.
func checkProfile(p *specs.LinuxSeccomp, native *arch.Info) error {
	seen := len(p.Architectures) == 0
	for _, a := range p.Architectures {
		name, ok := ociArches[a]
		if !ok {
			return fmt.Errorf("architecture %q: %w", a, ErrInvalid)
		}
		seen = seen || name == native.Name
	}
	if !seen {
		return fmt.Errorf("the architectures %v leave out this one (%s): %w", p.Architectures, native.Name, ErrUnsupported)
	}
	return nil
}
