package sbinit

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// SocketPair makes a control channel for an init started by this process:
// host is the Client's end; child is to be passed to the init as ControlFD
// (exec.Cmd.ExtraFiles[0]) and closed by the caller once the init started.
func SocketPair() (host *net.UnixConn, child *os.File, retErr error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("make control socketpair: %w", err)
	}
	hf := os.NewFile(uintptr(fds[0]), "control-host")
	child = os.NewFile(uintptr(fds[1]), "control-init")
	defer hf.Close()
	c, err := net.FileConn(hf)
	if err != nil {
		child.Close()
		return nil, nil, fmt.Errorf("make control socketpair: %w", err)
	}
	return c.(*net.UnixConn), child, nil
}
