package relay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPreambleRoundTrip(t *testing.T) {
	if got, want := Preamble(5432), [PreambleLen]byte{0x00, 'L', 0x01, 0x15, 0x38}; got != want {
		t.Errorf("Preamble(5432) = % x, want % x", got, want)
	}
	for _, port := range []int{1, 80, 255, 256, 443, 5432, 32768, 65535} {
		got, err := ParsePreamble(Preamble(port))
		if err != nil || got != port {
			t.Errorf("ParsePreamble(Preamble(%d)) = %d, %v", port, got, err)
		}
	}
}

func TestParsePreambleRefuses(t *testing.T) {
	for name, hdr := range map[string][PreambleLen]byte{
		"magic":   {0x05, 'L', 0x01, 0, 80},
		"kind":    {0x00, 'X', 0x01, 0, 80},
		"version": {0x00, 'L', 0x02, 0, 80},
		"port 0":  {0x00, 'L', 0x01, 0, 0},
		"zeros":   {},
	} {
		if port, err := ParsePreamble(hdr); !errors.Is(err, ErrBadPreamble) {
			t.Errorf("%s: ParsePreamble(% x) = %d, %v; want ErrBadPreamble", name, hdr, port, err)
		}
	}
}

// FuzzParsePreamble: whatever five bytes arrive, the decoder either
// refuses them or they are exactly the encoding of the port it returns.
func FuzzParsePreamble(f *testing.F) {
	for _, seed := range [][]byte{{0, 'L', 1, 0, 80}, {0, 'L', 1, 0xff, 0xff}, {0, 'L', 1, 0, 0}, {5, 1, 0, 1, 2}, {0, 'X', 2, 9, 9}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var hdr [PreambleLen]byte
		copy(hdr[:], b)
		port, err := ParsePreamble(hdr)
		if err != nil {
			if !errors.Is(err, ErrBadPreamble) || port != 0 {
				t.Fatalf("ParsePreamble(% x) = %d, %v", hdr, port, err)
			}
			return
		}
		if port < 1 || port > 65535 || Preamble(port) != hdr {
			t.Fatalf("ParsePreamble(% x) = %d, which encodes as % x", hdr, port, Preamble(port))
		}
	})
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestIsTimeout(t *testing.T) {
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	c1.SetReadDeadline(time.Now().Add(-time.Second))
	_, deadline := c1.Read(make([]byte, 1))
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{deadline, true},
		{os.ErrDeadlineExceeded, true},
		{fmt.Errorf("copy: %w", timeoutErr{}), true},
		{&net.OpError{Op: "read", Err: timeoutErr{}}, true},
		{io.EOF, false},
		{net.ErrClosed, false},
		{errors.New("timeout"), false}, // words are not a timeout
		{nil, false},
	} {
		if got := IsTimeout(tc.err); got != tc.want {
			t.Errorf("IsTimeout(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return dialAccept(t, ln, "tcp4")
}

// unixPair returns both ends of a Unix socket connection.
func unixPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return dialAccept(t, ln, "unix")
}

func dialAccept(t *testing.T, ln net.Listener, network string) (net.Conn, net.Conn) {
	t.Helper()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	a, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// TestCloseWriteHalfCloses: on TCP and Unix sockets the peer sees EOF
// and can still answer; a connection that cannot half-close is closed.
func TestCloseWriteHalfCloses(t *testing.T) {
	for name, pair := range map[string]func(*testing.T) (net.Conn, net.Conn){"tcp": tcpPair, "unix": unixPair} {
		t.Run(name, func(t *testing.T) {
			a, b := pair(t)
			if err := CloseWrite(a); err != nil {
				t.Fatal(err)
			}
			if n, err := b.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Fatalf("peer read %d, %v; want EOF", n, err)
			}
			if _, err := b.Write([]byte("back")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 4)
			if _, err := io.ReadFull(a, buf); err != nil || string(buf) != "back" {
				t.Errorf("the half-closed side read %q, %v", buf, err)
			}
		})
	}
	p1, p2 := net.Pipe()
	defer p2.Close()
	if err := CloseWrite(p1); err != nil {
		t.Fatal(err)
	}
	if _, err := p1.Read(make([]byte, 1)); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("a pipe end after CloseWrite: %v, want it closed", err)
	}
}

// scripted is a reader that plays a script: data, then timeouts, then
// what end says.
type scripted struct {
	mu     sync.Mutex
	chunks []string
	end    error // after the chunks; nil means keep timing out
	reads  int
	before func(read int) // called before each read, numbered from 1
}

func (s *scripted) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.before != nil {
		s.before(s.reads)
	}
	if len(s.chunks) > 0 {
		n := copy(p, s.chunks[0])
		s.chunks = s.chunks[1:]
		return n, nil
	}
	if s.end != nil {
		return 0, s.end
	}
	time.Sleep(time.Millisecond)
	return 0, timeoutErr{}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

func TestCopyActive(t *testing.T) {
	t.Run("EOF is a clean end", func(t *testing.T) {
		var last atomic.Int64
		var out bytes.Buffer
		err := CopyActive(&out, &scripted{chunks: []string{"ab", "cd"}, end: io.EOF}, time.Second, &last)
		if err != nil || out.String() != "abcd" {
			t.Errorf("%q, %v", out.String(), err)
		}
		if last.Load() == 0 {
			t.Error("copying did not move the activity clock")
		}
	})
	t.Run("an error is returned", func(t *testing.T) {
		var last atomic.Int64
		boom := errors.New("boom")
		if err := CopyActive(io.Discard, &scripted{chunks: []string{"x"}, end: boom}, time.Second, &last); err != boom {
			t.Errorf("read error: %v", err)
		}
		if err := CopyActive(failWriter{boom}, &scripted{chunks: []string{"x"}, end: io.EOF}, time.Second, &last); err != boom {
			t.Errorf("write error: %v", err)
		}
	})
	t.Run("no idle bound: the first timeout ends it", func(t *testing.T) {
		var last atomic.Int64
		last.Store(time.Now().UnixNano())
		src := &scripted{}
		if err := CopyActive(io.Discard, src, 0, &last); !IsTimeout(err) || src.reads != 1 {
			t.Errorf("%v after %d reads", err, src.reads)
		}
	})
	t.Run("a quiet connection times out after idle", func(t *testing.T) {
		var last atomic.Int64
		last.Store(time.Now().UnixNano())
		start := time.Now()
		if err := CopyActive(io.Discard, &scripted{}, 50*time.Millisecond, &last); !IsTimeout(err) {
			t.Fatalf("%v", err)
		}
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Errorf("gave up after %v, before the idle time", d)
		}
	})
	t.Run("the other direction's activity keeps it alive", func(t *testing.T) {
		// This direction only times out; the other moves the shared
		// clock before each of its first reads, then falls quiet.
		var last atomic.Int64
		const busyReads = 20
		src := &scripted{}
		src.before = func(read int) {
			if read <= busyReads {
				last.Store(time.Now().UnixNano())
			}
		}
		if err := CopyActive(io.Discard, src, 20*time.Millisecond, &last); !IsTimeout(err) {
			t.Fatalf("%v", err)
		}
		if src.reads <= busyReads {
			t.Errorf("gave up after %d reads while the other direction was busy for %d", src.reads, busyReads)
		}
	})
}

// TestSplice copies both ways over real sockets (a Unix socket on one
// side, loopback TCP on the other, as the relay does): each direction's
// end reaches the peer as EOF, and Splice returns when both ended.
func TestSplice(t *testing.T) {
	client, a := tcpPair(t)
	b, server := unixPair(t)
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() {
		Splice(a, a, b, b, time.Second, &wg)
		close(done)
	}()
	up := bytes.Repeat([]byte("u"), 256<<10)
	go func() {
		client.Write(up)
		CloseWrite(client)
	}()
	got, err := io.ReadAll(server)
	if err != nil || !bytes.Equal(got, up) {
		t.Fatalf("server got %d bytes, %v; want %d", len(got), err, len(up))
	}
	// The client's half-close did not end the other direction.
	if _, err := server.Write([]byte("down")); err != nil {
		t.Fatal(err)
	}
	CloseWrite(server)
	got, err = io.ReadAll(client)
	if err != nil || string(got) != "down" {
		t.Fatalf("client got %q, %v", got, err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Splice did not return after both directions ended")
	}
	wg.Wait()
}

// TestSpliceErrorClosesBoth: a direction that fails (here an idle
// timeout on a connection with a deadline) closes both connections.
func TestSpliceErrorClosesBoth(t *testing.T) {
	client, a := tcpPair(t)
	b, server := unixPair(t)
	a.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	b.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() {
		Splice(a, a, b, b, 10*time.Millisecond, &wg)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Splice did not end on an idle timeout")
	}
	wg.Wait()
	for name, c := range map[string]net.Conn{"client": client, "server": server} {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil || IsTimeout(err) {
			t.Errorf("%s: read %d, %v; want the connection closed", name, n, err)
		}
	}
}
