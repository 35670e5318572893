package sbinit

import (
	"bytes"
	"encoding/binary"
	"strconv"
)

// Connect is how the landlock tier gives a command the network without
// letting it connect anywhere itself. There is no network namespace
// around the command, and Landlock's TCP rules match a port, not an
// address: a rule that let the command reach the proxy's port would let
// it reach that port on every host. So every connect() of the commands
// waits for the init, which answers it (connect_linux.go):
//
//	command ── connect(fd, 127.0.0.1:ProxyPort) ──▶ seccomp: user notification
//	init (outside the command's Landlock domain, its ancestor, the
//	      command's uid for reading its memory):
//	    read the address from /proc/PID/mem (addrlen bytes at most),
//	    check the notification is still pending (the pid was not reused)
//	    SupervisedTarget(address): none ─▶ ECONNREFUSED
//	    the relay's port R ─▶ its own TCP socket, connected to the relay
//	           (127.0.0.1:R, which admits only the source ports the init
//	           connected from and copies bytes to the proxy's Unix socket
//	           Socket, after the egress preamble for a localhost port),
//	           O_NONBLOCK as the command's socket had it, put in place of
//	           the command's descriptor (SECCOMP_IOCTL_NOTIF_ADDFD with
//	           SETFD) ─▶ connect returns 0
//
// The command's own connect never reaches the kernel: the answer is never
// CONTINUE, which would let a second thread of the command rewrite the
// address between the check and the kernel's use of it. Every other
// address fails — the proxy's port on another address, IPv6, the
// IPv4-mapped form, every Unix socket (named or abstract) — and the
// command's Landlock ruleset handles TCP connect and bind with no rule
// at all (ABI 4), so nothing of its own connects.
//
// The filter (Filter, connect() to the listener, everything else
// allowed) is loaded by the init on the thread that forks every command,
// after the rest of its setup, so every command and its descendants
// inherit it and no other thread of the init has it; a command cannot
// install a listener of its own (a filter chain holds one).
type Connect struct {
	// Filter is the compiled user-notification filter (encoded like
	// Setup.Seccomp).
	Filter []byte `json:"filter"`
	// ProxyPort is the port at 127.0.0.1 the commands' proxy variables
	// name (Egress.ProxyPort). Nothing listens there for them: a
	// connect to it is answered with a connection to the relay.
	ProxyPort int `json:"proxy_port"`
	// LocalhostPorts are the network:localhost ports: a connect to
	// 127.0.0.1 at one of them is answered with a connection to the
	// relay's listener for it, which the proxy forwards to the host's
	// 127.0.0.1 at that port (the egress preamble).
	LocalhostPorts []int `json:"localhost_ports,omitempty"`
	// Socket is the proxy's Unix socket (a host path), which the relay
	// dials.
	Socket string `json:"socket"`
}

// Socket address constants (linux/socket.h, linux/in.h).
const (
	afInet = 2
	// sockaddrInLen is sizeof(struct sockaddr_in), the least a connect
	// to an IPv4 address gives; sockaddrMax is sizeof(struct
	// sockaddr_storage), the most the kernel accepts.
	sockaddrInLen = 16
	sockaddrMax   = 128
)

// SupervisedTarget is what the supervisor connects a command's connect()
// to the socket address sa to: the relay's port for the loopback port
// the command named, when that is AF_INET 127.0.0.1 at a port of targets
// (the proxy's, and the localhost grants'). addrlen is the length the
// command passed; sa holds the bytes read from its memory (at most addrlen
// of them, and sockaddrInLen are enough). Anything else — another
// address or port, another family, a length the kernel would refuse,
// bytes that could not all be read — is refused (false). It makes no
// system call.
func SupervisedTarget(sa []byte, addrlen uint64, targets map[int]int) (int, bool) {
	if addrlen < sockaddrInLen || addrlen > sockaddrMax || len(sa) < 8 {
		return 0, false
	}
	// sa_family is in host byte order, the port in network byte order.
	if binary.NativeEndian.Uint16(sa[0:2]) != afInet || !bytes.Equal(sa[4:8], []byte{127, 0, 0, 1}) {
		return 0, false
	}
	to, ok := targets[int(binary.BigEndian.Uint16(sa[2:4]))]
	return to, ok && to > 0 && to <= 65535
}

// fdinfoFlags reads the flags line of a /proc/PID/fdinfo/FD file: the
// descriptor's open flags, in octal.
func fdinfoFlags(info []byte) (uint32, bool) {
	for _, line := range bytes.Split(info, []byte("\n")) {
		v, ok := bytes.CutPrefix(line, []byte("flags:"))
		if !ok {
			continue
		}
		f, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 8, 32)
		return uint32(f), err == nil
	}
	return 0, false
}
