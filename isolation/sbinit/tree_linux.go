package sbinit

import (
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Without a pid namespace or a cgroup of its own, the init finds the
// processes of its run by descent: it is their child subreaper, so every
// process started by a command — a daemon that called setsid, an orphan —
// stays its descendant until it is reaped, and nothing of the run can
// reparent past it. Commands cannot signal it (Landlock's signal scoping,
// or another uid), so it outlives them to do this.

// descendants lists the live (not zombie) processes below root, read
// from /proc: parents before their children.
func descendants(root int) []int {
	children := map[int][]int{}
	eachStat(func(pid int, stat string) {
		if ppid, zombie, ok := statParent(stat); ok && !zombie {
			children[ppid] = append(children[ppid], pid)
		}
	})
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// statParent reads the parent pid (field 4) and whether the process is a
// zombie (field 3) of a /proc/PID/stat line.
func statParent(s string) (ppid int, zombie, ok bool) {
	f := statFields(s)
	if len(f) < 2 {
		return 0, false, false
	}
	p, err := strconv.Atoi(f[1])
	if err != nil {
		return 0, false, false
	}
	return p, f[0] == "Z" || f[0] == "X", true
}

// signalTree sends sig to every process below root. Each is reached
// through a pidfd opened first and checked to be still below root after,
// so that a pid reused in between is never signalled.
func signalTree(root int, sig syscall.Signal) int {
	if root == os.Getpid() && !hasChildren() {
		return 0
	}
	pids := descendants(root)
	n := 0
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		if below(pid, root) {
			if unix.PidfdSendSignal(fd, sig, nil, 0) == nil {
				n++
			}
		}
		unix.Close(fd)
	}
	return n
}

// below reports whether pid descends from root now.
func below(pid, root int) bool {
	buf := make([]byte, 1024)
	for range 4096 {
		n := readStat(pid, buf)
		if n == 0 {
			return false
		}
		ppid, _, ok := statParent(string(buf[:n]))
		if !ok || ppid <= 1 {
			return false
		}
		if ppid == root {
			return true
		}
		pid = ppid
	}
	return false
}

// hasChildren reports whether the init has a child, live or a zombie not
// yet reaped, of any kind (__WALL: clone children that do not signal their
// exit too); it reaps nothing. Without a child the init has no descendant
// at all: every process below it has an ancestor that is its child, since
// orphans below it are reparented to it or to a subreaper that is itself
// below it. One system call, where descendants reads the /proc/PID/stat
// of every process of the host (milliseconds on a busy host, at the end
// of every run).
func hasChildren() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT|unix.WALL, nil)
	return err != unix.ECHILD
}

// killTreeEmpty kills every process below the init until none is left:
// a process that forked between two passes leaves its children to the
// init (the subreaper) when it dies, and the next pass finds them. It
// gives up after a few seconds (the host's Close kills the init, whose
// descendants then have no subreaper; that is reported as a leak by the
// tests, never silently accepted).
func (st *initState) killTreeEmpty() {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if !hasChildren() || len(descendants(os.Getpid())) == 0 {
			return
		}
		signalTree(os.Getpid(), unix.SIGKILL)
		time.Sleep(2 * time.Millisecond)
	}
}
