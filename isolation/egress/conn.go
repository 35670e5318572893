package egress

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
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

func (d *deadlineConn) CloseWrite() error { return closeWrite(d.Conn) }

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

func (c *countConn) CloseWrite() error { return closeWrite(c.Conn) }

// closeWrite half-closes c when it can (TCP and Unix sockets can), and
// closes it otherwise.
func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32*1024); return &b }}

// splice copies bytes both ways between a and b until both directions
// end, then returns. aR and bR are the readers to use for a and b (they
// may hold bytes already buffered from the connection). A direction that
// ends cleanly half-closes its destination so the peer sees EOF; an error
// closes both connections. idle bounds the time neither direction makes
// progress; the per-operation deadlines come from the connections
// themselves (deadlineConn), and a timeout on one direction is forgiven
// while the other direction is still active.
func splice(a net.Conn, aR io.Reader, b net.Conn, bR io.Reader, idle time.Duration, wg *sync.WaitGroup) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	one := func(dst net.Conn, src io.Reader) {
		err := copyActive(dst, src, idle, &last)
		if err == nil {
			_ = closeWrite(dst)
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

// copyActive copies src to dst until EOF (nil) or an error. A read
// timeout is retried while the shared activity clock says the connection
// as a whole was busy within idle.
func copyActive(dst io.Writer, src io.Reader, idle time.Duration, last *atomic.Int64) error {
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
			if idle > 0 && isTimeout(err) && time.Since(time.Unix(0, last.Load())) < idle {
				continue
			}
			return err
		}
	}
}
