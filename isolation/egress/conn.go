package egress

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation/egress/relay"
)

// deadlineConn sets a fresh deadline before every Read and Write, so a
// connection dies after a period without progress, not after a fixed
// total time.
//
// While a handshake deadline is set, reads use that fixed deadline
// instead, so a client cannot keep a half-sent request alive by trickling
// bytes.
type deadlineConn struct {
	net.Conn
	readTimeout  atomic.Int64 // time.Duration; 0: none
	handshake    atomic.Int64 // fixed read deadline in Unix nanoseconds; 0: none
	writeTimeout time.Duration
}

func newDeadlineConn(c net.Conn, timeout time.Duration) *deadlineConn {
	d := &deadlineConn{Conn: c, writeTimeout: timeout}
	d.readTimeout.Store(int64(timeout))
	return d
}

// setHandshakeDeadline makes reads fail at t, whatever their progress.
func (d *deadlineConn) setHandshakeDeadline(t time.Time) { d.handshake.Store(t.UnixNano()) }

// setDeadlineMode leaves the handshake and makes every read wait at most
// t for data.
func (d *deadlineConn) setDeadlineMode(t time.Duration) {
	d.handshake.Store(0)
	d.readTimeout.Store(int64(t))
}

func (d *deadlineConn) Read(b []byte) (int, error) {
	if h := d.handshake.Load(); h != 0 {
		_ = d.Conn.SetReadDeadline(time.Unix(0, h))
	} else if t := time.Duration(d.readTimeout.Load()); t > 0 {
		_ = d.Conn.SetReadDeadline(time.Now().Add(t))
	}
	return d.Conn.Read(b)
}

func (d *deadlineConn) Write(b []byte) (int, error) {
	if d.writeTimeout > 0 {
		_ = d.Conn.SetWriteDeadline(time.Now().Add(d.writeTimeout))
	}
	return d.Conn.Write(b)
}

func (d *deadlineConn) CloseWrite() error { return relay.CloseWrite(d.Conn) }

// countConn counts the bytes read from and written to a connection.
type countConn struct {
	net.Conn
	up, down atomic.Int64
}

func (c *countConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.down.Add(int64(n))
	return n, err
}

func (c *countConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.up.Add(int64(n))
	return n, err
}

func (c *countConn) CloseWrite() error { return relay.CloseWrite(c.Conn) }
