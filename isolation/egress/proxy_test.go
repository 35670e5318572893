package egress

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
	"github.com/sandboxed-dev/sandboxed/isolation/egress/relay"
)

var loopback = netip.MustParseAddr("127.0.0.1")

// socketPath returns a short socket path in a fresh private directory
// (t.TempDir can exceed the 107 bytes a socket address holds).
func socketPath(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "egress")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "proxy.sock")
}

// hosts builds a test resolver from "name ip" lines.
func hosts(t testing.TB, lines ...string) *HostsResolver {
	t.Helper()
	h, err := ParseHostsFile(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// startProxy starts a proxy that closes (and is leak-checked) at cleanup.
func startProxy(t testing.TB, cfg Config) *Proxy {
	t.Helper()
	if cfg.SocketPath == "" {
		cfg.SocketPath = socketPath(t)
	}
	p, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func portOf(t testing.TB, rawURL string) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func dialProxy(t testing.TB, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", p.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawConnect sends a CONNECT and returns the response and the connection.
func rawConnect(t testing.TB, p *Proxy, target string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c := dialProxy(t, p)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic c2VjcmV0\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	return resp, c, br
}

// proxyClient is an http.Client that reaches every proxy through p's
// socket.
func proxyClient(p *Proxy, base *http.Transport) *http.Client {
	var tr *http.Transport
	if base != nil {
		tr = base.Clone()
	} else {
		tr = &http.Transport{}
	}
	tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy.invalid"})
	tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", p.SocketPath())
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// leakedGoroutines lists goroutines running code of this package (test
// files excluded).
func leakedGoroutines() []string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, line := range strings.Split(g, "\n") {
			line = strings.TrimSpace(line)
			if strings.Contains(line, "/isolation/egress/") && strings.Contains(line, ".go:") && !strings.Contains(line, "_test.go:") {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// checkNoLeaks waits up to two seconds for every goroutine of the package
// to end.
func checkNoLeaks(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		l := leakedGoroutines()
		if len(l) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left running:\n%s", len(l), strings.Join(l, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// findRecord waits (up to 5 s) for a record matching pred: a record is
// stored when its connection's handler ends, which may be just after the
// client saw the connection close.
func findRecord(t testing.TB, p *Proxy, pred func(Record) bool) Record {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, r := range p.Records() {
			if pred(r) {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no matching record in %+v", p.Records())
			return Record{}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConnectTLSEndToEnd(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Authorization") != "" {
			t.Error("Proxy-Authorization reached the origin")
		}
		io.WriteString(w, "hello over tls")
	}))
	defer srv.Close()
	port := portOf(t, srv.URL)
	p := startProxy(t, Config{
		Rules:      mustRules(t, []string{"api.example.test:" + strconv.Itoa(port)}, nil, nil),
		Resolver:   hosts(t, "api.example.test 127.0.0.1"),
		allowAddrs: []netip.Addr{loopback},
	})
	base := srv.Client().Transport.(*http.Transport)
	c := proxyClient(p, base)
	c.Transport.(*http.Transport).TLSClientConfig.ServerName = "example.com"
	resp, err := c.Get(fmt.Sprintf("https://api.example.test:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hello over tls" {
		t.Fatalf("body = %q", body)
	}
	c.CloseIdleConnections()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	r := findRecord(t, p, func(r Record) bool { return r.Protocol == ProtoConnect })
	if r.Host != "api.example.test" || r.Port != port || r.Verdict != Allow || r.Addr != "127.0.0.1:"+strconv.Itoa(port) ||
		r.BytesUp == 0 || r.BytesDown == 0 || r.Error != "" || r.Start.IsZero() {
		t.Errorf("record = %+v", r)
	}
	if _, err := os.Stat(p.SocketPath()); !os.IsNotExist(err) {
		t.Errorf("socket file still there after Close: %v", err)
	}
	checkNoLeaks(t)
}

func TestConnectRefusals(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	port := portOf(t, srv.URL)
	p := startProxy(t, Config{
		Rules: mustRules(t,
			[]string{"*", "local.example.test:" + strconv.Itoa(port), "meta.example.test", "127.0.0.1", "169.254.169.254", "metadata.google.internal", "mixed.example.test", "blocked.example.test"},
			[]string{"blocked.example.test", "203.0.113.66"}, nil),
		Resolver: hosts(t,
			"local.example.test 127.0.0.1",
			"meta.example.test 169.254.169.254",
			"mapped.example.test ::ffff:10.0.0.1",
			"mixed.example.test 192.0.2.1 10.0.0.5",
			"metadata.google.internal 192.0.2.9",
			"denied-addr.example.test 203.0.113.66"),
	})
	tests := []struct {
		target string
		code   int
		body   []string
	}{
		{"local.example.test:" + strconv.Itoa(port), 403, []string{"resolves to 127.0.0.1", "loopback", "network:localhost:PORT"}},
		{"meta.example.test:443", 403, []string{"169.254.169.254", "cloud metadata"}},
		{"mapped.example.test:443", 403, []string{"10.0.0.1", "private"}},
		{"mixed.example.test:443", 403, []string{"10.0.0.5", "private"}},
		{"127.0.0.1:443", 403, []string{"127.0.0.1 is a refused address (loopback)"}},
		{"[::ffff:127.0.0.1]:443", 403, []string{"loopback"}},
		{"169.254.169.254:80", 403, []string{"cloud metadata"}},
		{"metadata.google.internal:80", 403, []string{"cloud metadata endpoint"}},
		{"blocked.example.test:443", 403, []string{"denied by the operator's policy"}},
		{"denied-addr.example.test:443", 403, []string{"203.0.113.66", "denied by the operator's policy"}},
		{"192.0.2.1:443", 403, []string{"no permission grants 192.0.2.1:443", "network:external:192.0.2.1:443"}},
		{"other.example.test:8443", 403, []string{"refused CONNECT other.example.test:8443", "network:external:other.example.test:8443"}},
		{"missing.example.test:443", 502, []string{"resolve missing.example.test"}},
		{"no-port.example.test", 400, []string{"malformed CONNECT target"}},
	}
	for _, tt := range tests {
		resp, _, br := rawConnect(t, p, tt.target)
		body, _ := io.ReadAll(br)
		if resp.StatusCode != tt.code {
			t.Errorf("CONNECT %s: status %d, want %d (%s)", tt.target, resp.StatusCode, tt.code, body)
			continue
		}
		for _, s := range tt.body {
			if !strings.Contains(string(body), s) {
				t.Errorf("CONNECT %s: body %q does not contain %q", tt.target, body, s)
			}
		}
	}
	// Give the handlers a moment to store their records.
	deadline := time.Now().Add(2 * time.Second)
	for len(p.Records()) < len(tests) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	for _, r := range p.Records() {
		if r.Verdict != Deny && r.Error == "" {
			t.Errorf("record %+v: want deny or an error", r)
		}
		if r.Addr != "" {
			t.Errorf("record %+v: dialed although refused", r)
		}
	}
}

func TestPlainHTTPForward(t *testing.T) {
	var mu sync.Mutex
	var seen []*http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-Echo", string(body))
		fmt.Fprintf(w, "path=%s host=%s", r.URL.RequestURI(), r.Host)
	}))
	defer srv.Close()
	port := portOf(t, srv.URL)
	p := webProxy(t, port)

	// Two requests on one client connection, with hop-by-hop headers and
	// proxy credentials that must not reach the origin.
	c := dialProxy(t, p)
	br := bufio.NewReader(c)
	target := fmt.Sprintf("http://web.example.test:%d", port)
	for i, path := range []string{"/a?x=1", "/b"} {
		body := "payload" + strconv.Itoa(i)
		fmt.Fprintf(c, "POST %s%s HTTP/1.1\r\nHost: spoofed.example\r\nProxy-Authorization: Basic c2VjcmV0\r\n"+
			"Proxy-Connection: keep-alive\r\nConnection: X-Secret\r\nX-Secret: 1\r\nContent-Length: %d\r\n\r\n%s",
			target, path, len(body), body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := fmt.Sprintf("path=%s host=web.example.test:%d", path, port)
		if resp.StatusCode != 200 || string(got) != want || resp.Header.Get("X-Echo") != body {
			t.Fatalf("response %d %q (echo %q), want %q", resp.StatusCode, got, resp.Header.Get("X-Echo"), want)
		}
		if resp.Header.Get("Keep-Alive") != "" {
			t.Error("hop-by-hop response header Keep-Alive was forwarded")
		}
	}
	mu.Lock()
	for _, r := range seen {
		for _, h := range []string{"Proxy-Authorization", "Proxy-Connection", "X-Secret", "User-Agent"} {
			if v := r.Header.Get(h); v != "" {
				t.Errorf("origin saw %s: %q", h, v)
			}
		}
	}
	if len(seen) != 2 {
		t.Errorf("origin saw %d requests, want 2", len(seen))
	}
	mu.Unlock()

	// A standard client through the proxy, then a refused target.
	hc := proxyClient(p, nil)
	resp, err := hc.Get(target + "/c")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	resp, err = hc.Get(fmt.Sprintf("http://web.example.test:%d/", port+1))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(body), "network:external:web.example.test:"+strconv.Itoa(port+1)) {
		t.Errorf("refused forward: %d %q", resp.StatusCode, body)
	}
	if resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("403 content type %q", resp.Header.Get("Content-Type"))
	}
	// Origin-form requests are not proxy requests.
	c2 := dialProxy(t, p)
	fmt.Fprintf(c2, "GET / HTTP/1.1\r\nHost: web.example.test\r\n\r\n")
	resp, err = http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil || resp.StatusCode != 400 {
		t.Errorf("origin-form request: %v %v", resp, err)
	}
	hc.CloseIdleConnections()
	c.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	var allowed int
	for _, r := range p.Records() {
		if r.Verdict == Allow {
			allowed++
			if r.Protocol != ProtoHTTP || r.BytesUp == 0 || r.BytesDown == 0 {
				t.Errorf("record %+v", r)
			}
		}
	}
	// The first connection's two requests share one upstream and record.
	if allowed != 2 {
		t.Errorf("%d allowed records, want 2: %+v", allowed, p.Records())
	}
	checkNoLeaks(t)
}

func TestExpectContinue(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}))
	defer srv.Close()
	port := portOf(t, srv.URL)
	p := webProxy(t, port)
	c := dialProxy(t, p)
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "PUT http://web.example.test:%d/ HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", port)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, "100 Continue") {
		t.Fatalf("first line %q, %v", line, err)
	}
	br.ReadString('\n')
	io.WriteString(c, "hello")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "hello" {
		t.Errorf("body %q", b)
	}
}

// socksConnect performs a SOCKS5 handshake for the given address and
// returns the reply code.
func socksConnect(t testing.TB, c net.Conn, atyp byte, addr []byte, port int) byte {
	t.Helper()
	if _, err := c.Write([]byte{5, 1, 0}); err != nil {
		t.Fatal(err)
	}
	var m [2]byte
	if _, err := io.ReadFull(c, m[:]); err != nil || m != [2]byte{5, 0} {
		t.Fatalf("method reply %v, %v", m, err)
	}
	req := []byte{5, 1, 0, atyp}
	if atyp == socksAtypDomain {
		req = append(req, byte(len(addr)))
	}
	req = append(req, addr...)
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	var rep [10]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil {
		t.Fatal(err)
	}
	return rep[1]
}

func TestSOCKS5(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "via socks")
	}))
	defer srv.Close()
	port := portOf(t, srv.URL)
	p := startProxy(t, Config{
		Rules: mustRules(t, []string{"web.example.test:" + strconv.Itoa(port), "127.0.0.1:" + strconv.Itoa(port),
			"meta.example.test"}, nil, nil),
		Resolver:   hosts(t, "web.example.test 127.0.0.1", "meta.example.test 169.254.169.254"),
		allowAddrs: []netip.Addr{loopback},
	})
	get := func(c net.Conn) string {
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: web.example.test\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	// Host name.
	c := dialProxy(t, p)
	if code := socksConnect(t, c, socksAtypDomain, []byte("web.example.test"), port); code != socksSucceeded {
		t.Fatalf("hostname: reply %d", code)
	}
	if got := get(c); got != "via socks" {
		t.Errorf("hostname: body %q", got)
	}
	// IPv4 literal with its own grant.
	c = dialProxy(t, p)
	if code := socksConnect(t, c, socksAtypIPv4, []byte{127, 0, 0, 1}, port); code != socksSucceeded {
		t.Fatalf("ipv4: reply %d", code)
	}
	if got := get(c); got != "via socks" {
		t.Errorf("ipv4: body %q", got)
	}
	// Refusals: not granted (IPv6, documentation range), refused address,
	// unsupported command.
	ip6 := netip.MustParseAddr("2001:db8::7").As16()
	if code := socksConnect(t, dialProxy(t, p), socksAtypIPv6, ip6[:], 443); code != socksNotAllowed {
		t.Errorf("ipv6 not granted: reply %d", code)
	}
	if code := socksConnect(t, dialProxy(t, p), socksAtypDomain, []byte("meta.example.test"), 80); code != socksNotAllowed {
		t.Errorf("metadata: reply %d", code)
	}
	if code := socksConnect(t, dialProxy(t, p), socksAtypDomain, []byte("web.example.test"), port+1); code != socksNotAllowed {
		t.Errorf("wrong port: reply %d", code)
	}
	c = dialProxy(t, p)
	c.Write([]byte{5, 1, 0})
	io.ReadFull(c, make([]byte, 2))
	c.Write([]byte{5, 2, 0, 1, 192, 0, 2, 1, 0, 80}) // BIND
	var rep [10]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil || rep[1] != socksCmdNotSupported {
		t.Errorf("bind: reply %v, %v", rep, err)
	}
	// No acceptable method.
	c = dialProxy(t, p)
	c.Write([]byte{5, 1, 2})
	var m [2]byte
	if _, err := io.ReadFull(c, m[:]); err != nil || m[1] != socksNoAcceptable {
		t.Errorf("user/pass only: reply %v, %v", m, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	r := findRecord(t, p, func(r Record) bool { return r.Host == "2001:db8::7" })
	if r.Verdict != Deny || r.Port != 443 || r.Protocol != ProtoSOCKS5 {
		t.Errorf("ipv6 record %+v", r)
	}
	r = findRecord(t, p, func(r Record) bool { return r.Host == "web.example.test" && r.Verdict == Allow })
	if r.BytesUp == 0 || r.BytesDown == 0 {
		t.Errorf("socks record %+v", r)
	}
	checkNoLeaks(t)
}

// TestSOCKS5IPv6Connect needs ::1, which a container may lack; CI
// machines have it, so under CI its absence is a failure, not a pass.
func TestSOCKS5IPv6Connect(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	testenv.Need(t, "an IPv6 loopback address (::1)", err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			io.WriteString(c, "v6")
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	p := startProxy(t, Config{
		Rules:      mustRules(t, []string{"[::1]:" + strconv.Itoa(port)}, nil, nil),
		allowAddrs: []netip.Addr{netip.MustParseAddr("::1")},
	})
	c := dialProxy(t, p)
	ip := netip.IPv6Loopback().As16()
	if code := socksConnect(t, c, socksAtypIPv6, ip[:], port); code != socksSucceeded {
		t.Fatalf("reply %d", code)
	}
	b, _ := io.ReadAll(c)
	if string(b) != "v6" {
		t.Errorf("got %q", b)
	}
}

func TestConcurrentConnections(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 1024))
	}))
	defer srv.Close()
	port := portOf(t, srv.URL)
	p := startProxy(t, Config{
		Rules:      mustRules(t, []string{"api.example.test:" + strconv.Itoa(port)}, nil, nil),
		Resolver:   hosts(t, "api.example.test 127.0.0.1"),
		allowAddrs: []netip.Addr{loopback},
	})
	const n = 200
	base := srv.Client().Transport.(*http.Transport)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One client each: 200 distinct tunnels open at once.
			c := proxyClient(p, base)
			tr := c.Transport.(*http.Transport)
			tr.TLSClientConfig.ServerName = "example.com"
			defer tr.CloseIdleConnections()
			<-start
			resp, err := c.Get(fmt.Sprintf("https://api.example.test:%d/", port))
			if err != nil {
				errs <- err
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || len(b) != 1024 {
				errs <- fmt.Errorf("read %d bytes: %v", len(b), err)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := len(p.Records()); got != n {
		t.Errorf("%d records, want %d", got, n)
	}
	for _, r := range p.Records() {
		if r.Verdict != Allow || r.Error != "" {
			t.Errorf("record %+v", r)
			break
		}
	}
	checkNoLeaks(t)
}

func TestCloseWithLiveConnections(t *testing.T) {
	// An origin that accepts and never answers, and a client that never
	// finishes its request: Close must still end everything.
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	p := startProxy(t, Config{
		Rules:      mustRules(t, []string{"127.0.0.1:" + strconv.Itoa(port)}, nil, nil),
		allowAddrs: []netip.Addr{loopback},
	})
	resp, c, _ := rawConnect(t, p, "127.0.0.1:"+strconv.Itoa(port))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	half := dialProxy(t, p)
	io.WriteString(half, "GET http://x")
	socks := dialProxy(t, p)
	socks.Write([]byte{5})
	time.Sleep(50 * time.Millisecond)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("tunnel still open after Close")
	}
	if _, err := os.Stat(p.SocketPath()); !os.IsNotExist(err) {
		t.Errorf("socket file left: %v", err)
	}
	if _, err := net.Dial("unix", p.SocketPath()); err == nil {
		t.Error("proxy still accepts after Close")
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	checkNoLeaks(t)
	mu.Lock()
	for _, c := range held {
		c.Close()
	}
	mu.Unlock()
}

func TestContextCancelStopsServing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p, err := Start(ctx, Config{SocketPath: socketPath(t)})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.Now().Add(2 * time.Second)
	for {
		c, err := net.Dial("unix", p.SocketPath())
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("still accepting after the context ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	checkNoLeaks(t)
}

func TestStartErrors(t *testing.T) {
	if _, err := Start(context.Background(), Config{}); err == nil {
		t.Error("empty socket path accepted")
	}
	if _, err := Start(context.Background(), Config{SocketPath: "/tmp/" + strings.Repeat("x", 120)}); err == nil {
		t.Error("overlong socket path accepted")
	}
	path := socketPath(t)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(context.Background(), Config{SocketPath: path}); err == nil {
		t.Error("existing file at the socket path accepted")
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the existing file was removed: %v", err)
	}
	p := startProxy(t, Config{})
	fi, err := os.Stat(p.SocketPath())
	if err != nil || fi.Mode().Perm() != 0o666 || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("socket mode %v, %v", fi.Mode(), err)
	}
}

func TestMaxConns(t *testing.T) {
	p := startProxy(t, Config{MaxConns: 1})
	first := dialProxy(t, p)
	first.Write([]byte("G")) // keeps its handler waiting for the request
	time.Sleep(50 * time.Millisecond)
	second := dialProxy(t, p)
	second.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := second.Read(make([]byte, 1)); err == nil || relay.IsTimeout(err) {
		t.Errorf("second connection: %v, want closed", err)
	}
	r := findRecord(t, p, func(r Record) bool { return strings.Contains(r.Reason, "too many") })
	if r.Verdict != Deny {
		t.Errorf("record %+v", r)
	}
}

func TestMaxRecords(t *testing.T) {
	p := startProxy(t, Config{MaxRecords: 2})
	for i := 0; i < 4; i++ {
		resp, _, _ := rawConnect(t, p, "nope.example.test:443")
		if resp.StatusCode != 403 {
			t.Fatal(resp.Status)
		}
	}
	p.Close()
	if len(p.Records()) != 2 || p.Dropped() != 2 {
		t.Errorf("%d records, %d dropped", len(p.Records()), p.Dropped())
	}
}

func TestRecordJSON(t *testing.T) {
	b, err := json.Marshal(Record{Protocol: ProtoConnect, Host: "h", Port: 443, Verdict: Allow, Reason: "r", BytesUp: 1, BytesDown: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"host":"h"`, `"port":443`, `"verdict":"allow"`, `"reason":"r"`, `"bytes_up":1`, `"bytes_down":2`, `"start":`, `"duration_ms":0`, `"protocol":"connect"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("%s lacks %s", b, key)
		}
	}
}

func TestIdleTimeout(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	port := portOf(t, srv.URL)
	p := startProxy(t, Config{
		Rules:       mustRules(t, []string{"127.0.0.1:" + strconv.Itoa(port)}, nil, nil),
		allowAddrs:  []netip.Addr{loopback},
		IdleTimeout: 100 * time.Millisecond,
	})
	resp, c, _ := rawConnect(t, p, "127.0.0.1:"+strconv.Itoa(port))
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || relay.IsTimeout(err) {
		t.Errorf("idle tunnel: %v, want closed by the proxy", err)
	}
}

func TestIdleTimeoutSparesOneWayStreams(t *testing.T) {
	// The origin sends a byte every 40 ms for 800 ms while the client
	// sends nothing: the connection is busy, so a 400 ms idle timeout must
	// not cut it. (copyActive's own test covers the logic without timing.)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		for i := 0; i < 20; i++ {
			if _, err := c.Write([]byte{'x'}); err != nil {
				return
			}
			time.Sleep(40 * time.Millisecond)
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	p := startProxy(t, Config{
		Rules:       mustRules(t, []string{"127.0.0.1:" + strconv.Itoa(port)}, nil, nil),
		allowAddrs:  []netip.Addr{loopback},
		IdleTimeout: 400 * time.Millisecond,
	})
	resp, _, br := rawConnect(t, p, "127.0.0.1:"+strconv.Itoa(port))
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	b, err := io.ReadAll(br)
	if err != nil || len(b) != 20 {
		t.Errorf("read %d bytes, %v; want 20", len(b), err)
	}
}

func TestForwardRefusesLoopbackName(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("origin reached")
	}))
	defer srv.Close()
	port := portOf(t, srv.URL)
	p := startProxy(t, Config{
		Rules:    mustRules(t, []string{"*:" + strconv.Itoa(port)}, nil, nil),
		Resolver: hosts(t, "local.example.test 127.0.0.1", "meta.example.test 169.254.169.254"),
	})
	for _, name := range []string{"local.example.test", "meta.example.test", "localhost"} {
		c := dialProxy(t, p)
		fmt.Fprintf(c, "GET http://%s:%d/ HTTP/1.1\r\nHost: x\r\n\r\n", name, port)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if name == "localhost" {
			// Refused by name before any resolver is asked: it is this
			// machine (netrule.HostClass), as the policy says.
			if resp.StatusCode != 403 || !strings.Contains(string(b), "loopback") {
				t.Errorf("%s: %d %q", name, resp.StatusCode, b)
			}
			continue
		}
		if resp.StatusCode != 403 || !strings.Contains(string(b), "refused address") {
			t.Errorf("%s: %d %q", name, resp.StatusCode, b)
		}
	}
}

// FuzzProxyInput feeds arbitrary bytes to a proxy with no grants: whatever
// the input, nothing is ever allowed and the proxy neither panics nor
// leaks.
func FuzzProxyInput(f *testing.F) {
	for _, seed := range []string{
		"CONNECT a.example:443 HTTP/1.1\r\n\r\n",
		"GET http://a.example/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\n",
		"\x05\x01\x00\x05\x01\x00\x03\x09a.example\x01\xbb",
		"\x05\x01\x00\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x50",
		"\x05\x01\x00\x05\x01\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x50",
		"\x05\x00",
		"\x05\xff\x00",
		"\x00L\x01\x00\x50",
		"\x00L\x02\x00\x50",
		"\x00",
		"\x16\x03\x01\x00\x05hello",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"CONNECT [::1]:80 HTTP/1.1\r\n\r\n",
		"GET http://[fe80::1%25eth0]/ HTTP/1.1\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	p, err := Start(context.Background(), Config{SocketPath: socketPath(f), HandshakeTimeout: 200 * time.Millisecond})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { p.Close() })
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := net.Dial("unix", p.SocketPath())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(in)
		c.(*net.UnixConn).CloseWrite()
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		io.Copy(io.Discard, c)
		for _, r := range p.Records() {
			if r.Verdict == Allow || r.Addr != "" {
				t.Fatalf("allowed with no grants: %+v", r)
			}
		}
	})
}

// timeoutReader returns a timeout error on every read after its data.
type timeoutReader struct{ data []byte }

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func (r *timeoutReader) Read(b []byte) (int, error) {
	if len(r.data) > 0 {
		n := copy(b, r.data)
		r.data = r.data[n:]
		return n, nil
	}
	return 0, timeoutErr{}
}

func TestCopyActiveForgivesTimeoutsWhileBusy(t *testing.T) {
	var last atomic.Int64
	// The other direction was active just now: timeouts are retried until
	// the shared clock runs out.
	last.Store(time.Now().UnixNano())
	var out strings.Builder
	start := time.Now()
	err := relay.CopyActive(&out, &timeoutReader{data: []byte("abc")}, 50*time.Millisecond, &last)
	if !relay.IsTimeout(err) || out.String() != "abc" || time.Since(start) < 40*time.Millisecond {
		t.Errorf("busy: %v, %q after %v", err, out.String(), time.Since(start))
	}
	// Idle for longer than the limit: the first timeout ends the copy.
	last.Store(time.Now().Add(-time.Second).UnixNano())
	if err := relay.CopyActive(io.Discard, &timeoutReader{}, 50*time.Millisecond, &last); !relay.IsTimeout(err) {
		t.Errorf("idle: %v", err)
	}
}

// rebinder answers the first lookup with first and every later one with
// later, counting lookups.
type rebinder struct {
	mu           sync.Mutex
	n            int
	first, later net.IP
}

func (r *rebinder) LookupIPAddr(_ context.Context, _ string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if r.n == 1 {
		return []net.IPAddr{{IP: r.first}}, nil
	}
	return []net.IPAddr{{IP: r.later}}, nil
}

func TestNoSecondLookup(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "checked address")
	}))
	defer srv.Close()
	port := portOf(t, srv.URL)
	res := &rebinder{first: net.IPv4(127, 0, 0, 1), later: net.IPv4(169, 254, 169, 254)}
	p := startProxy(t, Config{
		Rules:      mustRules(t, []string{"rebind.example.test:" + strconv.Itoa(port)}, nil, nil),
		Resolver:   res,
		allowAddrs: []netip.Addr{loopback},
	})
	c := proxyClient(p, nil)
	for i := 0; i < 3; i++ { // one upstream connection, reused
		resp, err := c.Get(fmt.Sprintf("http://rebind.example.test:%d/", port))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "checked address" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, b)
		}
	}
	c.CloseIdleConnections()
	res.mu.Lock()
	n := res.n
	res.mu.Unlock()
	if n != 1 {
		t.Errorf("%d lookups, want 1", n)
	}
	// A new connection looks up again and gets the metadata address:
	// refused.
	resp, _, _ := rawConnect(t, p, fmt.Sprintf("rebind.example.test:%d", port))
	if resp.StatusCode != 403 {
		t.Errorf("rebound name: %s", resp.Status)
	}
}
