//go:build !linux

package serveclient

import (
	"errors"
	"fmt"
	"net"
	"runtime"
)

// PeerUID is the uid of the process at the other end of conn. Only Linux's
// SO_PEERCRED is read: elsewhere no peer can be told apart, so a server
// refuses every caller and a caller sends nothing to a server (it runs the
// tool itself).
func PeerUID(conn *net.UnixConn) (int, error) {
	return 0, fmt.Errorf("read the credentials of a socket's peer on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
