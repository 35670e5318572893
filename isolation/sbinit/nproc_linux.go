package sbinit

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The commands' process limit (Config.NprocLimit). RLIMIT_NPROC is checked
// against the limit of the task that forks, so it must be the commands'
// own, not the init's: an init under the limit could not make a thread
// once a fork bomb used the budget up, and the Go runtime dies when it
// cannot. The init cannot set a limit in a child between fork and exec
// (syscall.ForkExec has no such step), so a command that must run under
// it starts as the init binary again, which sets the limit on itself and
// executes the command in its place:
//
//	init --fork+exec--> /proc/self/exe __sandboxed-init --nproc=K PATH ARGV...
//	                 setrlimit(RLIMIT_NPROC, K, K)
//	                 execve(PATH, ARGV, environ)   (same pid, same group)
//
// K is the limit plus the tasks that are not the commands' when the
// command starts (outsideTasks): they count against the same uid.
const nprocFlag = "--nproc="

// nprocArgs is the argv of the init binary that executes path with argv
// under RLIMIT_NPROC limit.
func nprocArgs(limit int64, path string, argv []string) []string {
	return append([]string{"sandboxed-init", InitArg, nprocFlag + strconv.FormatInt(limit, 10), path}, argv...)
}

// runNproc is the init binary started by nprocArgs: args are those after
// InitArg. It returns only on failure, with the exit status the init
// gives a command that could not start.
func runNproc(args []string) int {
	v, _ := strings.CutPrefix(args[0], nprocFlag)
	limit, err := strconv.ParseUint(v, 10, 64)
	if err != nil || len(args) < 3 {
		fmt.Fprintln(os.Stderr, "sandboxed: malformed process limit start:", args)
		return 126
	}
	if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: limit, Max: limit}); err != nil {
		fmt.Fprintf(os.Stderr, "sandboxed: set the process limit %d: %v\n", limit, err)
		return 126
	}
	path, argv := args[1], args[2:]
	err = unix.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "sandboxed: exec %s: %v\n", argv[0], err)
	if err == unix.ENOENT {
		return 127
	}
	return 126
}

// outsideTasks counts the tasks (threads) of this pid namespace that are
// not the commands': the init's own, and those of each process whose
// parent is outside the namespace (an exec session's, such as the bridge
// of a pod; commands and their orphans descend from the init). Tasks the
// init cannot see (another container of the same pod, running as the
// same uid) are not counted: they make the commands' bound tighter, never
// looser.
func outsideTasks() int64 {
	self := os.Getpid()
	var n int64
	eachStat(func(pid int, stat string) {
		ppid, threads, ok := parseStat(stat)
		if ok && (pid == self || ppid == 0) {
			n += threads
		}
	})
	return n
}

// parseStat reads the parent pid and the thread count of a
// /proc/PID/stat line (fields 4 and 20; the command name, field 2, may
// hold spaces and parentheses, so the fields are counted after its last
// ')').
func parseStat(s string) (ppid int, threads int64, ok bool) {
	f := statFields(s)
	if len(f) < 18 {
		return 0, 0, false
	}
	p, err1 := strconv.Atoi(f[1])
	t, err2 := strconv.ParseInt(f[17], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return p, t, true
}

// statFields are the fields of a /proc/PID/stat line after the command
// name (field 3 on), nil when the line has none.
func statFields(s string) []string {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// eachStat calls fn with the pid and the /proc/PID/stat line of each
// process this one can see. Each line is read with plain system calls
// into one buffer: os.ReadFile would also register every file with the
// runtime's poller and stat it, five more system calls a process.
func eachStat(fn func(pid int, stat string)) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	buf := make([]byte, 1024) // a stat line is under 400 bytes
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if n := readStat(pid, buf); n > 0 {
			fn(pid, string(buf[:n]))
		}
	}
}

// readStat reads /proc/PID/stat into buf and returns its length, 0 when
// it cannot be read (the process is gone) or does not fit.
func readStat(pid int, buf []byte) int {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	n, err := unix.Read(fd, buf)
	if err != nil || n <= 0 || n == len(buf) {
		return 0
	}
	return n
}
