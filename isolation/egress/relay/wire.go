package relay

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ErrBadPort is returned when a port of the relay's configuration is out
// of range.
var ErrBadPort = errors.New("invalid relay port")

// ErrBadPreamble is returned by ParsePreamble for bytes that are not a
// localhost forwarding preamble.
var ErrBadPreamble = errors.New("malformed localhost forwarding preamble")

// Preamble of a localhost forwarding connection (see package egress): the
// relay sends PreambleMagic, PreambleKind, PreambleVersion and the port
// (big endian); the proxy answers one byte, LocalOK or a refusal.
// Preamble and ParsePreamble are the one encoding of it.
const (
	PreambleMagic   = 0x00
	PreambleKind    = 'L'
	PreambleVersion = 0x01
	PreambleLen     = 5

	LocalOK        = 0x00
	LocalNotGrant  = 0x01
	LocalDialError = 0x02
)

// Preamble encodes the localhost forwarding preamble for port, which must
// be in 1..65535 (Listen checks the configured ports).
func Preamble(port int) [PreambleLen]byte {
	return [PreambleLen]byte{PreambleMagic, PreambleKind, PreambleVersion, byte(port >> 8), byte(port)}
}

// ParsePreamble decodes a localhost forwarding preamble and returns its
// port. Anything but PreambleMagic, PreambleKind, PreambleVersion and a
// port from 1 to 65535 is ErrBadPreamble.
func ParsePreamble(hdr [PreambleLen]byte) (int, error) {
	if hdr[0] != PreambleMagic || hdr[1] != PreambleKind || hdr[2] != PreambleVersion {
		return 0, fmt.Errorf("%w: header % x", ErrBadPreamble, hdr[:3])
	}
	port := int(hdr[3])<<8 | int(hdr[4])
	if port == 0 {
		return 0, fmt.Errorf("%w: port 0", ErrBadPreamble)
	}
	return port, nil
}

// CloseWrite half-closes c when it can (TCP and Unix sockets can), and
// closes it otherwise.
func CloseWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// IsTimeout reports whether err, or an error it wraps, is a network
// timeout (a deadline that passed).
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32*1024); return &b }}

// Splice copies bytes both ways between a and b until both directions
// end, then returns. aR and bR are the readers to use for a and b (they
// may hold bytes already buffered from the connection). A direction that
// ends cleanly half-closes its destination so the peer sees EOF; an error
// closes both connections. idle bounds the time neither direction makes
// progress; the per-operation deadlines come from the connections
// themselves (such as egress's deadline connections), and a timeout on one direction is forgiven
// while the other direction is still active.
func Splice(a net.Conn, aR io.Reader, b net.Conn, bR io.Reader, idle time.Duration, wg *sync.WaitGroup) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	one := func(dst net.Conn, src io.Reader) {
		err := CopyActive(dst, src, idle, &last)
		if err == nil {
			_ = CloseWrite(dst)
			return
		}
		a.Close()
		b.Close()
	}
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		one(b, aR)
	}()
	one(a, bR)
	<-done
}

// CopyActive copies src to dst until EOF (nil) or an error. A read
// timeout is retried while the shared activity clock says the connection
// as a whole was busy within idle.
func CopyActive(dst io.Writer, src io.Reader, idle time.Duration, last *atomic.Int64) error {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	for {
		n, err := src.Read(buf)
		if n > 0 {
			last.Store(time.Now().UnixNano())
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			if err == io.EOF {
				return nil
			}
			if idle > 0 && IsTimeout(err) && time.Since(time.Unix(0, last.Load())) < idle {
				continue
			}
			return err
		}
	}
}
