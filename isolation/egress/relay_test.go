package egress

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation/egress/relay"
)

// sandboxSide is the loopback address the relay listens on in tests: the
// relay and the "host" share one network namespace here, so the relay
// takes 127.0.0.2 while host services stay on 127.0.0.1.
var sandboxSide = netip.MustParseAddr("127.0.0.2")

func startRelay(t testing.TB, socket string, localPorts ...int) *relay.Relay {
	t.Helper()
	r, err := relay.Listen(relay.Config{SocketPath: socket, LocalhostPorts: localPorts, ListenIP: sandboxSide})
	if err != nil {
		t.Fatal(err)
	}
	r.Serve(context.Background())
	t.Cleanup(func() { r.Close() })
	return r
}

func TestRelayAndLocalhostForwarding(t *testing.T) {
	hostSvc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "host service")
	}))
	defer hostSvc.Close()
	svcPort := portOf(t, hostSvc.URL)
	// A second host service on loopback that is not granted.
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	otherPort := portOf(t, other.URL)

	p := startProxy(t, Config{
		Rules:      mustRules(t, []string{"web.example.test:" + strconv.Itoa(svcPort)}, nil, []int{svcPort}),
		Resolver:   hosts(t, "web.example.test 127.0.0.1"),
		allowAddrs: []netip.Addr{loopback},
	})
	// The relay listens on the granted port and, to show the proxy decides,
	// on the other one too.
	r := startRelay(t, p.SocketPath(), svcPort, otherPort)

	// 1. Localhost forwarding: 127.0.0.x:PORT in the "sandbox" reaches
	// the host's 127.0.0.1:PORT.
	direct := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 5 * time.Second}
	resp, err := direct.Get(fmt.Sprintf("http://%s:%d/", sandboxSide, svcPort))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "host service" {
		t.Fatalf("localhost forward: %q", b)
	}

	// 2. A port the proxy does not grant is closed at once.
	c, err := net.Dial("tcp4", netip.AddrPortFrom(sandboxSide, uint16(otherPort)).String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 64)); err == nil || relay.IsTimeout(err) {
		t.Errorf("ungranted localhost port answered %d bytes, %v", n, err)
	}
	c.Close()

	// 3. The proxy port: HTTP proxying through the relay.
	proxied := &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: r.ProxyAddr()}),
	}, Timeout: 5 * time.Second}
	resp, err = proxied.Get(fmt.Sprintf("http://web.example.test:%d/", svcPort))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "host service" {
		t.Fatalf("proxied through relay: %q", b)
	}
	resp, err = proxied.Get("http://nope.example.test/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(b), "network:external:nope.example.test:80") {
		t.Errorf("refusal through relay: %d %q", resp.StatusCode, b)
	}

	// 4. The preamble spoken directly on the socket: the proxy alone
	// decides, whatever the relay does.
	u := dialProxy(t, p)
	u.Write([]byte{relay.PreambleMagic, relay.PreambleKind, relay.PreambleVersion, byte(otherPort >> 8), byte(otherPort)})
	var ans [1]byte
	if _, err := io.ReadFull(u, ans[:]); err != nil || ans[0] != relay.LocalNotGrant {
		t.Errorf("direct preamble for ungranted port: %v, %v", ans, err)
	}
	u = dialProxy(t, p)
	u.Write([]byte{relay.PreambleMagic, 'X', 1, 0, 80})
	if _, err := u.Read(ans[:]); err == nil {
		t.Error("malformed preamble answered")
	}

	direct.CloseIdleConnections()
	proxied.CloseIdleConnections()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	rec := findRecord(t, p, func(r Record) bool { return r.Protocol == ProtoLocalhost && r.Verdict == Allow })
	if rec.Port != svcPort || rec.BytesUp == 0 || rec.BytesDown == 0 || rec.Reason != "granted by network:localhost:"+strconv.Itoa(svcPort) {
		t.Errorf("localhost record %+v", rec)
	}
	rec = findRecord(t, p, func(r Record) bool { return r.Protocol == ProtoLocalhost && r.Port == otherPort })
	if rec.Verdict != Deny || !strings.Contains(rec.Reason, "network:localhost:"+strconv.Itoa(otherPort)) {
		t.Errorf("refused localhost record %+v", rec)
	}
	checkNoLeaks(t)
}

func TestRelayHostPortDown(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens on the host side
	p := startProxy(t, Config{Rules: mustRules(t, nil, nil, []int{port})})
	u := dialProxy(t, p)
	u.Write([]byte{relay.PreambleMagic, relay.PreambleKind, relay.PreambleVersion, byte(port >> 8), byte(port)})
	var ans [1]byte
	if _, err := io.ReadFull(u, ans[:]); err != nil || ans[0] != relay.LocalDialError {
		t.Errorf("answer %v, %v", ans, err)
	}
}

func TestRelayCloseWithLiveConnections(t *testing.T) {
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-hold
	}))
	defer srv.Close()
	defer close(hold)
	port := portOf(t, srv.URL)
	p := startProxy(t, Config{Rules: mustRules(t, nil, nil, []int{port})})
	r := startRelay(t, p.SocketPath(), port)
	c, err := net.Dial("tcp4", netip.AddrPortFrom(sandboxSide, uint16(port)).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.Read(make([]byte, 16)) // the response head: the stream is live
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	checkNoLeaks(t)
	if _, err := net.Dial("tcp4", netip.AddrPortFrom(sandboxSide, uint16(port)).String()); err == nil {
		t.Error("relay still listening after Close")
	}
}

func TestListenRelayErrors(t *testing.T) {
	// A port already taken: nothing stays open.
	busy, err := net.Listen("tcp4", sandboxSide.String()+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port
	if _, err := relay.Listen(relay.Config{SocketPath: "/x", LocalhostPorts: []int{busyPort}, ListenIP: sandboxSide}); err == nil {
		t.Error("busy port accepted")
	}
	for _, cfg := range []relay.Config{
		{},
		{SocketPath: "/x", ProxyPort: -1},
		{SocketPath: "/x", LocalhostPorts: []int{0}},
	} {
		cfg.ListenIP = sandboxSide
		if r, err := relay.Listen(cfg); err == nil {
			r.Close()
			t.Errorf("relay.Listen(%+v) succeeded", cfg)
		}
	}
	checkNoLeaks(t)

	// Listen, then serve later (the init drops privileges in between), and
	// Serve's stop.
	r, err := relay.Listen(relay.Config{SocketPath: "/nonexistent.sock", ListenIP: sandboxSide})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.Serve(ctx)
	r.Serve(ctx)
	c, err := net.Dial("tcp4", r.ProxyAddr())
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || relay.IsTimeout(err) {
		t.Errorf("relay without a proxy socket: %v, want closed", err)
	}
	cancel()
	r.Close()
	checkNoLeaks(t)
}

func TestServeRelay(t *testing.T) {
	p := startProxy(t, Config{})
	// Port 0: any free port on 127.0.0.1.
	stop, err := relay.Serve(context.Background(), 0, nil, p.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	stop()
	stop()
	p.Close()
	checkNoLeaks(t)
}
