package serveclient

import (
	"errors"
	"net"

	"golang.org/x/sys/unix"
)

// PeerUID is the uid of the process at the other end of conn.
func PeerUID(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, cerr
	}
	if cred == nil {
		return 0, errors.New("no peer credentials")
	}
	return int(cred.Uid), nil
}
