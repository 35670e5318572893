package sbinit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// confineFD is the descriptor on which a command started through Confine
// finds its Confine (JSON), in a memory file the init wrote once.
const confineFD = 3

// confineFile writes c into a sealed memory file and returns its
// descriptor (close-on-exec: each command gets it as confineFD only).
func confineFile(c *Confine) (int, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return -1, fmt.Errorf("encode confinement: %w", err)
	}
	fd, err := unix.MemfdCreate("sandboxed-confine", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, fmt.Errorf("confinement file: %w", err)
	}
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("write confinement file: %w", err)
		}
		b = b[n:]
	}
	seals := unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("seal confinement file: %w", err)
	}
	return fd, nil
}

// runConfine is the init binary started by confineArgs: args are those
// after InitArg. It returns only on failure, with the exit status the init
// gives a command that could not start.
func runConfine(args []string) int {
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "sandboxed: malformed confined start:", args)
		return 126
	}
	path, argv := args[1], args[2:]
	if err := confineSelf(); err != nil {
		fmt.Fprintf(os.Stderr, "sandboxed: confine %s: %v\n", argv[0], err)
		return 126
	}
	err := unix.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "sandboxed: exec %s: %v\n", argv[0], err)
	if err == unix.ENOENT {
		return 127
	}
	return 126
}

// confineSelf reads the Confine on confineFD and applies it to this
// process, in the order the kernel requires: the Landlock rules are made
// while the paths can still be opened, the identity is dropped, then the
// limits, no_new_privs, the Landlock domain and the seccomp filter.
//
// The identity, no_new_privs, the Landlock domain and the filter are set
// on the calling thread only: the main thread, locked to this goroutine
// (Main), which then executes the command. execve keeps that thread alone
// and gives the command its credentials, flag, domain and filter; every
// other thread of this process (the Go runtime's) ends in the execve, and
// runs none of the command's code before. Setting them on every thread
// was six rounds of stopping each thread, for threads about to end.
// Preconditions: on the main thread, locked; nothing but the exec follows.
func confineSelf() error {
	f := os.NewFile(confineFD, "confine")
	if f == nil {
		return fmt.Errorf("no confinement on fd %d: %w", confineFD, ErrProtocol)
	}
	b, err := io.ReadAll(io.NewSectionReader(f, 0, maxFrame))
	f.Close()
	if err != nil {
		return fmt.Errorf("read confinement: %w", err)
	}
	var c Confine
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("decode confinement: %w: %w", err, ErrProtocol)
	}
	return confineWith(&c)
}

// confineWith applies c to this process, as confineSelf says; the
// command's stdio is on 0-2. Preconditions: those of confineSelf.
func confineWith(c *Confine) error {
	var err error
	// The fork passed the stdio on 0-2 and the confinement on 3, now
	// closed; every other descriptor of the init is close-on-exec
	// (MarkInheritedCloseOnExec). Whatever this process has open now is
	// the Go runtime's own (its poller): marked close-on-exec too, so
	// nothing reaches the command, which starts with 0-2 alone.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("mark descriptors close-on-exec: %w", err)
	}
	raiseOOMScore("self")
	rs := -1
	var prog []bpf.RawInstruction
	if !c.LimitsOnly {
		if c.Landlock == nil || len(c.Seccomp) == 0 {
			return fmt.Errorf("confinement without Landlock or seccomp: %w", ErrSetup)
		}
		if len(c.Landlock.ConnectTCP) > 0 {
			return fmt.Errorf("confinement with TCP ports: this tier gives a command none: %w", ErrSetup)
		}
		if prog, err = decodeBPF(c.Seccomp); err != nil {
			return err
		}
		abi := LandlockABI()
		if need := max(c.Landlock.MinABI, 1); abi < need {
			return fmt.Errorf("landlock: the kernel enforces ABI %d, the run requires %d: %w", abi, need, ErrSetup)
		}
		var handledFS uint64
		if rs, handledFS, err = landlockRuleset(abi); err != nil {
			return err
		}
		defer unix.Close(rs)
		if err := addLandlockRules(rs, handledFS, -1, c.Landlock.Paths); err != nil {
			return err
		}
	}
	if c.SetID {
		if err := setIDThread(c.UID, c.GID); err != nil {
			return err
		}
	}
	if eff, perm, _, err := capget(); !c.LimitsOnly && (err != nil || eff != 0 || perm != 0) {
		if err := capset(0, 0, 0); err != nil {
			return err
		}
	}
	rlimits := slices.Clone(c.Rlimits)
	if c.NprocLimit > 0 {
		limit := uint64(c.NprocLimit)
		if c.SharedUID {
			limit += uint64(uidTasks(os.Getuid()))
		}
		rlimits = append(rlimits, Rlimit{Resource: unix.RLIMIT_NPROC, Soft: limit, Hard: limit})
	}
	if !c.LimitsOnly {
		if _, _, e := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
			return fmt.Errorf("set no_new_privs: %w", e)
		}
		if _, _, e := unix.RawSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rs), 0, 0); e != 0 {
			return fmt.Errorf("landlock: restrict the command: %w", e)
		}
		if err := loadSeccompThread(prog); err != nil {
			return err
		}
	}
	// The limits last, right before the exec: a memory limit below what
	// this Go process has mapped would fail its next allocation. They are
	// the command's from its first instruction.
	for _, rl := range rlimits {
		if err := unix.Setrlimit(rl.Resource, &unix.Rlimit{Cur: rl.Soft, Max: rl.Hard}); err != nil {
			return fmt.Errorf("set rlimit %d: %w", rl.Resource, err)
		}
	}
	return nil
}

// commandOOMScore is the oom_score_adj of a command run outside a cgroup
// (the none and landlock tiers): the OOM killer takes the tool before its
// init, which is the one that kills what the tool started when the run
// ends. Raising it needs no privilege.
const commandOOMScore = "1000"

// raiseOOMScore sets the oom_score_adj of process pid ("self": this one)
// to commandOOMScore; a kernel that refuses leaves it as it was.
func raiseOOMScore(pid string) {
	_ = os.WriteFile("/proc/"+pid+"/oom_score_adj", []byte(commandOOMScore), 0)
}

// setIDThread makes the calling thread uid and gid, without supplementary
// groups (see confineSelf).
func setIDThread(uid, gid uint32) error {
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("drop supplementary groups: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(gid), uintptr(gid), uintptr(gid)); e != 0 {
		return fmt.Errorf("set gid %d: %w", gid, e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
		return fmt.Errorf("set uid %d: %w", uid, e)
	}
	return nil
}

// uidTasks counts the tasks (threads) this process can see whose real
// uid is uid, itself included: what RLIMIT_NPROC counts.
func uidTasks(uid int) int64 {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	want := strconv.Itoa(uid)
	var n int64
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		match, threads := false, int64(1)
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				f := strings.Fields(v)
				match = len(f) > 0 && f[0] == want
			}
			if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				threads, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
		}
		if match {
			n += threads
		}
	}
	return n
}
