package relay

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// The relay's listeners are plain TCP, never Multipath TCP (which Go asks
// for by default and Landlock's TCP rules do not cover).
func TestListenersAreNotMPTCP(t *testing.T) {
	r, err := Listen(Config{SocketPath: "/nonexistent.sock", ProxyPort: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rc, err := r.proxyLn.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var proto int
	var serr error
	if err := rc.Control(func(fd uintptr) { proto, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PROTOCOL) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	if proto != unix.IPPROTO_TCP {
		t.Errorf("proxy listener protocol = %d, want IPPROTO_TCP (%d)", proto, unix.IPPROTO_TCP)
	}
}
