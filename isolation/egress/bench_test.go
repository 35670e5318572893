package egress

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The benchmarks measure what the proxy adds to a 1 KB GET over loopback:
// direct, through the proxy's Unix socket (the host half alone), and
// through relay + socket + proxy (the path a sandboxed tool takes). The
// "keepalive" variants reuse connections; "newconn" ones open a fresh
// connection (and, through the proxy, a fresh decision and upstream dial)
// per request.

func benchServer(b *testing.B) (*httptest.Server, int) {
	body := strings.Repeat("x", 1024)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body)
	}))
	b.Cleanup(srv.Close)
	return srv, portOf(b, srv.URL)
}

func benchGet(b *testing.B, c *http.Client, target string) {
	b.Helper()
	b.ReportAllocs()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		resp, err := c.Get(target)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n != 1024 {
			b.Fatalf("read %d bytes", n)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	// The median is what `make bench` reports: one slow outlier must not
	// move it.
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	c.CloseIdleConnections()
}

// webProxy is a proxy that lets web.example.test (127.0.0.1) through on
// port and nothing else.
func webProxy(t testing.TB, port int) *Proxy {
	return startProxy(t, Config{
		Rules:      mustRules(t, []string{"web.example.test:" + strconv.Itoa(port)}, nil, nil),
		Resolver:   hosts(t, "web.example.test 127.0.0.1"),
		allowAddrs: []netip.Addr{loopback},
	})
}

func BenchmarkDirectGET(b *testing.B) {
	for _, keep := range []bool{true, false} {
		b.Run(variant(keep), func(b *testing.B) {
			srv, _ := benchServer(b)
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: !keep}}
			benchGet(b, c, srv.URL+"/")
		})
	}
}

func BenchmarkProxiedGET(b *testing.B) {
	for _, keep := range []bool{true, false} {
		b.Run(variant(keep), func(b *testing.B) {
			_, port := benchServer(b)
			p := webProxy(b, port)
			c := proxyClient(p, &http.Transport{DisableKeepAlives: !keep})
			benchGet(b, c, "http://web.example.test:"+strconv.Itoa(port)+"/")
		})
	}
}

func BenchmarkRelayedGET(b *testing.B) {
	for _, keep := range []bool{true, false} {
		b.Run(variant(keep), func(b *testing.B) {
			_, port := benchServer(b)
			p := webProxy(b, port)
			r := startRelay(b, p.SocketPath())
			c := &http.Client{Transport: &http.Transport{
				DisableKeepAlives: !keep,
				Proxy:             http.ProxyURL(&url.URL{Scheme: "http", Host: r.ProxyAddr()}),
			}}
			benchGet(b, c, "http://web.example.test:"+strconv.Itoa(port)+"/")
		})
	}
}

func variant(keep bool) string {
	if keep {
		return "keepalive"
	}
	return "newconn"
}
