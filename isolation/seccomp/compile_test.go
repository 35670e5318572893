package seccomp

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

// Run executes prog on a synthetic seccomp_data, like the kernel would.
func Run(t *testing.T, prog []bpf.RawInstruction, auditArch uint32, nr int, args ...uint64) uint32 {
	t.Helper()
	insts, ok := bpf.Disassemble(prog)
	if !ok {
		t.Fatal("program does not disassemble")
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	// The kernel loads 32-bit words in native order; the VM loads them
	// big-endian. Store each word big-endian where the kernel has it.
	data := make([]byte, 64)
	word := func(off int, v uint32) { binary.BigEndian.PutUint32(data[off:], v) }
	word(0, uint32(nr))
	word(4, auditArch)
	little := binary.NativeEndian.Uint16([]byte{1, 0}) == 1
	for i, a := range args {
		off := 16 + 8*i
		if little {
			word(off, uint32(a))
			word(off+4, uint32(a>>32))
		} else {
			word(off, uint32(a>>32))
			word(off+4, uint32(a))
		}
	}
	// The VM returns the program's return value as an int (length).
	ret, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(ret)
}

func native(t *testing.T) *arch.Info {
	info, err := arch.GetInfo("")
	testenv.Need(t, "a seccomp architecture table for this machine", err)
	return info
}

func uptr(v uint) *uint { return &v }

func TestCompileRules(t *testing.T) {
	info := native(t)
	nr := func(name string) int { return info.SyscallNames[name] }
	p := &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Syscalls: []specs.LinuxSyscall{
			{Names: []string{"mount", "ptrace", "no_such_syscall"}, Action: specs.ActErrno, ErrnoRet: uptr(1)},
			{Names: []string{"clone"}, Action: specs.ActErrno, ErrnoRet: uptr(1),
				Args: []specs.LinuxSeccompArg{{Index: 0, Value: 0x10000000, ValueTwo: 0x10000000, Op: specs.OpMaskedEqual}}},
			{Names: []string{"clone"}, Action: specs.ActErrno, ErrnoRet: uptr(1),
				Args: []specs.LinuxSeccompArg{{Index: 0, Value: 0x00020000, ValueTwo: 0x00020000, Op: specs.OpMaskedEqual}}},
			{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: uptr(38)},
			{Names: []string{"socket"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 1, Op: specs.OpEqualTo}}},
			{Names: []string{"socket"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 2, Op: specs.OpEqualTo}}},
			{Names: []string{"socket"}, Action: specs.ActErrno, ErrnoRet: uptr(97)},
			{Names: []string{"kill"}, Action: specs.ActErrno, Args: []specs.LinuxSeccompArg{{Index: 1, Value: 9, Op: specs.OpGreaterThan}}},
			{Names: []string{"tkill"}, Action: specs.ActErrno, Args: []specs.LinuxSeccompArg{{Index: 1, Value: 1 << 33, Op: specs.OpLessEqual}}},
			{Names: []string{"tgkill"}, Action: specs.ActErrno, Args: []specs.LinuxSeccompArg{{Index: 2, Value: 5, Op: specs.OpNotEqual}}},
		},
	}
	prog, err := Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	id := uint32(info.ID)
	const allow, eperm, enosys = retAllow, retErrno | 1, retErrno | 38
	cases := []struct {
		name string
		nr   int
		args []uint64
		want uint32
	}{
		{"mount denied", nr("mount"), nil, eperm},
		{"ptrace denied", nr("ptrace"), nil, eperm},
		{"read allowed", nr("read"), nil, allow},
		{"plain clone (fork) allowed", nr("clone"), []uint64{0x01200011}, allow},
		{"clone newuser", nr("clone"), []uint64{0x10000000 | 0x11}, eperm},
		{"clone newns (second conditional rule)", nr("clone"), []uint64{0x00020000}, eperm},
		{"clone newns with high garbage", nr("clone"), []uint64{0xffffffff00020000}, eperm},
		{"clone3 enosys", nr("clone3"), nil, enosys},
		{"socket unix", nr("socket"), []uint64{1}, allow},
		{"socket inet (after another conditional)", nr("socket"), []uint64{2}, allow},
		{"socket packet", nr("socket"), []uint64{17}, retErrno | 97},
		{"socket unix with high bits", nr("socket"), []uint64{1<<32 | 1}, retErrno | 97},
		{"kill 9 allowed", nr("kill"), []uint64{1, 9}, allow},
		{"kill 10 denied", nr("kill"), []uint64{1, 10}, eperm},
		{"kill high denied", nr("kill"), []uint64{1, 1 << 32}, eperm},
		{"tkill low denied", nr("tkill"), []uint64{1, 5}, eperm},
		{"tkill equal denied", nr("tkill"), []uint64{1, 1 << 33}, eperm},
		{"tkill above allowed", nr("tkill"), []uint64{1, 1<<33 + 1}, allow},
		{"tgkill ne", nr("tgkill"), []uint64{1, 1, 6}, eperm},
		{"tgkill eq", nr("tgkill"), []uint64{1, 1, 5}, allow},
	}
	for _, c := range cases {
		if got := Run(t, prog, id, c.nr, c.args...); got != c.want {
			t.Errorf("%s: got %#x, want %#x", c.name, got, c.want)
		}
	}
	if got := Run(t, prog, 0x40000003 /* AUDIT_ARCH_I386 */, 0); got != enosys {
		t.Errorf("foreign arch: got %#x, want ENOSYS", got)
	}
	if info.ID == arch.X86_64.ID {
		if got := Run(t, prog, id, x32Bit|nr("read")); got != enosys {
			t.Errorf("x32 syscall: got %#x, want ENOSYS", got)
		}
	}
}

func TestCompileDefaultErrno(t *testing.T) {
	info := native(t)
	prog, err := Compile(&specs.LinuxSeccomp{
		DefaultAction: specs.ActErrno, DefaultErrnoRet: uptr(38),
		Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: specs.ActAllow}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := Run(t, prog, uint32(info.ID), info.SyscallNames["read"]); got != retAllow {
		t.Errorf("read: %#x", got)
	}
	if got := Run(t, prog, uint32(info.ID), info.SyscallNames["write"]); got != retErrno|38 {
		t.Errorf("write: %#x", got)
	}
}

func TestCompileRejects(t *testing.T) {
	cases := map[string]*specs.LinuxSeccomp{
		"nil":         nil,
		"bad action":  {DefaultAction: "SCMP_ACT_BOGUS"},
		"notify all":  {DefaultAction: specs.ActNotify},
		"errno zero":  {DefaultAction: specs.ActAllow, Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: specs.ActErrno, ErrnoRet: uptr(0)}}},
		"bad arg idx": {DefaultAction: specs.ActAllow, Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: specs.ActErrno, Args: []specs.LinuxSeccompArg{{Index: 6, Op: specs.OpEqualTo}}}}},
		"bad op":      {DefaultAction: specs.ActAllow, Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: specs.ActErrno, Args: []specs.LinuxSeccompArg{{Index: 0, Op: "SCMP_CMP_XX"}}}}},
	}
	for name, p := range cases {
		if _, err := Compile(p); !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

func TestWatchProfileNotifiesWatchedSyscalls(t *testing.T) {
	info := native(t)
	prog, err := Compile(WatchProfile())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want uint32
	}{
		{"openat", retUserNotif}, {"execve", retUserNotif}, {"unlinkat", retUserNotif}, {"renameat2", retUserNotif},
		{"read", retAllow}, {"write", retAllow}, {"newfstatat", retAllow}, {"sendmsg", retAllow}, {"ioctl", retAllow},
	} {
		nr, ok := info.SyscallNames[tc.name]
		if !ok {
			t.Fatalf("%s: not a syscall of this architecture", tc.name)
		}
		if got := Run(t, prog, uint32(info.ID), nr|info.SeccompMask); got != tc.want {
			t.Errorf("%s: action %#x, want %#x", tc.name, got, tc.want)
		}
	}
}
