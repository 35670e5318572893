package egress

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkHTTPSGET is a 1 KB HTTPS GET with a bearer stand-in through the
// proxy: "tunnel" to a host the proxy does not inspect (the TLS is end to
// end), "terminated" to a credential's host (the proxy terminates TLS,
// swaps in the value and opens TLS upstream). Keep-alive and new
// connections both.
func BenchmarkHTTPSGET(b *testing.B) {
	body := strings.Repeat("x", 1024)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }))
	b.Cleanup(srv.Close)
	port := strconv.Itoa(portOf(b, srv.URL))
	ca, err := NewCA("bench", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	roots.AppendCertsFromPEM(ca.CertPEM())
	for _, inspected := range []bool{false, true} {
		for _, keep := range []bool{true, false} {
			name := "tunnel"
			if inspected {
				name = "terminated"
			}
			b.Run(name+"/"+variant(keep), func(b *testing.B) {
				cfg := Config{
					Rules:         mustRules(b, []string{"example.com:" + port}, nil, nil),
					Resolver:      hosts(b, "example.com 127.0.0.1"),
					CA:            ca,
					UpstreamRoots: roots,
					allowAddrs:    []netip.Addr{loopback},
				}
				if inspected {
					cfg.Credentials = []Credential{{Name: "T", StandIn: testStandIn, Value: testSecret, Hosts: []string{"example.com"}}}
				}
				p := startProxy(b, cfg)
				c := proxyClient(p, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: !keep})
				c.Transport = bearer{c.Transport}
				benchGet(b, c, "https://example.com:"+port+"/")
			})
		}
	}
}

// bearer adds the stand-in as a bearer token.
type bearer struct{ rt http.RoundTripper }

func (t bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+testStandIn)
	return t.rt.RoundTrip(r)
}
