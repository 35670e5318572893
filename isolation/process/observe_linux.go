package process

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/isolation/seccomp"
)

// An observed run (Plan.Observe) loads a second seccomp filter in its
// init, the watch filter (seccomp.WatchProfile), whose listener the init
// sends with ready. The observer below answers each notification with
// CONTINUE after reading the syscall's path out of the caller's memory
// (/proc/PID/mem) and resolving a relative one against the caller's
// working directory or directory descriptor. It observes and never
// decides: the path it reads may change between its read and the
// kernel's (a second thread of the caller), which matters to nothing but
// a draft of permissions, and a syscall the run's own filter refuses is
// refused before it is seen. The host reads the memory of the sandbox's
// processes as their user namespace's owner (or as root).

// maxAccesses bounds what one run records.
const maxAccesses = 20000

// observer answers a watch filter's notifications and records what they
// touched.
type observer struct {
	fd    int
	byNr  map[int32][]seccomp.WatchArg
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	seen  map[isolation.Access]bool
	order []isolation.Access
}

// watchProgram is the watch filter, encoded for Config.Watch.
func watchProgram() ([]byte, error) {
	prog, err := seccomp.Compile(seccomp.WatchProfile())
	if err != nil {
		return nil, err
	}
	return sbinit.EncodeProgram(prog), nil
}

// startObserver serves listener fd until stopped or until no process is
// left under the filter. It owns fd.
func startObserver(fd int) (*observer, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	o := &observer{
		fd: fd, byNr: make(map[int32][]seccomp.WatchArg),
		stop: make(chan struct{}), done: make(chan struct{}),
		seen: make(map[isolation.Access]bool),
	}
	for name, args := range seccomp.Watched {
		if nr, ok := info.SyscallNames[name]; ok {
			o.byNr[int32(nr|info.SeccompMask)] = args
		}
	}
	go o.serve()
	return o, nil
}

func (o *observer) serve() {
	defer close(o.done)
	fds := []unix.PollFd{{Fd: int32(o.fd), Events: unix.POLLIN}}
	for {
		select {
		case <-o.stop:
			return
		default:
		}
		n, err := unix.Poll(fds, 200)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		if n == 0 || err != nil {
			continue
		}
		if fds[0].Revents&unix.POLLIN == 0 {
			if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
				return // no process is left under the filter
			}
			continue
		}
		var req sbinit.SeccompNotif
		if sbinit.NotifRecv(o.fd, &req) != nil {
			continue // ENOENT: the caller went away before it was read
		}
		accs := o.accesses(&req)
		// Only a notification still pending was read from the process
		// that made it (its pid was not reused in between).
		if sbinit.NotifIDValid(o.fd, req.ID) {
			o.record(accs)
		}
		resp := sbinit.SeccompNotifResp{ID: req.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
		_ = sbinit.NotifSend(o.fd, &resp)
	}
}

// accesses reads what one notification touches.
func (o *observer) accesses(req *sbinit.SeccompNotif) []isolation.Access {
	args := o.byNr[req.Nr]
	if len(args) == 0 {
		return nil
	}
	pid := int(req.Pid)
	var out []isolation.Access
	for _, a := range args {
		path, ok := readString(pid, req.Args[a.Path])
		if !ok || path == "" {
			continue
		}
		acc := isolation.Access{Op: isolation.AccessOp(a.Op), Dir: a.Dir}
		if a.Flags >= 0 {
			flags := int(req.Args[a.Flags])
			switch {
			case flags&unix.O_PATH != 0:
				continue // a handle, not a read
			case flags&unix.O_ACCMODE != unix.O_RDONLY || flags&(unix.O_CREAT|unix.O_TRUNC) != 0:
				acc.Op = isolation.AccessWrite
			case flags&unix.O_DIRECTORY != 0:
				acc.Dir = true
			}
		}
		if !filepath.IsAbs(path) {
			base, ok := baseDir(pid, a.Dirfd, req.Args)
			if !ok {
				continue
			}
			path = filepath.Join(base, path)
		}
		acc.Path = filepath.Clean(path)
		out = append(out, acc)
	}
	return out
}

// baseDir is what a relative path of the caller is relative to: its
// working directory, or the directory descriptor argument.
func baseDir(pid, dirfd int, args [6]uint64) (string, bool) {
	link := "/proc/" + strconv.Itoa(pid) + "/cwd"
	if dirfd >= 0 {
		if fd := int32(args[dirfd]); fd != unix.AT_FDCWD {
			link = "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(int(fd))
		}
	}
	dir, err := os.Readlink(link)
	if err != nil || !filepath.IsAbs(dir) {
		return "", false
	}
	return dir, true
}

// readString reads a NUL-terminated string of at most PATH_MAX bytes at
// addr in pid's memory, a page at most at a time (the string may end
// just before an unmapped page).
func readString(pid int, addr uint64) (string, bool) {
	if addr == 0 {
		return "", false
	}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return "", false
	}
	defer f.Close()
	const page = 4096
	var out []byte
	buf := make([]byte, page)
	for len(out) < unix.PathMax {
		n := page - int(addr%page)
		m, err := f.ReadAt(buf[:n], int64(addr))
		if m == 0 && err != nil {
			return "", false
		}
		for i := 0; i < m; i++ {
			if buf[i] == 0 {
				return string(append(out, buf[:i]...)), true
			}
		}
		out = append(out, buf[:m]...)
		addr += uint64(m)
	}
	return "", false
}

func (o *observer) record(accs []isolation.Access) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, a := range accs {
		if o.seen[a] || len(o.order) >= maxAccesses {
			continue
		}
		o.seen[a] = true
		o.order = append(o.order, a)
	}
}

// Accesses returns what was recorded so far.
func (o *observer) Accesses() []isolation.Access {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]isolation.Access(nil), o.order...)
}

// Close stops serving and closes the listener; a process still under the
// filter then fails its watched syscalls (ENOSYS), which only happens
// while the sandbox is being torn down.
func (o *observer) Close() {
	select {
	case <-o.stop:
		return
	default:
	}
	close(o.stop)
	<-o.done
	unix.Close(o.fd)
}
