package sbinit

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/isolation/egress/relay"
)

// SeccompNotif is struct seccomp_notif (linux/seccomp.h).
type SeccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

// SeccompNotifResp is struct seccomp_notif_resp. Error is 0 or a negated
// errno.
type SeccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// seccompNotifAddfd is struct seccomp_notif_addfd.
type seccompNotifAddfd struct {
	id         uint64
	flags      uint32
	srcfd      uint32
	newfd      uint32
	newfdFlags uint32
}

// seccompIoctlNotifIDValidOld is SECCOMP_IOCTL_NOTIF_ID_VALID as kernels
// before 5.17 numbered it (_IOR, which later kernels still accept).
const seccompIoctlNotifIDValidOld = 0x80082102

// NotifRecv waits for the next notification on the listener fd.
func NotifRecv(fd int, req *SeccompNotif) error {
	*req = SeccompNotif{} // the kernel wants it zeroed
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(req))); e != 0 {
		return e
	}
	return nil
}

// NotifSend answers a notification on the listener fd.
func NotifSend(fd int, resp *SeccompNotifResp) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(resp))); e != 0 {
		return e
	}
	return nil
}

// NotifIDValid reports whether notification id is still pending on the
// listener fd: its caller still waits, so the pid it came with is still
// that caller's. It is false where the kernel cannot tell.
func NotifIDValid(fd int, id uint64) bool {
	for _, req := range []uintptr{unix.SECCOMP_IOCTL_NOTIF_ID_VALID, seccompIoctlNotifIDValidOld} {
		v := id
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(&v)))
		if e == 0 {
			return true
		}
		if e != unix.EINVAL && e != unix.ENOTTY {
			return false
		}
	}
	return false
}

// connectSupervisor answers the connect() calls of the commands (see
// Connect).
type connectSupervisor struct {
	listener int
	// targets are the relay's port for each loopback port a command may
	// connect to (the proxy's and the localhost grants').
	targets map[int]int
	// setID: read the commands' memory as uid and gid (the init runs
	// as root, the commands as a uid of their own; without
	// CAP_SYS_PTRACE only the same uid may read it).
	setID    bool
	uid, gid int

	mu       sync.Mutex
	expected map[uint16]bool // source ports of the supervisor's own connections to the relay
}

// startConnect starts the relay of c, loads c's filter on the calling
// thread (the one that forks every command) and answers its listener in
// the background for the init's life. conf is the commands' Confine:
// their uid. Preconditions: the caller is the init's locked main thread.
func startConnect(c *Connect, conf *Confine) error {
	if conf == nil || c.ProxyPort < 1 || c.ProxyPort > 65535 || c.Socket == "" {
		return fmt.Errorf("supervised connect without confinement, proxy port or socket: %w", ErrSetup)
	}
	s := &connectSupervisor{targets: map[int]int{}, expected: map[uint16]bool{}}
	if conf.SetID {
		s.setID, s.uid, s.gid = true, int(conf.UID), int(conf.GID)
	}
	r, err := relay.Listen(relay.Config{SocketPath: c.Socket, LocalhostPorts: c.LocalhostPorts, LocalhostFreePorts: true, Admit: s.admit})
	if err != nil {
		return err
	}
	s.targets[c.ProxyPort] = r.ProxyPort()
	for _, port := range c.LocalhostPorts {
		if port != c.ProxyPort {
			s.targets[port] = r.LocalhostListenPort(port)
		}
	}
	r.Serve(context.Background())
	// A filter needs no_new_privs (or CAP_SYS_ADMIN) on this thread;
	// the commands set it themselves anyway.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if s.listener, err = loadWatch(c.Filter); err != nil {
		// A container runtime's own seccomp profile may refuse it.
		return fmt.Errorf("supervised connect for the tool's network grants: %w (run the tool without them, or where namespaces can be made)", err)
	}
	ready := make(chan error, 1)
	go s.serve(ready)
	return <-ready
}

// admit is the relay's check of each connection it accepts: only one
// the supervisor made, known by its source port, which is taken once.
// Any other process of the host may connect to the relay's port.
func (s *connectSupervisor) admit(remote netip.AddrPort) bool {
	if remote.Addr().Unmap() != netip.AddrFrom4([4]byte{127, 0, 0, 1}) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.expected[remote.Port()] {
		return false
	}
	delete(s.expected, remote.Port())
	return true
}

// serve answers the listener until it fails, on a thread of its own
// that takes the commands' file-system ids for good. It reports on ready
// whether it could.
func (s *connectSupervisor) serve(ready chan<- error) {
	runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
	defer unix.Close(s.listener)
	if s.setID {
		// Per thread: /proc/PID/mem and fdinfo check the opener's
		// file-system ids.
		_ = unix.Setfsgid(s.gid)
		_ = unix.Setfsuid(s.uid)
		// An id of -1 changes nothing and returns the current one.
		gid, _ := unix.SetfsgidRetGid(-1)
		if uid, _ := unix.SetfsuidRetUid(-1); uid != s.uid || gid != s.gid {
			ready <- fmt.Errorf("supervised connect: take the commands' file-system ids %d:%d: %w", s.uid, s.gid, ErrSetup)
			return
		}
	}
	ready <- nil
	for {
		var req SeccompNotif
		if err := NotifRecv(s.listener, &req); err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOENT) {
				continue
			}
			fmt.Fprintln(os.Stderr, "sandboxed init: supervised connect:", err)
			return // closing the listener fails every waiting connect
		}
		resp := s.answer(&req)
		_ = NotifSend(s.listener, &resp) // ENOENT: the caller is gone
	}
}

// answer decides one connect() and carries it out.
func (s *connectSupervisor) answer(req *SeccompNotif) SeccompNotifResp {
	refuse := SeccompNotifResp{ID: req.ID, Error: -int32(unix.ECONNREFUSED)}
	pid, fd := int(req.Pid), int(int32(req.Args[0]))
	addrlen := uint64(uint32(req.Args[2])) // an int: a negative one is refused as too long
	sa, ok := readMem(pid, req.Args[1], min(addrlen, sockaddrInLen))
	flags, okFlags := fdFlags(pid, fd)
	// What was read is the caller's only while it still waits.
	if !ok || !okFlags || !NotifIDValid(s.listener, req.ID) {
		return refuse
	}
	to, ok := SupervisedTarget(sa, addrlen, s.targets)
	if !ok {
		return refuse
	}
	sock, err := s.dialRelay(to, flags&unix.O_NONBLOCK != 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxed init: supervised connect:", err)
		return refuse
	}
	defer unix.Close(sock)
	add := seccompNotifAddfd{id: req.ID, flags: unix.SECCOMP_ADDFD_FLAG_SETFD, srcfd: uint32(sock), newfd: uint32(fd),
		newfdFlags: flags & unix.O_CLOEXEC}
	// Not SECCOMP_ADDFD_FLAG_SEND: it answers with the descriptor's
	// number, which connect() must not return.
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_ADDFD, uintptr(unsafe.Pointer(&add))); e != 0 {
		return refuse
	}
	return SeccompNotifResp{ID: req.ID}
}

// relayConnectTimeout bounds the supervisor's connect to the relay.
var relayConnectTimeout = unix.Timeval{Sec: 5}

// dialRelay connects a new TCP socket of the supervisor's to the relay's
// listener at 127.0.0.1:port, from a source port it expects first.
func (s *connectSupervisor) dialRelay(port int, nonblock bool) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	from, err := bindLoopback(fd)
	if err == nil {
		s.mu.Lock()
		s.expected[from] = true
		s.mu.Unlock()
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &relayConnectTimeout)
		if err = unix.Connect(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			s.mu.Lock()
			delete(s.expected, from)
			s.mu.Unlock()
			err = fmt.Errorf("connect to the relay: %w", err)
		}
	}
	if err == nil {
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &unix.Timeval{})
		err = unix.SetNonblock(fd, nonblock)
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// bindLoopback binds fd to a free port of 127.0.0.1 and returns it.
func bindLoopback(fd int) (uint16, error) {
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return 0, fmt.Errorf("bind: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return 0, fmt.Errorf("getsockname: %w", err)
	}
	in, ok := sa.(*unix.SockaddrInet4)
	if !ok {
		return 0, fmt.Errorf("getsockname: not an IPv4 address")
	}
	return uint16(in.Port), nil
}

// readMem reads n bytes at addr of pid's memory, false unless all could be.
func readMem(pid int, addr, n uint64) ([]byte, bool) {
	if addr == 0 || n == 0 {
		return nil, false
	}
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/mem", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	b := make([]byte, n)
	got, err := unix.Pread(fd, b, int64(addr))
	return b, err == nil && got == len(b)
}

// fdFlags reads the open flags of pid's descriptor fd.
func fdFlags(pid, fd int) (uint32, bool) {
	if fd < 0 {
		return 0, false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, false
	}
	return fdinfoFlags(b)
}
