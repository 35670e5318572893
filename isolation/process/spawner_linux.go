package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
	"github.com/sandboxed-dev/sandboxed/isolation/initbin"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
)

// initProc is a started init, however it was started.
type initProc struct {
	pid    int
	stderr *tailBuffer
	// waited is closed once the init exited and its stderr is read.
	waited chan struct{}
	kill   func() error
}

// startDirect starts cmd as this process's child (startInit).
func startDirect(cmd *exec.Cmd, mover cgroup.SelfMover, dropGroups bool) (*initProc, error) {
	err := startOwn(func() (int, error) {
		if err := startInit(cmd, mover, dropGroups); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	if err != nil {
		return nil, err
	}
	p := &initProc{pid: cmd.Process.Pid, stderr: cmd.Stderr.(*tailBuffer), waited: make(chan struct{}), kill: cmd.Process.Kill}
	go func() { cmd.Wait(); waitedOwn(p.pid); close(p.waited) }()
	return p, nil
}

// errSpawnerGone: the request never reached a spawner (none runs, none
// could be started); the start may be made again, by a new spawner or
// directly. A spawner that dies or fails after it got the request may
// have started the init, which may have read its first frames: that
// start is not made again (launch's cleanup stack removes the rest).
var errSpawnerGone = errors.New("the spawner is gone")

// spawner starts inits through a small process of the init binary, so
// that this (large) process does not fork for each (see sbinit's
// spawner). A resident controller's backend has one (Backend.Spawner).
type spawner struct {
	mu   sync.Mutex
	live bool // fd is set
	fd   int  // SOCK_SEQPACKET to the spawner
	// broken: no spawner could be started here (the init binary would
	// not execute from where it is kept, ...); the inits are started
	// directly, which has its own fallbacks.
	broken error
	log    io.Writer // says once that it is broken; nil: nowhere
}

// ensure starts the spawner process if none runs. Preconditions: s.mu is
// held.
func (s *spawner) ensure() error {
	if s.live {
		return nil
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("spawner socket: %w", err)
	}
	child := os.NewFile(uintptr(fds[1]), "spawner")
	defer child.Close()
	path, release, err := initbin.Exec(initCacheDir())
	if err != nil {
		unix.Close(fds[0])
		return err
	}
	defer release()
	cmd := &exec.Cmd{
		Args:       append([]string{"sandboxed-init"}, sbinit.SpawnerArgs()...),
		Env:        []string{"GOMAXPROCS=1"},
		ExtraFiles: []*os.File{child},
		Stderr:     os.Stderr,
		// It dies with the thread that starts it: an unlocked one,
		// which the runtime never retires (see startSpawner).
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
	}
	if path == "" {
		path = "/proc/self/exe"
	}
	done, err := setInitPath(cmd, path)
	if err != nil {
		unix.Close(fds[0])
		return err
	}
	defer done()
	errc := make(chan error, 1)
	// A goroutine of its own that never locks its thread: the caller
	// may be on a locked one, which the runtime retires when it ends.
	err = startOwn(func() (int, error) {
		go func() { errc <- cmd.Start() }()
		if err := <-errc; err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	if err != nil {
		unix.Close(fds[0])
		return fmt.Errorf("start the spawner: %w", err)
	}
	s.live, s.fd = true, fds[0]
	go func() { cmd.Wait(); waitedOwn(cmd.Process.Pid) }()
	return nil
}

// drop forgets a spawner that died or is stuck: it exits once its
// children are gone. Preconditions: s.mu is held.
func (s *spawner) drop() {
	if s.live {
		unix.Close(s.fd)
	}
	s.live, s.fd = false, -1
}

// start starts cmd through the spawner, as startInit would: in the
// cgroup of mover (v1) or cmd's CgroupFD (v2), with the thread's groups
// dropped for the start with dropGroups. cmd's Stderr is replaced.
func (s *spawner) start(cmd *exec.Cmd, mover cgroup.SelfMover, dropGroups bool) (*initProc, error) {
	sys := cmd.SysProcAttr
	req := sbinit.SpawnReq{
		Path: cmd.Path, Args: cmd.Args, Env: cmd.Env,
		Files:       1 + len(cmd.ExtraFiles),
		Cloneflags:  sys.Cloneflags,
		UidMappings: sys.UidMappings, GidMappings: sys.GidMappings,
		Credential: sys.Credential, AmbientCaps: sys.AmbientCaps,
		DropGroups: dropGroups,
		Pdeathsig:  sys.Pdeathsig,
	}
	if mover != nil {
		var err error
		if req.V1Enter, req.V1Leave, err = mover.MovePaths(); err != nil {
			return nil, err
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	fds := []int{int(w.Fd())}
	for _, f := range cmd.ExtraFiles {
		fds = append(fds, int(f.Fd()))
	}
	if sys.UseCgroupFD {
		req.CgroupFD = true
		fds = append(fds, sys.CgroupFD)
	}
	resp, pidfd, err := s.call(&req, fds)
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	p := &initProc{pid: resp.Pid, stderr: &tailBuffer{max: 4096}, waited: make(chan struct{})}
	var mu sync.Mutex
	exited := false
	p.kill = func() error {
		mu.Lock()
		defer mu.Unlock()
		if exited {
			return nil
		}
		return unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
	}
	read := make(chan struct{})
	go func() {
		buf := make([]byte, 512)
		for {
			n, err := r.Read(buf)
			p.stderr.Write(buf[:n])
			if err != nil {
				break
			}
		}
		r.Close()
		close(read)
	}()
	go func() {
		waitPidfd(pidfd)
		<-read
		mu.Lock()
		exited = true
		unix.Close(pidfd)
		mu.Unlock()
		close(p.waited)
	}()
	return p, nil
}

// call sends req with fds and returns the answer and the init's pidfd.
func (s *spawner) call(req *sbinit.SpawnReq, fds []int) (sbinit.SpawnResp, int, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return sbinit.SpawnResp{}, -1, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken == nil {
		if s.broken = s.ensure(); s.broken != nil && s.log != nil {
			fmt.Fprintf(s.log, "sandboxed: process tier: no spawner (%v); each init is started from this process instead, which costs more\n", s.broken)
		}
	}
	if s.broken != nil {
		return sbinit.SpawnResp{}, -1, fmt.Errorf("%w: %w", errSpawnerGone, s.broken)
	}
	if err := unix.Sendmsg(s.fd, b, unix.UnixRights(fds...), nil, 0); err != nil {
		s.drop()
		return sbinit.SpawnResp{}, -1, fmt.Errorf("%w: %v", errSpawnerGone, err)
	}
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	var n, oobn int
	for {
		n, oobn, _, _, err = unix.Recvmsg(s.fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil || n == 0 {
		s.drop()
		return sbinit.SpawnResp{}, -1, fmt.Errorf("the spawner died while it started the init (%v); start the run again", err)
	}
	pidfd := -1
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for i := range msgs {
			if got, err := unix.ParseUnixRights(&msgs[i]); err == nil {
				for _, fd := range got {
					if pidfd < 0 {
						pidfd = fd
					} else {
						unix.Close(fd)
					}
				}
			}
		}
	}
	var resp sbinit.SpawnResp
	if err := json.Unmarshal(buf[:n], &resp); err != nil {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		s.drop()
		return resp, -1, fmt.Errorf("the spawner's answer: %v", err)
	}
	if resp.Stuck {
		s.drop()
	}
	if resp.Err != "" || resp.Pid <= 0 || pidfd < 0 {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		if resp.Err == "" {
			resp.Err = "no pid"
		}
		return resp, -1, &spawnError{msg: resp.Err, errno: syscall.Errno(resp.Errno)}
	}
	return resp, pidfd, nil
}

// spawnError is a start the spawner refused or failed, with the system
// error behind it.
type spawnError struct {
	msg   string
	errno syscall.Errno
}

func (e *spawnError) Error() string { return e.msg }

func (e *spawnError) Unwrap() error {
	if e.errno == 0 {
		return nil
	}
	return e.errno
}

// waitPidfd returns once the process of pidfd exited.
func waitPidfd(pidfd int) {
	for {
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, -1); n > 0 || (err != nil && !errors.Is(err, unix.EINTR)) {
			return
		}
	}
}
