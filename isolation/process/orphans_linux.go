package process

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// An init outside namespaces (the none and landlock tiers) is the child
// subreaper of its commands: a daemon that left its session is still its
// descendant, and it kills them all when the run ends. Killed outright
// (SIGKILL, the OOM killer) it kills nothing, and without a cgroup
// nothing else holds the run's processes. So while such an init lives,
// this process is a child subreaper too: the init's orphans come to it,
// not to the host's init, and it kills them (adopted) when it sees the
// init gone. Its own children are never taken for orphans: those it
// starts in a session of their own (inits, the spawner, the reown helper)
// are known by pid (ownChildren), and the others share its session, which
// no process of a run can join.

// subreaper counts the live inits outside namespaces: this process is a
// child subreaper while there is one.
var subreaper struct {
	sync.Mutex
	n int
}

// holdSubreaper makes this process a child subreaper until the matching
// releaseSubreaper.
func holdSubreaper() {
	subreaper.Lock()
	defer subreaper.Unlock()
	if subreaper.n == 0 {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	}
	subreaper.n++
}

// releaseSubreaper ends a holdSubreaper.
func releaseSubreaper() {
	subreaper.Lock()
	defer subreaper.Unlock()
	if subreaper.n--; subreaper.n == 0 {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	}
}

// ownChildren are the pids of the children this process started in a
// session of their own and has not waited for. starting is held (read)
// while one starts, so that adopted never sees one before it is known.
var ownChildren struct {
	starting sync.RWMutex
	mu       sync.Mutex
	pids     map[int]bool
}

// startOwn runs start, which starts a child in a session of its own and
// says its pid (0: none started), and knows that child as this process's.
func startOwn(start func() (int, error)) error {
	ownChildren.starting.RLock()
	defer ownChildren.starting.RUnlock()
	pid, err := start()
	if pid > 0 {
		ownChildren.mu.Lock()
		if ownChildren.pids == nil {
			ownChildren.pids = map[int]bool{}
		}
		ownChildren.pids[pid] = true
		ownChildren.mu.Unlock()
	}
	return err
}

// waitedOwn forgets pid, a child of startOwn's that was waited for.
func waitedOwn(pid int) {
	ownChildren.mu.Lock()
	delete(ownChildren.pids, pid)
	ownChildren.mu.Unlock()
}

// killAdopted kills the processes this process adopted as a child
// subreaper (orphans of an init that died) and reaps them, pass after
// pass — the children of one killed come to this process in turn — until
// none is left or a few seconds have passed. It says how many it killed.
func killAdopted() int {
	ownChildren.starting.Lock()
	defer ownChildren.starting.Unlock()
	self := os.Getpid()
	sid, err := unix.Getsid(0)
	if err != nil {
		return 0
	}
	killed := 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		var fds []int
		for _, pid := range children(self) {
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue
			}
			// Judged after the pidfd is open: a pid reused meanwhile is
			// not this process's child.
			if adopted(pid, self, sid) && unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
				fds = append(fds, fd)
				continue
			}
			unix.Close(fd)
		}
		if len(fds) == 0 {
			break
		}
		for _, fd := range fds {
			var info unix.Siginfo
			_ = unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED, nil)
			unix.Close(fd)
		}
		killed += len(fds)
	}
	return killed
}

// adopted reports whether pid is a child of this process (self, of
// session sid) that it did not start: an orphan it adopted.
func adopted(pid, self, sid int) bool {
	ownChildren.mu.Lock()
	own := ownChildren.pids[pid]
	ownChildren.mu.Unlock()
	if own || parentOf(pid) != self {
		return false
	}
	s, err := unix.Getsid(pid)
	return err == nil && s != sid
}

// children lists the live children of this process (self): from each
// thread's /proc children list, else from every process's parent.
func children(self int) []int {
	var out []int
	files, _ := filepath.Glob("/proc/self/task/*/children")
	read := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		read++
		for _, s := range bytes.Fields(b) {
			if pid, err := strconv.Atoi(string(s)); err == nil {
				out = append(out, pid)
			}
		}
	}
	if read > 0 {
		return out
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(s)))
		if err == nil && parentOf(pid) == self {
			out = append(out, pid)
		}
	}
	return out
}

// parentOf is pid's parent pid, from /proc/PID/stat (-1 when unknown).
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return -1
	}
	return ppid
}
