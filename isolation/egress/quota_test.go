package egress

import (
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// A host limited to N requests gets N, then 429s recorded as
// QuotaExceeded: over plain HTTP, over HTTPS the proxy terminates
// (counted per request), and over an opaque tunnel (counted per
// connection). A window across runs holds across proxies sharing the
// directory.
func TestQuotas(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer plain.Close()
	up := startTLSUpstream(t)
	ca, err := NewCA("quota-run", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(up.srv.Certificate())
	pport, tport := itoa(portOf(t, plain.URL)), itoa(portOf(t, up.srv.URL))
	dir := t.TempDir()
	cfg := func() Config {
		return Config{
			Rules:         mustRules(t, []string{"web.test:" + pport, "example.com:" + tport, "other.example.com:" + tport}, nil, nil),
			Resolver:      hosts(t, "web.test 127.0.0.1", "example.com 127.0.0.1", "other.example.com 127.0.0.1"),
			HTTPRules:     []HTTPRule{{Host: "example.com"}},
			CA:            ca,
			UpstreamRoots: roots,
			allowAddrs:    []netip.Addr{loopback},
			QuotaDir:      dir,
			Quotas: []Quota{
				{Host: "web.test", Requests: 3, Window: time.Minute, Rule: "quotas[0]"},
				{Host: "example.com", Requests: 2, Rule: "quotas[1]"},
				{Host: "other.example.com", Requests: 1, Rule: "quotas[2]"},
			},
		}
	}
	codes := func(c *http.Client, url string, n int) []int {
		var out []int
		for i := 0; i < n; i++ {
			resp, err := c.Get(url)
			if err != nil {
				out = append(out, 0)
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			out = append(out, resp.StatusCode)
		}
		return out
	}
	p := startProxy(t, cfg())
	c := clientTrusting(p, ca)
	if got := codes(c, "http://web.test:"+pport+"/", 5); !slices.Equal(got, []int{200, 200, 200, 429, 429}) {
		t.Errorf("plain HTTP: %v", got)
	}
	if got := codes(c, "https://example.com:"+tport+"/", 4); !slices.Equal(got, []int{200, 200, 429, 429}) {
		t.Errorf("terminated HTTPS: %v", got)
	}
	// other.example.com's TLS passes through: the first tunnel is
	// counted (its TLS fails: the client trusts the run CA alone), the
	// second is refused at CONNECT.
	resp, _, _ := rawConnect(t, p, "other.example.com:"+tport)
	resp2, _, _ := rawConnect(t, p, "other.example.com:"+tport)
	if resp.StatusCode != 200 || resp2.StatusCode != 429 {
		t.Errorf("opaque tunnels: %d then %d, want 200 then 429", resp.StatusCode, resp2.StatusCode)
	}
	p.Close()
	n := 0
	for _, r := range p.Records() {
		if r.Verdict == QuotaExceeded {
			n++
			if !strings.Contains(r.Reason, "quotas[") {
				t.Errorf("record %+v does not name the rule", r)
			}
		}
	}
	if n != 5 {
		t.Errorf("%d records of QuotaExceeded, want 5: %+v", n, p.Records())
	}
	// A new run shares the window of web.test, not the per-run caps.
	p2 := startProxy(t, cfg())
	c2 := clientTrusting(p2, ca)
	if got := codes(c2, "http://web.test:"+pport+"/", 1); !slices.Equal(got, []int{429}) {
		t.Errorf("web.test in the next run: %v, want 429 (3 a minute across runs)", got)
	}
	if got := codes(c2, "https://example.com:"+tport+"/", 1); !slices.Equal(got, []int{200}) {
		t.Errorf("example.com in the next run: %v, want 200 (its cap is per run)", got)
	}
}

// Concurrent runs sharing a window count each request once.
func TestQuotaWindowUnderConcurrency(t *testing.T) {
	qs := quotas{list: []Quota{{Host: "h", Requests: 50, Window: time.Hour, Rule: "q"}}, dir: t.TempDir()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := quotas{list: qs.list, dir: qs.dir} // another run's proxy
			for i := 0; i < 20; i++ {
				ok, _, err := own.try(0, 1, 0, time.Now())
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					granted++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if granted != 50 {
		t.Errorf("%d granted across 8 runs, want exactly 50", granted)
	}
}
