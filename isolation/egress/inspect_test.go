package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
)

const (
	testStandIn = "sandboxed-stand-in-20261123t220000-0123456789ab-1-token"
	testSecret  = "real-secret-value-42"
)

func testProxyForInspect() *Proxy {
	cfg := Config{
		Credentials: []Credential{{Name: "TOKEN", StandIn: testStandIn, Value: testSecret, Hosts: []string{"api.example.test", "*.up.example.test"}}},
		HTTPRules:   []HTTPRule{{Host: "rules.example.test", Methods: []string{"GET"}, Paths: []string{"/a/"}}},
	}
	return &Proxy{cfg: cfg}
}

func mustTarget(t *testing.T, h string) target {
	t.Helper()
	tg, err := netrule.ParseTarget(h)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func TestInspectRequest(t *testing.T) {
	basic := func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name     string
		host     string
		method   string
		url      string
		header   map[string]string
		verdict  Verdict // "" when allowed
		used     bool
		wantURL  string
		wantHdr  map[string]string
		contains string // in the refusal reason
	}{
		{name: "bearer to its host", host: "api.example.test", url: "/user",
			header: map[string]string{"Authorization": "Bearer " + testStandIn}, used: true,
			wantHdr: map[string]string{"Authorization": "Bearer " + testSecret}},
		{name: "basic to its host", host: "api.example.test", url: "/user",
			header: map[string]string{"Authorization": basic("x:" + testStandIn)}, used: true,
			wantHdr: map[string]string{"Authorization": basic("x:" + testSecret)}},
		{name: "custom header to a subdomain", host: "v1.up.example.test", url: "/",
			header: map[string]string{"X-Api-Key": testStandIn}, used: true,
			wantHdr: map[string]string{"X-Api-Key": testSecret}},
		{name: "query", host: "api.example.test", url: "/q?token=" + testStandIn + "&x=1", used: true,
			wantURL: "/q?token=" + testSecret + "&x=1"},
		{name: "path", host: "api.example.test", url: "/t/" + testStandIn + "/x", used: true,
			wantURL: "/t/" + testSecret + "/x"},
		{name: "no stand-in", host: "other.example.test", url: "/", header: map[string]string{"Authorization": "Bearer abc"}},
		{name: "bearer elsewhere", host: "other.example.test", url: "/",
			header: map[string]string{"Authorization": "Bearer " + testStandIn}, verdict: RefusedCredential, contains: "credential TOKEN"},
		{name: "basic elsewhere", host: "other.example.test", url: "/",
			header: map[string]string{"Authorization": basic(testStandIn + ":")}, verdict: RefusedCredential},
		{name: "query elsewhere", host: "other.example.test", url: "/?k=" + testStandIn, verdict: RefusedCredential},
		{name: "apex of a wildcard", host: "up.example.test", url: "/", header: map[string]string{"X": testStandIn}, verdict: RefusedCredential},
		{name: "rule allows", host: "rules.example.test", method: "GET", url: "/a/b"},
		{name: "rule refuses method", host: "rules.example.test", method: "POST", url: "/a/b", verdict: Deny, contains: "POST /a/b is not allowed"},
		{name: "rule refuses path", host: "rules.example.test", method: "GET", url: "/b/", verdict: Deny},
		{name: "rule refuses dot-dot", host: "rules.example.test", method: "GET", url: "/a/../b/", verdict: Deny, contains: "segments"},
		{name: "rule refuses escaped dot-dot", host: "rules.example.test", method: "GET", url: "/a/%2e%2e/b/", verdict: Deny},
		{name: "rule refuses escaped slash", host: "rules.example.test", method: "GET", url: "/a%2f..%2fb/", verdict: Deny},
		{name: "rule decodes escapes", host: "rules.example.test", method: "GET", url: "/%61/x"},
		{name: "no rule for host", host: "api.example.test", method: "DELETE", url: "/anything"},
	}
	p := testProxyForInspect()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = "GET"
			}
			req := httptest.NewRequest(method, "http://"+tt.host+tt.url, nil)
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			names, ref := p.inspectRequest(req, mustTarget(t, tt.host))
			if tt.verdict != "" {
				if ref == nil || ref.verdict != tt.verdict {
					t.Fatalf("refusal = %+v, want verdict %s", ref, tt.verdict)
				}
				if !strings.Contains(ref.reason, tt.contains) {
					t.Errorf("reason %q lacks %q", ref.reason, tt.contains)
				}
				if strings.Contains(ref.reason, testSecret) {
					t.Errorf("reason holds the secret: %q", ref.reason)
				}
				return
			}
			if ref != nil {
				t.Fatalf("refused: %s", ref.reason)
			}
			if (len(names) > 0) != tt.used {
				t.Errorf("used = %v, want %v", names, tt.used)
			}
			if tt.wantURL != "" && req.URL.RequestURI() != tt.wantURL {
				t.Errorf("url = %s, want %s", req.URL.RequestURI(), tt.wantURL)
			}
			for k, v := range tt.wantHdr {
				if got := req.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if carries(req, testStandIn) {
				t.Errorf("the stand-in is left in %v %v", req.URL, req.Header)
			}
		})
	}
}

func TestCheckHTTPRule(t *testing.T) {
	for _, bad := range []HTTPRule{
		{Host: "*"}, {Host: ""}, {Host: "a.test", Methods: []string{"get"}}, {Host: "a.test", Paths: []string{"a/"}},
		{Host: "a.test", Paths: []string{"/a/../b"}}, {Host: "a.test", Methods: []string{"GET /"}},
	} {
		if _, err := CheckHTTPRule(bad); err == nil {
			t.Errorf("CheckHTTPRule(%+v) accepted", bad)
		}
	}
	r, err := CheckHTTPRule(HTTPRule{Host: "API.Example.Test.", Methods: []string{"GET"}, Paths: []string{"/repos/"}})
	if err != nil || r.Host != "api.example.test" {
		t.Fatalf("CheckHTTPRule = %+v, %v", r, err)
	}
}

// FuzzSubstitute checks, for any request, that a request to the
// credential's host keeps no stand-in in the places the proxy looks at,
// and that a request to another host carrying it is always refused.
func FuzzSubstitute(f *testing.F) {
	f.Add("/p?q=STAND", "Bearer STAND", "x")
	f.Add("/STAND/x", "", "Basic "+base64.StdEncoding.EncodeToString([]byte("u:STAND")))
	f.Add("/%41?%zz", "STANDSTAND", "")
	p := testProxyForInspect()
	f.Fuzz(func(t *testing.T, path, auth, other string) {
		path = strings.ReplaceAll(path, "STAND", testStandIn)
		auth = strings.ReplaceAll(auth, "STAND", testStandIn)
		other = strings.ReplaceAll(other, "STAND", testStandIn)
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		u, err := url.ParseRequestURI(path)
		if err != nil {
			return
		}
		for _, host := range []string{"api.example.test", "elsewhere.example.test"} {
			req := &http.Request{Method: "GET", URL: &url.URL{Scheme: "http", Host: host, Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery},
				Host: host, Header: http.Header{}}
			req.Header["Authorization"] = []string{auth}
			req.Header["X-Other"] = []string{other}
			had := carries(req, testStandIn)
			_, ref := p.inspectRequest(req, mustTarget(t, host))
			switch {
			case host == "api.example.test" && ref != nil:
				t.Fatalf("refused a request to the credential's host: %s", ref.reason)
			case host == "api.example.test" && carries(req, testStandIn):
				t.Fatalf("stand-in left after substitution: %v %v", req.URL, req.Header)
			case host != "api.example.test" && had && (ref == nil || ref.verdict != RefusedCredential):
				t.Fatalf("a stand-in to another host was not refused: %v %v", req.URL, req.Header)
			case host != "api.example.test" && !had && ref != nil:
				t.Fatalf("refused a request without a stand-in: %s", ref.reason)
			}
		}
	})
}

// tlsUpstream is an HTTPS server on loopback that records what it got.
type tlsUpstream struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []*http.Request
	auth []string
}

func startTLSUpstream(t *testing.T) *tlsUpstream {
	t.Helper()
	u := &tlsUpstream{}
	u.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r)
		u.auth = append(u.auth, r.Header.Get("Authorization"))
		u.mu.Unlock()
		io.WriteString(w, "upstream saw "+r.Method+" "+r.URL.Path+" auth="+r.Header.Get("Authorization"))
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// clientTrusting is a client through p that trusts only ca.
func clientTrusting(p *Proxy, ca *CA) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	return proxyClient(p, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}})
}

func TestTerminateTLS(t *testing.T) {
	up := startTLSUpstream(t)
	ca, err := NewCA("test-run", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	upRoots := x509.NewCertPool()
	upRoots.AddCert(up.srv.Certificate())
	port := portOf(t, up.srv.URL)
	// httptest's certificate names example.com; the proxy verifies it.
	p := startProxy(t, Config{
		Rules:         mustRules(t, []string{"example.com:" + itoa(port), "other.example.com:" + itoa(port)}, nil, nil),
		Resolver:      hosts(t, "example.com 127.0.0.1", "other.example.com 127.0.0.1"),
		Credentials:   []Credential{{Name: "TOKEN", StandIn: testStandIn, Value: testSecret, Hosts: []string{"example.com"}}},
		HTTPRules:     []HTTPRule{{Host: "example.com", Methods: []string{"GET"}, Paths: []string{"/a/"}}},
		CA:            ca,
		UpstreamRoots: upRoots,
		allowAddrs:    []netip.Addr{loopback},
	})
	c := clientTrusting(p, ca)
	get := func(method, rawURL string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, rawURL, nil)
		req.Header.Set("Authorization", "Bearer "+testStandIn)
		resp, err := c.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	base := "https://example.com:" + itoa(port)
	// The upstream echoes the header: the sandbox sees the stand-in again.
	if code, body := get("GET", base+"/a/x"); code != 200 || !strings.Contains(body, "auth=Bearer "+testStandIn) || strings.Contains(body, testSecret) {
		t.Fatalf("GET /a/x = %d %q", code, body)
	}
	up.mu.Lock()
	if len(up.auth) != 1 || up.auth[0] != "Bearer "+testSecret {
		t.Errorf("upstream got Authorization %q, want the real value", up.auth)
	}
	up.mu.Unlock()
	if code, body := get("POST", base+"/a/x"); code != 403 || !strings.Contains(body, "not allowed") {
		t.Errorf("POST /a/x = %d %q", code, body)
	}
	if code, body := get("GET", base+"/b/"); code != 403 {
		t.Errorf("GET /b/ = %d %q", code, body)
	}
	// other.example.com is not inspected: the tunnel is end to end, so
	// the client (trusting only the run CA) cannot verify httptest's cert
	// — and the stand-in, if it were sent, would stay a stand-in.
	if code, _ := get("GET", "https://other.example.com:"+itoa(port)+"/"); code != 0 {
		t.Errorf("a tunnel to a host not inspected was terminated (code %d)", code)
	}
	up.mu.Lock()
	for _, a := range up.auth {
		if strings.Contains(a, testStandIn) {
			t.Errorf("upstream saw the stand-in: %q", a)
		}
	}
	n := len(up.seen)
	up.mu.Unlock()
	if n != 1 {
		t.Errorf("upstream got %d requests, want 1 (the refused ones must not reach it)", n)
	}
	p.Close()
	var refused, sent int
	for _, r := range p.Records() {
		if r.Verdict == Deny && strings.Contains(r.Reason, "not allowed") {
			refused++
		}
		if len(r.Credentials) == 1 && r.Credentials[0] == "TOKEN" {
			sent++
		}
		if strings.Contains(r.Reason+r.Error, testSecret) {
			t.Errorf("record holds the secret: %+v", r)
		}
	}
	if refused != 2 || sent != 1 {
		t.Errorf("records: %d refused by rules, %d with the credential; want 2 and 1: %+v", refused, sent, p.Records())
	}
}

func TestTerminateRefusesUntrustedUpstream(t *testing.T) {
	up := startTLSUpstream(t)
	ca, err := NewCA("test-run", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	port := portOf(t, up.srv.URL)
	p := startProxy(t, Config{
		Rules:         mustRules(t, []string{"example.com:" + itoa(port)}, nil, nil),
		Resolver:      hosts(t, "example.com 127.0.0.1"),
		Credentials:   []Credential{{Name: "TOKEN", StandIn: testStandIn, Value: testSecret, Hosts: []string{"example.com"}}},
		CA:            ca,
		UpstreamRoots: x509.NewCertPool(), // trusts nothing
		allowAddrs:    []netip.Addr{loopback},
	})
	resp, err := clientTrusting(p, ca).Get("https://example.com:" + itoa(port) + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), "certificate") {
		t.Errorf("got %d %q, want 502 naming the certificate", resp.StatusCode, b)
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.seen) != 0 {
		t.Errorf("an unverified upstream got %d requests", len(up.seen))
	}
}

func TestPlainHTTPCredentialAndRefusal(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Host+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	port := portOf(t, srv.URL)
	ca, _ := NewCA("r", time.Hour)
	p := startProxy(t, Config{
		Rules:       mustRules(t, []string{"good.test:" + itoa(port), "bad.test:" + itoa(port)}, nil, nil),
		Resolver:    hosts(t, "good.test 127.0.0.1", "bad.test 127.0.0.1"),
		Credentials: []Credential{{Name: "TOKEN", StandIn: testStandIn, Value: testSecret, Hosts: []string{"good.test"}}},
		CA:          ca,
		allowAddrs:  []netip.Addr{loopback},
	})
	c := proxyClient(p, nil)
	do := func(host string) int {
		req, _ := http.NewRequest("GET", "http://"+host+":"+itoa(port)+"/", nil)
		req.Header.Set("Authorization", "Bearer "+testStandIn)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := do("good.test"); code != 200 {
		t.Errorf("good.test: %d", code)
	}
	if code := do("bad.test"); code != 403 {
		t.Errorf("bad.test: %d, want 403", code)
	}
	p.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || !strings.HasSuffix(got[0], "Bearer "+testSecret) {
		t.Errorf("upstream got %q", got)
	}
	found := false
	for _, r := range p.Records() {
		found = found || (r.Verdict == RefusedCredential && r.Host == "bad.test")
	}
	if !found {
		t.Errorf("no refused-credential record: %+v", p.Records())
	}
}

func TestStartRefusesCredentialsWithoutCA(t *testing.T) {
	_, err := Start(context.Background(), Config{SocketPath: socketPath(t),
		Credentials: []Credential{{Name: "T", StandIn: "s-1", Value: "v", Hosts: []string{"a.test"}}}})
	if err == nil {
		t.Fatal("started without a CA")
	}
	_, err = Start(context.Background(), Config{SocketPath: socketPath(t), CA: &CA{},
		Credentials: []Credential{{Name: "T", StandIn: "s-1", Value: "v", Hosts: []string{"*"}}}})
	if err == nil {
		t.Fatal("started with a credential for every host")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A SOCKS5 tunnel to an inspected host is terminated like CONNECT: the
// HTTP rules cannot be bypassed with ALL_PROXY.
func TestSOCKS5IsInspected(t *testing.T) {
	up := startTLSUpstream(t)
	ca, err := NewCA("test-run", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	upRoots := x509.NewCertPool()
	upRoots.AddCert(up.srv.Certificate())
	port := portOf(t, up.srv.URL)
	p := startProxy(t, Config{
		Rules:         mustRules(t, []string{"example.com:" + itoa(port)}, nil, nil),
		Resolver:      hosts(t, "example.com 127.0.0.1"),
		Credentials:   []Credential{{Name: "TOKEN", StandIn: testStandIn, Value: testSecret, Hosts: []string{"example.com"}}},
		HTTPRules:     []HTTPRule{{Host: "example.com", Methods: []string{"GET"}}},
		CA:            ca,
		UpstreamRoots: upRoots,
		allowAddrs:    []netip.Addr{loopback},
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	do := func(method, host string) (int, string) {
		c := dialProxy(t, p)
		if code := socksConnect(t, c, socksAtypDomain, []byte("example.com"), port); code != 0 {
			t.Fatalf("SOCKS5 reply %d", code)
		}
		tc := tls.Client(c, &tls.Config{ServerName: "example.com", RootCAs: pool})
		raw := method + " /x HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + testStandIn + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
		if _, err := io.WriteString(tc, raw); err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tc)
		resp := string(b)
		code := 0
		if strings.HasPrefix(resp, "HTTP/1.1 ") && len(resp) > 12 {
			code, _ = strconv.Atoi(resp[9:12])
		}
		return code, resp
	}
	if code, resp := do("GET", "example.com"); code != 200 || !strings.Contains(resp, "auth=Bearer "+testStandIn) {
		t.Errorf("GET over SOCKS5 = %d %q", code, resp)
	}
	if code, resp := do("DELETE", "example.com"); code != 403 {
		t.Errorf("DELETE over SOCKS5 = %d %q", code, resp)
	}
	// Another Host inside the tunnel would let a shared front end route
	// the credential to another site.
	if code, resp := do("GET", "other.example"); code != 403 || !strings.Contains(resp, "Host") {
		t.Errorf("GET with another Host = %d %q", code, resp)
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.auth) != 1 || up.auth[0] != "Bearer "+testSecret {
		t.Errorf("upstream got %q", up.auth)
	}
}

func TestInspectedTunnelRefusesHTTP2Preface(t *testing.T) {
	ca, _ := NewCA("r", time.Hour)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	port := portOf(t, srv.URL)
	p := startProxy(t, Config{
		Rules:      mustRules(t, []string{"good.test:" + itoa(port)}, nil, nil),
		Resolver:   hosts(t, "good.test 127.0.0.1"),
		HTTPRules:  []HTTPRule{{Host: "good.test", Methods: []string{"GET"}}},
		CA:         ca,
		allowAddrs: []netip.Addr{loopback},
	})
	resp, c, br := rawConnect(t, p, "good.test:"+itoa(port))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	b, _ := io.ReadAll(br)
	if !strings.Contains(string(b), "403") {
		t.Errorf("an HTTP/2 preface got %q", b)
	}
}
