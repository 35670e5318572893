// Package seccomp compiles an OCI seccomp profile (specs.LinuxSeccomp, the
// data the planner puts in the plan) into a classic BPF program for the
// native architecture and loads it. It is pure Go (via
// github.com/elastic/go-seccomp-bpf) so the binary stays static.
//
// It owns no profile: the profiles themselves are data built in the
// sandbox package. It must not import sandbox, tool or policy.
//
// What the compiler supports of the OCI format: actions ALLOW, ERRNO (with
// ErrnoRet, default EPERM), KILL, KILL_THREAD, KILL_PROCESS, TRAP, LOG; the
// argument operators EQ, NE, LT, LE, GT, GE, and MASKED_EQ where ValueTwo is
// 0 (no bit of Value set) or ValueTwo == Value with Value a single bit (that
// bit set) — enough to filter clone flags and socket families. Several
// arguments in one rule are ANDed; rules are matched in order, first match
// wins. Syscall names unknown on the native architecture are ignored (a
// profile may name syscalls of other architectures). Syscalls made through
// any other ABI than the native one (i386 int 0x80, x32) fail with ENOSYS:
// a denylist must not be bypassable by switching ABI.
package seccomp
