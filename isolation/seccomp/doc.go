// Package seccomp compiles an OCI seccomp profile (specs.LinuxSeccomp, the
// data the planner puts in the plan) into a classic BPF program for the
// native architecture and loads it. It is pure Go — syscall tables from
// github.com/elastic/go-seccomp-bpf/arch, instructions from
// golang.org/x/net/bpf — so the binary stays static.
//
// It owns no profile: the profiles themselves are data built in the
// sandbox package. It must not import sandbox, tool or policy.
//
// What the compiler supports of the OCI format: actions ALLOW, ERRNO (with
// ErrnoRet, default EPERM), KILL, KILL_THREAD, KILL_PROCESS, TRAP, LOG; all
// argument operators (EQ, NE, LT, LE, GT, GE, MASKED_EQ) on full 64-bit
// values. Several arguments in one rule are ANDed; rules are matched in
// order, first match wins. Syscall names unknown on the native architecture are ignored (a
// profile may name syscalls of other architectures). Syscalls made through
// any other ABI than the native one (i386 int 0x80, x32) fail with ENOSYS:
// a denylist must not be bypassable by switching ABI.
package seccomp
