package sbinit

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A spawner is the init binary started once by a resident controller
// (sandboxed serve, mcp) to start its sandboxes' inits for it.
//
// Why: an init is born in a new user namespace, and Go forks a process
// for that (it uses vfork only without CLONE_NEWUSER), copying the page
// tables of the whole controller. Every page the controller then writes
// is copied on the fault, and each such fault flushes the TLB of every
// CPU the controller runs on. With four calls in flight that was a
// quarter of the machine's CPU. The spawner is small and idle: its fork
// costs little, and nothing of the controller is shared with the init.
//
// The protocol is one SpawnReq per datagram of a SOCK_SEQPACKET socket
// (the spawner's fd 3), with the files it names as SCM_RIGHTS, answered by
// a SpawnResp with the init's pidfd. The inits are the spawner's children:
// it reaps them, and they die with it (Pdeathsig), as it dies with the
// controller. At the socket's end it waits for its last child and exits.

// spawnerFlag is argv[2] of an init binary started as a spawner.
const spawnerFlag = "--spawner"

// SpawnerArgs is the argv of a spawner, after the program name.
func SpawnerArgs() []string { return []string{InitArg, spawnerFlag} }

// SpawnReq asks a spawner to start one process. The files sent with it
// are the child's stderr (fd 2), then its fds 3, 4, ... (Files in all),
// then, with CgroupFD, the cgroup v2 directory it is born in.
type SpawnReq struct {
	Path        string                 `json:"path"`
	Args        []string               `json:"args"`
	Env         []string               `json:"env"`
	Files       int                    `json:"files"`
	CgroupFD    bool                   `json:"cgroup_fd,omitempty"`
	Cloneflags  uintptr                `json:"cloneflags,omitempty"`
	UidMappings []syscall.SysProcIDMap `json:"uid_mappings,omitempty"`
	GidMappings []syscall.SysProcIDMap `json:"gid_mappings,omitempty"`
	Credential  *syscall.Credential    `json:"credential,omitempty"`
	AmbientCaps []uintptr              `json:"ambient_caps,omitempty"`
	// DropGroups: the starting thread sheds its supplementary groups for
	// the start (the child inherits the thread's).
	DropGroups bool `json:"drop_groups,omitempty"`
	// V1Enter and V1Leave are cgroup v1 tasks files: the starting thread
	// joins those of V1Enter for the start, so the child is born in them,
	// and goes back through those of V1Leave.
	V1Enter []string `json:"v1_enter,omitempty"`
	V1Leave []string `json:"v1_leave,omitempty"`
	// Pdeathsig is the signal the child gets when the spawner dies;
	// 0 is SIGKILL. An init outside namespaces asks for SIGTERM: it must
	// outlive its parent long enough to kill its commands' descendants,
	// which SIGKILL would leave behind.
	Pdeathsig syscall.Signal `json:"pdeathsig,omitempty"`
}

// SpawnResp is a spawner's answer: the child's pid (its pidfd comes with
// it), or why it did not start. Errno is the system error behind Err, if
// any; Stuck says the spawner could not leave a run's cgroup and starts
// nothing more.
type SpawnResp struct {
	Pid   int    `json:"pid,omitempty"`
	Err   string `json:"err,omitempty"`
	Errno int    `json:"errno,omitempty"`
	Stuck bool   `json:"stuck,omitempty"`
}

// maxSpawnFiles bounds the files of one request.
const maxSpawnFiles = 8

func runSpawner() int {
	// It stays dumpable, as the controller is: the /proc files of a
	// non-dumpable process's children belong to root until they exec,
	// and without root it could not write their user namespace's maps.
	// The children die with the thread that started them: this one,
	// locked for the life of the process (Main).
	runtime.LockOSThread()
	null, err := os.Open(os.DevNull)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandboxed-init: spawner: %v\n", err)
		return 1
	}
	started := make(chan struct{}, 1)
	go reapChildren(started)
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4*(maxSpawnFiles+1)))
	stuck := false
	for {
		n, oobn, _, _, err := unix.Recvmsg(3, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			break
		}
		fds, ferr := parseRights(oob[:oobn])
		var resp SpawnResp
		pidfd := -1
		switch {
		case ferr != nil:
			resp.Err = ferr.Error()
		case stuck:
			resp.Err, resp.Stuck = "the spawner is stuck in a run's cgroup", true
		default:
			var req SpawnReq
			if err := json.Unmarshal(buf[:n], &req); err != nil {
				resp.Err = fmt.Sprintf("spawn request: %v", err)
			} else {
				resp, pidfd = spawn(&req, fds, null)
				stuck = resp.Stuck
				if resp.Pid > 0 {
					select {
					case started <- struct{}{}:
					default:
					}
				}
			}
		}
		for _, fd := range fds {
			unix.Close(fd)
		}
		b, _ := json.Marshal(resp)
		var rights []byte
		if pidfd >= 0 {
			rights = unix.UnixRights(pidfd)
		}
		serr := unix.Sendmsg(3, b, rights, nil, 0)
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		if serr != nil {
			break
		}
	}
	// The controller is done with this spawner: its children go their
	// way (their own teardown kills them), then it goes.
	for {
		if _, err := unix.Wait4(-1, nil, 0, nil); errors.Is(err, unix.ECHILD) {
			return 0
		}
	}
}

// reapChildren reaps the spawner's children as they exit; with none it
// waits until one was started.
func reapChildren(started <-chan struct{}) {
	for {
		_, err := unix.Wait4(-1, nil, 0, nil)
		if errors.Is(err, unix.ECHILD) {
			<-started
		}
	}
}

// parseRights returns the descriptors of a message's SCM_RIGHTS.
func parseRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("spawn request's files: %w", err)
	}
	var fds []int
	for i := range msgs {
		f, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		fds = append(fds, f...)
	}
	return fds, nil
}

// spawn starts req's process on the calling (locked) thread and returns
// its pid and pidfd.
func spawn(req *SpawnReq, fds []int, null *os.File) (SpawnResp, int) {
	want := req.Files
	if req.CgroupFD {
		want++
	}
	if req.Files < 1 || len(fds) != want || len(req.V1Enter) != len(req.V1Leave) {
		return SpawnResp{Err: fmt.Sprintf("spawn request: %d files for %d", len(fds), want)}, -1
	}
	files := []uintptr{null.Fd(), null.Fd()}
	for _, fd := range fds[:req.Files] {
		files = append(files, uintptr(fd))
	}
	pidfd := -1
	sys := &syscall.SysProcAttr{
		Setsid:                     true,
		Pdeathsig:                  cmp.Or(req.Pdeathsig, syscall.SIGKILL),
		Cloneflags:                 req.Cloneflags,
		UidMappings:                req.UidMappings,
		GidMappings:                req.GidMappings,
		GidMappingsEnableSetgroups: false,
		Credential:                 req.Credential,
		AmbientCaps:                req.AmbientCaps,
		PidFD:                      &pidfd,
	}
	if req.CgroupFD {
		sys.UseCgroupFD, sys.CgroupFD = true, fds[req.Files]
	}
	if req.DropGroups {
		restore, err := DropThreadGroups()
		if err != nil {
			return failed(err), -1
		}
		defer func() {
			if restore() != nil {
				// Its groups are the controller's, and it could
				// start a child with fewer: never again.
				os.Exit(1)
			}
		}()
	}
	for i, p := range req.V1Enter {
		if err := writeSelf(p); err != nil {
			resp := failed(fmt.Errorf("move into %s: %w", p, err))
			for _, q := range req.V1Leave[:i] {
				if writeSelf(q) != nil {
					resp.Stuck = true
				}
			}
			return resp, -1
		}
	}
	pid, err := syscall.ForkExec(req.Path, req.Args, &syscall.ProcAttr{Env: req.Env, Files: files, Sys: sys})
	var resp SpawnResp
	for _, q := range req.V1Leave {
		if lerr := writeSelf(q); lerr != nil {
			resp.Stuck = true
			err = errors.Join(err, fmt.Errorf("move back to %s: %w", q, lerr))
		}
	}
	if err != nil {
		if pid > 0 {
			unix.Kill(pid, unix.SIGKILL)
		}
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		f := failed(err)
		f.Stuck = resp.Stuck
		return f, -1
	}
	if resp.Stuck {
		unix.Kill(pid, unix.SIGKILL)
		unix.Close(pidfd)
		return SpawnResp{Err: "cannot leave the run's cgroup", Stuck: true}, -1
	}
	resp.Pid = pid
	return resp, pidfd
}

// failed is the answer for err.
func failed(err error) SpawnResp {
	r := SpawnResp{Err: err.Error()}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		r.Errno = int(errno)
	}
	return r
}

// writeSelf moves the calling thread into the cgroup v1 of tasks file p.
func writeSelf(p string) error {
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte("0"))
	return err
}

// DropThreadGroups clears the calling thread's supplementary groups (and
// only that thread's: credentials are per thread in the kernel) and
// returns how to put them back. Preconditions: the goroutine is locked to
// its thread.
func DropThreadGroups() (restore func() error, err error) {
	n, _, e := unix.RawSyscall(unix.SYS_GETGROUPS, 0, 0, 0)
	if e != 0 {
		return nil, fmt.Errorf("read supplementary groups: %w", e)
	}
	groups := make([]uint32, n+1)
	if n > 0 {
		if n, _, e = unix.RawSyscall(unix.SYS_GETGROUPS, n, uintptr(unsafe.Pointer(&groups[0])), 0); e != 0 {
			return nil, fmt.Errorf("read supplementary groups: %w", e)
		}
	}
	groups = groups[:n]
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return nil, fmt.Errorf("drop supplementary groups: %w", e)
	}
	return func() error {
		var p uintptr
		if len(groups) > 0 {
			p = uintptr(unsafe.Pointer(&groups[0]))
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(groups)), p, 0); e != 0 {
			return fmt.Errorf("restore supplementary groups: %w", e)
		}
		return nil
	}, nil
}
