package seccomp_test

import (
	"encoding/binary"
	"testing"

	dseccomp "github.com/docker/docker/profiles/seccomp"
	"github.com/elastic/go-seccomp-bpf/arch"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/internal/testenv"
	"github.com/sandboxed-dev/sandboxed/isolation/seccomp"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

const (
	auditI386    = 0x40000003
	auditAArch64 = 0xc00000b7
	auditX86_64  = 0xc000003e
	x32Bit       = 0x40000000
)

func uptr(v uint) *uint { return &v }

// profiles are the profiles the project compiles (the process tier's, by
// privilege, and the watch filter's), Docker's default profile (the
// largest allowlist at hand), and small ones made to catch mistakes.
func profiles(t *testing.T) map[string]*specs.LinuxSeccomp {
	t.Helper()
	ps := map[string]*specs.LinuxSeccomp{"watch": seccomp.WatchProfile()}
	for _, priv := range []privilege.Privilege{privilege.Reduced, privilege.SameAsUser, privilege.Elevated} {
		ps["sandbox-"+string(priv)] = sandbox.SeccompProfile(priv)
	}
	for name, caps := range map[string][]string{"docker-default": nil, "docker-sysadmin": {"CAP_SYS_ADMIN", "CAP_SYS_PTRACE", "CAP_SYS_TIME"}} {
		p, err := dseccomp.GetDefaultProfile(&specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{Bounding: caps}}})
		if err != nil {
			t.Fatal(err)
		}
		ps[name] = p
	}
	arg := func(i uint, op specs.LinuxSeccompOperator, v, v2 uint64) specs.LinuxSeccompArg {
		return specs.LinuxSeccompArg{Index: i, Value: v, ValueTwo: v2, Op: op}
	}
	rule := func(act specs.LinuxSeccompAction, errno uint, names []string, args ...specs.LinuxSeccompArg) specs.LinuxSyscall {
		r := specs.LinuxSyscall{Names: names, Action: act, Args: args}
		if errno != 0 {
			r.ErrnoRet = uptr(errno)
		}
		return r
	}
	ps["empty allow"] = &specs.LinuxSeccomp{DefaultAction: specs.ActAllow}
	ps["empty errno"] = &specs.LinuxSeccomp{DefaultAction: specs.ActErrno, DefaultErrnoRet: uptr(13)}
	ps["duplicates and actions"] = &specs.LinuxSeccomp{
		DefaultAction: specs.ActErrno, DefaultErrnoRet: uptr(38),
		Syscalls: []specs.LinuxSyscall{
			rule(specs.ActAllow, 0, []string{"read", "write", "openat", "close", "read", "no_such_syscall"}),
			rule(specs.ActErrno, 5, []string{"write"}), // shadowed by the rule before
			rule(specs.ActKillProcess, 0, []string{"ptrace"}),
			rule(specs.ActKill, 0, []string{"reboot"}),
			rule(specs.ActKillThread, 0, []string{"kexec_load"}),
			rule(specs.ActTrap, 0, []string{"mount"}),
			rule(specs.ActLog, 0, []string{"umount2"}),
			rule(specs.ActNotify, 0, []string{"mkdirat"}),
			rule(specs.ActErrno, 0, []string{"pipe2"}),
			rule(specs.ActErrno, 38, []string{"dup3"}), // same answer as the default
			rule(specs.ActAllow, 0, []string{"socket"}, arg(0, specs.OpEqualTo, 1, 0)),
			rule(specs.ActErrno, 97, []string{"socket"}, arg(0, specs.OpEqualTo, 2, 0), arg(1, specs.OpNotEqual, 3, 0)),
			rule(specs.ActAllow, 0, []string{"socket", "bind"}),                         // unconditional after conditionals
			rule(specs.ActErrno, 9, []string{"socket"}, arg(0, specs.OpEqualTo, 10, 0)), // shadowed
			rule(specs.ActAllow, 0, []string{"kill"}, arg(1, specs.OpGreaterThan, 9, 0)),
			rule(specs.ActAllow, 0, []string{"kill"}, arg(1, specs.OpLessThan, 1<<33, 0), arg(0, specs.OpGreaterEqual, 1<<32|7, 0)),
			rule(specs.ActAllow, 0, []string{"tkill"}, arg(1, specs.OpLessEqual, 1<<33, 0)),
			rule(specs.ActAllow, 0, []string{"tgkill"}, arg(2, specs.OpMaskedEqual, 0xffff0000ffff, 0x100000002)),
		},
	}
	ps["denylist with conditionals"] = &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Syscalls: []specs.LinuxSyscall{
			rule(specs.ActErrno, 1, []string{"clone"}, arg(0, specs.OpMaskedEqual, 0x10000000, 0x10000000)),
			rule(specs.ActErrno, 1, []string{"clone"}, arg(0, specs.OpMaskedEqual, 0x20000, 0x20000)),
			rule(specs.ActErrno, 38, []string{"clone3"}),
			rule(specs.ActAllow, 0, []string{"personality"}, arg(0, specs.OpEqualTo, 0, 0)),
			rule(specs.ActAllow, 0, []string{"personality"}, arg(0, specs.OpEqualTo, 0xffffffff, 0)),
			rule(specs.ActErrno, 1, []string{"personality"}),
			rule(specs.ActErrno, 22, []string{"fchmodat", "fchmod", "chmod"}, arg(1, specs.OpMaskedEqual, 0o4000, 0o4000)),
			rule(specs.ActErrno, 1, []string{"mount", "umount2", "pivot_root"}),
		},
	}
	// Every syscall allowed, one by one, but every fifth refused and every
	// seventh conditional: long searches, many ranges.
	var many []specs.LinuxSyscall
	info := native(t)
	for nr := 0; nr < 1024; nr++ {
		name, ok := info.SyscallNumbers[nr]
		switch {
		case !ok:
		case nr%7 == 0:
			many = append(many, rule(specs.ActErrno, uint(1+nr%30), []string{name}, arg(uint(nr%6), specs.OpGreaterThan, uint64(nr), 0)))
		case nr%5 == 0:
			many = append(many, rule(specs.ActErrno, uint(1+nr%30), []string{name}))
		default:
			many = append(many, rule(specs.ActAllow, 0, []string{name}))
		}
	}
	ps["one rule per syscall"] = &specs.LinuxSeccomp{DefaultAction: specs.ActKillProcess, Syscalls: many}
	return ps
}

func native(t *testing.T) *arch.Info {
	info, err := arch.GetInfo("")
	testenv.Need(t, "a seccomp architecture table for this machine", err)
	return info
}

// reference is what a profile answers, by the OCI semantics the compiler
// implements: the first rule naming the syscall whose conditions all hold
// decides, else the default action; another ABI gets ENOSYS.
func reference(info *arch.Info, p *specs.LinuxSeccomp, auditArch, nr uint32, args [6]uint64) uint32 {
	if auditArch != uint32(info.ID) || (info.ID == arch.X86_64.ID && nr >= x32Bit) {
		return 0x00050000 | 38
	}
	ret := func(a specs.LinuxSeccompAction, errno *uint) uint32 {
		switch a {
		case specs.ActAllow:
			return 0x7fff0000
		case specs.ActErrno:
			if errno == nil {
				return 0x00050000 | 1
			}
			return 0x00050000 | uint32(*errno)
		case specs.ActKill, specs.ActKillThread:
			return 0
		case specs.ActKillProcess:
			return 0x80000000
		case specs.ActTrap:
			return 0x00030000
		case specs.ActLog:
			return 0x7ffc0000
		case specs.ActNotify:
			return 0x7fc00000
		}
		panic("action " + a)
	}
	holds := func(c specs.LinuxSeccompArg) bool {
		v := args[c.Index]
		switch c.Op {
		case specs.OpEqualTo:
			return v == c.Value
		case specs.OpNotEqual:
			return v != c.Value
		case specs.OpGreaterThan:
			return v > c.Value
		case specs.OpGreaterEqual:
			return v >= c.Value
		case specs.OpLessThan:
			return v < c.Value
		case specs.OpLessEqual:
			return v <= c.Value
		case specs.OpMaskedEqual:
			return v&c.Value == c.ValueTwo
		}
		panic("operator " + c.Op)
	}
rules:
	for _, r := range p.Syscalls {
		named := false
		for _, name := range r.Names {
			if n, ok := info.SyscallNames[name]; ok && uint32(n|info.SeccompMask) == nr {
				named = true
			}
		}
		if !named {
			continue
		}
		for _, c := range r.Args {
			if !holds(c) {
				continue rules
			}
		}
		return ret(r.Action, r.ErrnoRet)
	}
	return ret(p.DefaultAction, p.DefaultErrnoRet)
}

// data is a seccomp_data as the VM reads it: the kernel loads 32-bit
// words in native order, the VM big-endian.
func data(auditArch, nr uint32, args [6]uint64) []byte {
	native := make([]byte, 64)
	binary.NativeEndian.PutUint32(native[0:], nr)
	binary.NativeEndian.PutUint32(native[4:], auditArch)
	for i, a := range args {
		binary.NativeEndian.PutUint64(native[16+8*i:], a)
	}
	out := make([]byte, 64)
	for off := 0; off < 64; off += 4 {
		binary.BigEndian.PutUint32(out[off:], binary.NativeEndian.Uint32(native[off:]))
	}
	return out
}

// steps runs prog on d (as data makes it) and counts the instructions
// executed. It knows only the instructions the compiler emits.
func steps(t *testing.T, prog []bpf.RawInstruction, d []byte) (uint32, int) {
	t.Helper()
	var acc uint32
	for pc, n := 0, 1; pc < len(prog); pc, n = pc+1, n+1 {
		in := prog[pc]
		switch in.Op {
		case 0x20: // ld [k]
			acc = binary.BigEndian.Uint32(d[in.K:])
		case 0x54: // and #k
			acc &= in.K
		case 0x05: // ja
			pc += int(in.K)
		case 0x15, 0x25, 0x35: // jeq, jgt, jge #k
			ok := acc == in.K
			if in.Op == 0x25 {
				ok = acc > in.K
			} else if in.Op == 0x35 {
				ok = acc >= in.K
			}
			if ok {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case 0x06: // ret #k
			return in.K, n
		default:
			t.Fatalf("instruction %d: op %#x", pc, in.Op)
		}
	}
	t.Fatal("ran off the end of the program")
	return 0, 0
}

// compileBoth compiles p with the straight-list compiler (the reference)
// and with the search.
func compileBoth(t *testing.T, p *specs.LinuxSeccomp) (list, search []bpf.RawInstruction) {
	t.Helper()
	list, err := seccomp.CompileList(p)
	if err != nil {
		t.Fatal(err)
	}
	search, err = seccomp.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	return list, search
}

func vm(t *testing.T, prog []bpf.RawInstruction) *bpf.VM {
	t.Helper()
	insts, ok := bpf.Disassemble(prog)
	if !ok {
		t.Fatal("program does not disassemble")
	}
	v, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSearchAnswersLikeList compiles each profile both ways and runs both
// programs, and the reference, over every syscall number below 1024, some
// far larger, each ABI and argument vectors around every value the
// profile's conditions name.
func TestSearchAnswersLikeList(t *testing.T) {
	info := native(t)
	var nrs []uint32
	for nr := uint32(0); nr < 1024; nr++ {
		nrs = append(nrs, nr)
	}
	nrs = append(nrs, 1024, 4095, 4096, 65535, 65536, x32Bit-1, x32Bit, x32Bit+1, x32Bit|0, x32Bit|1, x32Bit|59, x32Bit|257,
		x32Bit|512, x32Bit|545, 0x7fffffff, 0x80000000, 0x80000001, 0xfffffffe, 0xffffffff)
	archs := []uint32{uint32(info.ID), auditI386, auditAArch64, auditX86_64, 0, 0xffffffff}
	plain := [][6]uint64{{}, {^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}, {1, 2, 3, 4, 5, 6}}

	for name, p := range profiles(t) {
		t.Run(name, func(t *testing.T) {
			list, tree := compileBoth(t, p)
			listVM, treeVM := vm(t, list), vm(t, tree)

			// A number some conditional rule names gets, on the native
			// ABI, argument vectors around every value of its conditions.
			rich := map[uint32][][6]uint64{}
			for _, r := range p.Syscalls {
				var vals []uint64
				for _, c := range r.Args {
					for _, v := range []uint64{c.Value, c.ValueTwo, c.Value | c.ValueTwo} {
						vals = append(vals, v, v-1, v+1, v|1<<40, v&0xffffffff, v>>32, ^v)
					}
				}
				for _, n := range r.Names {
					nr, ok := info.SyscallNames[n]
					if !ok || len(vals) == 0 {
						continue
					}
					k := uint32(nr | info.SeccompMask)
					if rich[k] == nil {
						rich[k] = append([][6]uint64(nil), plain...)
					}
					for _, v := range vals {
						for i := range 6 {
							var a [6]uint64
							a[i] = v
							rich[k] = append(rich[k], a)
						}
						rich[k] = append(rich[k], [6]uint64{v, v, v, v, v, v})
					}
				}
			}
			runs := 0
			for _, aa := range archs {
				for _, nr := range nrs {
					vecs := plain
					if aa == uint32(info.ID) && rich[nr] != nil {
						vecs = rich[nr]
					}
					for _, args := range vecs {
						d := data(aa, nr, args)
						want := reference(info, p, aa, nr, args)
						l, err := listVM.Run(d)
						if err != nil {
							t.Fatal(err)
						}
						tr, err := treeVM.Run(d)
						if err != nil {
							t.Fatal(err)
						}
						st, _ := steps(t, tree, d)
						runs++
						if uint32(l) != want || uint32(tr) != want || st != want {
							t.Fatalf("arch %#x nr %d args %#x: list %#x, search %#x (counted %#x), reference %#x",
								aa, nr, args, uint32(l), uint32(tr), st, want)
						}
					}
				}
			}
			t.Logf("%d instructions, were %d; %d runs agree", len(tree), len(list), runs)
		})
	}
}

// TestSearchIsShort: a common syscall runs a few instructions, not one
// compare per rule.
func TestSearchIsShort(t *testing.T) {
	info := native(t)
	for _, priv := range []privilege.Privilege{privilege.Reduced, privilege.SameAsUser} {
		p := sandbox.SeccompProfile(priv)
		list, tree := compileBoth(t, p)
		// openat runs its argument checks too (set-id bits in the mode).
		for name, most := range map[string]int{"read": 20, "write": 20, "close": 20, "futex": 20, "mmap": 20,
			"epoll_pwait": 20, "newfstatat": 20, "openat": 40} {
			nr, ok := info.SyscallNames[name]
			if !ok {
				continue
			}
			d := data(uint32(info.ID), uint32(nr|info.SeccompMask), [6]uint64{})
			_, before := steps(t, list, d)
			_, after := steps(t, tree, d)
			t.Logf("%s %s: %d instructions run, were %d", priv, name, after, before)
			if after > most {
				t.Errorf("%s %s: %d instructions run (were %d), want at most %d", priv, name, after, before, most)
			}
		}
	}
}

// TestSearchLongHalves: a search whose lower half is too long for a
// conditional jump reaches the upper half all the same.
func TestSearchLongHalves(t *testing.T) {
	info := native(t)
	var rules []specs.LinuxSyscall
	for nr := 0; nr < 120; nr++ {
		if name, ok := info.SyscallNumbers[nr]; ok {
			// Long conditional code for each syscall.
			var args []specs.LinuxSeccompArg
			for i := range uint(6) {
				args = append(args, specs.LinuxSeccompArg{Index: i, Value: uint64(nr), Op: specs.OpNotEqual})
			}
			rules = append(rules, specs.LinuxSyscall{Names: []string{name}, Action: specs.ActErrno, ErrnoRet: uptr(uint(1 + nr%100)), Args: args})
		}
	}
	p := &specs.LinuxSeccomp{DefaultAction: specs.ActAllow, Syscalls: rules}
	list, tree := compileBoth(t, p)
	treeVM, listVM := vm(t, tree), vm(t, list)
	for nr := uint32(0); nr < 200; nr++ {
		for _, args := range [][6]uint64{{}, {1 << 40, 1 << 40, 1 << 40, 1 << 40, 1 << 40, 1 << 40}, {uint64(nr)}} {
			d := data(uint32(info.ID), nr, args)
			got, err := treeVM.Run(d)
			if err != nil {
				t.Fatal(err)
			}
			was, err := listVM.Run(d)
			if err != nil {
				t.Fatal(err)
			}
			if want := reference(info, p, uint32(info.ID), nr, args); uint32(got) != want || uint32(was) != want {
				t.Fatalf("nr %d args %#x: %#x (list %#x), want %#x", nr, args, uint32(got), uint32(was), want)
			}
		}
	}
	t.Logf("%d instructions, were %d", len(tree), len(list))
}
