package relay

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fakeProxy stands for the host's proxy on the run's Unix socket. For
// each connection it reads the localhost preamble when it starts with
// PreambleMagic, answers with answer(port), and then echoes in upper case
// what it reads until EOF, half-closing after.
type fakeProxy struct {
	ln     net.Listener
	answer func(port int) byte

	mu        sync.Mutex
	preambles [][PreambleLen]byte
	conns     int
	wg        sync.WaitGroup
}

func startFakeProxy(t *testing.T) *fakeProxy {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "proxy.sock"))
	if err != nil {
		t.Fatal(err)
	}
	p := &fakeProxy{ln: ln, answer: func(int) byte { return LocalOK }}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go p.serve(c)
		}
	}()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *fakeProxy) socket() string { return p.ln.Addr().String() }

func (p *fakeProxy) serve(c net.Conn) {
	defer p.wg.Done()
	defer c.Close()
	p.mu.Lock()
	p.conns++
	p.mu.Unlock()
	buf := make([]byte, 1)
	if _, err := io.ReadFull(c, buf); err != nil {
		return
	}
	r := io.MultiReader(bytes.NewReader(buf), c)
	if buf[0] == PreambleMagic {
		var hdr [PreambleLen]byte
		hdr[0] = buf[0]
		if _, err := io.ReadFull(c, hdr[1:]); err != nil {
			return
		}
		p.mu.Lock()
		p.preambles = append(p.preambles, hdr)
		p.mu.Unlock()
		port, err := ParsePreamble(hdr)
		if err != nil {
			return
		}
		ans := p.answer(port)
		if _, err := c.Write([]byte{ans}); err != nil || ans != LocalOK {
			return
		}
		r = c
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return
	}
	c.Write(bytes.ToUpper(b))
	CloseWrite(c)
}

func (p *fakeProxy) seen() (int, [][PreambleLen]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns, append([][PreambleLen]byte(nil), p.preambles...)
}

// freePort returns a loopback port nothing listens on (at the time).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func startRelay(t *testing.T, cfg Config) *Relay {
	t.Helper()
	r, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.Serve(ctx)
	t.Cleanup(func() { cancel(); r.Close() })
	return r
}

// roundTrip sends msg to addr, half-closes, and returns all it gets back.
func roundTrip(t *testing.T, addr, msg string) (string, error) {
	t.Helper()
	c, err := net.Dial("tcp4", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		return "", err
	}
	CloseWrite(c)
	b, err := io.ReadAll(c)
	return string(b), err
}

// TestRelayProxyPort: a connection to the proxy port is copied to the
// socket as it is (no preamble), both ways, with the half-close passed on.
func TestRelayProxyPort(t *testing.T) {
	p := startFakeProxy(t)
	r := startRelay(t, Config{SocketPath: p.socket()})
	if got, err := roundTrip(t, r.ProxyAddr(), "connect example.test:443"); err != nil || got != "CONNECT EXAMPLE.TEST:443" {
		t.Fatalf("through the relay: %q, %v", got, err)
	}
	if r.ProxyAddr() != "127.0.0.1:"+strconv.Itoa(r.ProxyPort()) || r.ProxyPort() == 0 {
		t.Errorf("ProxyAddr %s, ProxyPort %d", r.ProxyAddr(), r.ProxyPort())
	}
	if n, pre := p.seen(); n != 1 || len(pre) != 0 {
		t.Errorf("proxy saw %d connections, preambles % x", n, pre)
	}
}

// TestRelayLocalhostPort: a connection to a localhost port starts with
// the preamble naming that port, and is copied once the proxy says yes.
func TestRelayLocalhostPort(t *testing.T) {
	p := startFakeProxy(t)
	port := freePort(t)
	startRelay(t, Config{SocketPath: p.socket(), LocalhostPorts: []int{port, port}})
	big := string(bytes.Repeat([]byte("x"), 1<<20))
	got, err := roundTrip(t, "127.0.0.1:"+strconv.Itoa(port), big)
	if err != nil || got != string(bytes.ToUpper([]byte(big))) {
		t.Fatalf("through the relay: %d bytes, %v", len(got), err)
	}
	if _, pre := p.seen(); len(pre) != 1 || pre[0] != Preamble(port) {
		t.Errorf("preambles % x, want % x", pre, Preamble(port))
	}
}

// TestRelayLocalhostRefused: when the proxy refuses the port, the tool's
// connection is closed with nothing sent to it.
func TestRelayLocalhostRefused(t *testing.T) {
	for _, ans := range []byte{LocalNotGrant, LocalDialError} {
		p := startFakeProxy(t)
		p.answer = func(int) byte { return ans }
		port := freePort(t)
		startRelay(t, Config{SocketPath: p.socket(), LocalhostPorts: []int{port}})
		if got, err := roundTrip(t, "127.0.0.1:"+strconv.Itoa(port), "hello"); got != "" || IsTimeout(err) {
			t.Errorf("answer %d: got %q, %v; want the connection closed", ans, got, err)
		}
	}
}

// TestRelayWithoutProxy: with no proxy on the socket, a connection is
// closed at once: the sandbox has no other way out.
func TestRelayWithoutProxy(t *testing.T) {
	r := startRelay(t, Config{SocketPath: filepath.Join(t.TempDir(), "none.sock")})
	start := time.Now()
	if got, err := roundTrip(t, r.ProxyAddr(), "hello"); got != "" || IsTimeout(err) {
		t.Errorf("got %q, %v; want the connection closed", got, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("closing took %v", d)
	}
}

func TestListenRefusesBadConfig(t *testing.T) {
	busy, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port
	free := freePort(t)
	for _, tc := range []struct {
		name    string
		cfg     Config
		badPort bool
	}{
		{"no socket", Config{}, false},
		{"proxy port below range", Config{SocketPath: "/s", ProxyPort: -1}, true},
		{"proxy port above range", Config{SocketPath: "/s", ProxyPort: 65536}, true},
		{"localhost port 0", Config{SocketPath: "/s", LocalhostPorts: []int{free, 0}}, true},
		{"localhost port above range", Config{SocketPath: "/s", LocalhostPorts: []int{70000}}, true},
		{"localhost port is the proxy port", Config{SocketPath: "/s", ProxyPort: free, LocalhostPorts: []int{free}}, false},
		{"localhost port in use", Config{SocketPath: "/s", LocalhostPorts: []int{free, busyPort}}, false},
		{"proxy port in use", Config{SocketPath: "/s", ProxyPort: busyPort}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Listen(tc.cfg)
			if err == nil {
				r.Close()
				t.Fatal("Listen succeeded")
			}
			if errors.Is(err, ErrBadPort) != tc.badPort {
				t.Errorf("Listen: %v; ErrBadPort %v", err, tc.badPort)
			}
			// On error nothing is left open: the free port listens again.
			ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(free))
			if err != nil {
				t.Errorf("port %d left open: %v", free, err)
			} else {
				ln.Close()
			}
		})
	}
}

// TestServeStopsWithContext: when the context ends the listeners close and
// relayed connections are cut; Close then waits for everything and may be
// called again.
func TestServeStopsWithContext(t *testing.T) {
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "proxy.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			held <- c // the proxy keeps it open and says nothing
		}
	}()
	r, err := Listen(Config{SocketPath: ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.Serve(ctx)
	r.Serve(ctx) // a second Serve is a no-op
	c, err := net.Dial("tcp4", r.ProxyAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var up net.Conn
	select {
	case up = <-held:
		defer up.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the relay did not connect to the proxy")
	}
	cancel()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil || IsTimeout(err) {
		t.Errorf("relayed connection after cancel: %d, %v; want it cut", n, err)
	}
	up.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := up.Read(make([]byte, 1)); n != 0 || err == nil || IsTimeout(err) {
		t.Errorf("proxy side after cancel: %d, %v; want it cut", n, err)
	}
	if _, err := net.DialTimeout("tcp4", r.ProxyAddr(), time.Second); err == nil {
		t.Error("the proxy port still accepts after cancel")
	}
	done := make(chan struct{})
	go func() { r.Close(); r.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
}

// TestCloseBeforeServe: a relay closed before it served never serves.
func TestCloseBeforeServe(t *testing.T) {
	r, err := Listen(Config{SocketPath: "/nonexistent.sock"})
	if err != nil {
		t.Fatal(err)
	}
	addr := r.ProxyAddr()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r.Serve(context.Background())
	if _, err := net.DialTimeout("tcp4", addr, time.Second); err == nil {
		t.Error("a closed relay accepts")
	}
}

// TestServeFunction: the one-step form listens, serves and stops.
func TestServeFunction(t *testing.T) {
	p := startFakeProxy(t)
	port := freePort(t)
	stop, err := Serve(context.Background(), 0, []int{port}, p.socket())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := roundTrip(t, "127.0.0.1:"+strconv.Itoa(port), "ok"); err != nil || got != "OK" {
		t.Errorf("got %q, %v", got, err)
	}
	stop()
	if _, err := net.DialTimeout("tcp4", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil {
		t.Error("still listening after stop")
	}
	if _, err := Serve(context.Background(), 0, nil, ""); err == nil {
		t.Error("Serve with no socket succeeded")
	}
}

// The landlock tier's relay: a localhost port already taken on this
// loopback is listened on at a free port, with its preamble; a
// connection Admit refuses is closed unread and reaches no proxy.
func TestLocalhostFreePortsAndAdmit(t *testing.T) {
	p := startFakeProxy(t)
	taken, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	var mu sync.Mutex
	admit := true
	r, err := Listen(Config{SocketPath: p.socket(), LocalhostPorts: []int{port}, LocalhostFreePorts: true,
		Admit: func(remote netip.AddrPort) bool {
			mu.Lock()
			defer mu.Unlock()
			return admit && remote.Addr() == netip.MustParseAddr("127.0.0.1")
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Serve(context.Background())
	at := r.LocalhostListenPort(port)
	if at == 0 || at == port || r.LocalhostListenPort(port+1) != 0 {
		t.Fatalf("localhost port %d listened on at %d", port, at)
	}
	roundTrip := func() string {
		c, err := net.Dial("tcp4", "127.0.0.1:"+strconv.Itoa(at))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte("hi"))
		c.(*net.TCPConn).CloseWrite()
		b, _ := io.ReadAll(c)
		return string(b)
	}
	if got := roundTrip(); got != "HI" {
		t.Fatalf("admitted: %q", got)
	}
	mu.Lock()
	admit = false
	mu.Unlock()
	before, _ := p.seen()
	if got := roundTrip(); got != "" {
		t.Fatalf("refused: %q", got)
	}
	conns, preambles := p.seen()
	if conns != before {
		t.Fatal("a refused connection reached the proxy")
	}
	if len(preambles) != 1 || preambles[0] != Preamble(port) {
		t.Fatalf("preambles %v, want one for port %d", preambles, port)
	}
}
