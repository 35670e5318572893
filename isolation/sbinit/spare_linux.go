package sbinit

import (
	"encoding/json"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// A spare is the confining start of a command (confine.go) begun before
// the command is known, so that the Go runtime of the init binary has
// started by the time the command comes: the start was most of what the
// landlock tier's first command cost over the process tier's, whose init
// forks the command itself.
//
//	init --fork+exec (MsgSpare, or a config that fits)--> /proc/self/exe __sandboxed-init --spare
//	                 (session of its own; fds 0-2 /dev/null, 3 a SOCK_SEQPACKET socket)
//	                 waits on fd 3
//	init --spareReq {Confine, Path, Args, Env, Cwd} + the command's stdio--> spare
//	                 stdio on 0-2, chdir Cwd, confineWith(Confine) (as confineSelf)
//	                 execve(Path, Args, Env)   (same pid: the command's)
//
// A spare is forked from the init as it is before its config, or as its
// config arrives, and inherits nothing a config would add later: the init
// uses one only for a config that adds nothing a command inherits (a
// filter, a supervised connect, a relay, another identity: spareFits),
// and kills it otherwise. One spare serves the first command; later
// commands start as confine.go says.
const spareFlag = "--spare"

// spareReq is what a spare is sent: the confinement and the command.
type spareReq struct {
	Confine *Confine `json:"confine"`
	Path    string   `json:"path"`
	Args    []string `json:"args"`
	Env     []string `json:"env"`
	Cwd     string   `json:"cwd"`
}

// spare is a started spare, seen from the init.
type spare struct {
	pid   int
	pidfd int // the spare is signalled through it, never by a pid that may be reused
	sock  int
}

// spareFits reports whether a spare forked before cfg was applied may
// start cfg's commands: cfg confines them, and adds nothing to the init
// that its commands would inherit from it.
func spareFits(cfg *Config) bool {
	return cfg.Confine != nil && !cfg.Confine.LimitsOnly && !cfg.BuildRoot && cfg.Landlock == nil &&
		!cfg.NetworkUp && cfg.Egress == nil && cfg.BuildAs == nil && !cfg.DropPrivileges &&
		len(cfg.Filter) == 0 && len(cfg.Watch) == 0 && cfg.Connect == nil
}

// startSpare forks and executes a spare. It runs on the locked main
// thread, which forks every command.
func startSpare() (*spare, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("spare: socket pair: %w", err)
	}
	defer unix.Close(fds[1])
	null, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(fds[0])
		return nil, fmt.Errorf("spare: %w", err)
	}
	defer unix.Close(null)
	pidfd := -1
	attr := &syscall.ProcAttr{
		// One processor: the spare waits, then executes the command.
		Env:   []string{"GOMAXPROCS=1"},
		Files: []uintptr{uintptr(null), uintptr(null), uintptr(null), uintptr(fds[1])},
		Sys:   &syscall.SysProcAttr{Setsid: true, PidFD: &pidfd},
	}
	pid, err := syscall.ForkExec("/proc/self/exe", []string{"sandboxed-init", InitArg, spareFlag}, attr)
	if err != nil {
		unix.Close(fds[0])
		return nil, fmt.Errorf("spare: start: %w", err)
	}
	return &spare{pid: pid, pidfd: pidfd, sock: fds[0]}, nil
}

// hand sends the spare its command with the command's stdio.
func (s *spare) hand(req *spareReq, stdio []int) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	return unix.Sendmsg(s.sock, b, unix.UnixRights(stdio...), nil, 0)
}

// close releases the init's ends of a spare that was handed its command.
func (s *spare) close() {
	unix.Close(s.sock)
	unix.Close(s.pidfd)
}

// kill ends a spare no command will use (the reaper reaps it).
func (s *spare) kill() {
	_ = unix.PidfdSendSignal(s.pidfd, unix.SIGKILL, nil, 0)
	s.close()
}

// runSpare is the init binary started as a spare: it waits for its
// command, confines itself and executes it. It returns only when it does
// not execute one, with the status the init gives a command that could
// not start (0 when the init went away without sending one).
func runSpare() int {
	buf := make([]byte, maxFrame)
	oob := make([]byte, unix.CmsgSpace(3*4))
	n, oobn, _, _, err := unix.Recvmsg(3, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n == 0 {
		return 0
	}
	unix.Close(3)
	stdio, err := parseRights(oob[:oobn])
	if err != nil || len(stdio) != 3 {
		fmt.Fprintln(os.Stderr, "sandboxed: malformed spare start:", err)
		return 126
	}
	for i, fd := range stdio {
		// Received above 3 (0-3 were taken): no descriptor is
		// overwritten before it is moved.
		if err := unix.Dup3(fd, i, 0); err != nil {
			return 126
		}
		unix.Close(fd)
	}
	var req spareReq
	if err := json.Unmarshal(buf[:n], &req); err != nil || req.Confine == nil || len(req.Args) == 0 {
		fmt.Fprintln(os.Stderr, "sandboxed: malformed spare request:", err)
		return 126
	}
	if err := unix.Chdir(req.Cwd); err != nil {
		fmt.Fprintf(os.Stderr, "sandboxed: working directory %s: %v\n", req.Cwd, err)
		return 126
	}
	if err := confineWith(req.Confine); err != nil {
		fmt.Fprintf(os.Stderr, "sandboxed: confine %s: %v\n", req.Args[0], err)
		return 126
	}
	err = unix.Exec(req.Path, req.Args, req.Env)
	fmt.Fprintf(os.Stderr, "sandboxed: exec %s: %v\n", req.Args[0], err)
	if err == unix.ENOENT {
		return 127
	}
	return 126
}
