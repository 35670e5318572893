package egress

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
	"github.com/sandboxed-dev/sandboxed/isolation/egress/relay"
)

// TestRealClients runs curl and wget (when installed) with ProxyEnv
// against a relay and proxy, to pin down how they use the variables:
// curl uses http_proxy for http://, HTTPS_PROXY (CONNECT) for https://
// and ALL_PROXY (socks5h, names resolved by the proxy) when neither is
// set; wget uses http_proxy and https_proxy.
func TestRealClients(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "plain-ok")
	}))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "tls-ok")
	}))
	defer tlsSrv.Close()
	pp, tp := portOf(t, plain.URL), portOf(t, tlsSrv.URL)
	p := startProxy(t, Config{
		Rules:      mustRules(t, []string{"web.example.test:" + strconv.Itoa(pp), "web.example.test:" + strconv.Itoa(tp)}, nil, nil),
		Resolver:   hosts(t, "web.example.test 127.0.0.1"),
		allowAddrs: []netip.Addr{loopback},
	})
	r, err := relay.Listen(relay.Config{SocketPath: p.SocketPath()})
	if err != nil {
		t.Fatal(err)
	}
	r.Serve(context.Background())
	defer r.Close()
	env := append([]string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}, ProxyEnv(r.ProxyPort())...)
	without := func(drop ...string) []string {
		var out []string
	next:
		for _, kv := range env {
			for _, d := range drop {
				if strings.HasPrefix(strings.ToLower(kv), d+"=") {
					continue next
				}
			}
			out = append(out, kv)
		}
		return out
	}
	httpURL := "http://web.example.test:" + strconv.Itoa(pp) + "/"
	httpsURL := "https://web.example.test:" + strconv.Itoa(tp) + "/"
	cases := []struct {
		name string
		env  []string
		args []string
		want string
		rec  Protocol
		port int
	}{
		{"curl http", env, []string{"curl", "-q", "-sS", httpURL}, "plain-ok", ProtoHTTP, pp},
		{"curl https", env, []string{"curl", "-q", "-sSk", httpsURL}, "tls-ok", ProtoConnect, tp},
		{"curl all_proxy", without("http_proxy", "https_proxy"), []string{"curl", "-q", "-sS", httpURL}, "plain-ok", ProtoSOCKS5, pp},
		{"wget http", env, []string{"wget", "-q", "-O-", httpURL}, "plain-ok", ProtoHTTP, pp},
		{"wget https", env, []string{"wget", "-q", "-O-", "--no-check-certificate", httpsURL}, "tls-ok", ProtoConnect, tp},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			testenv.NeedCommand(t, tc.args[0])
			path, err := exec.LookPath(tc.args[0])
			if err != nil {
				t.Fatal(err)
			}
			before := len(p.Records())
			cmd := exec.Command(path, tc.args[1:]...)
			cmd.Env = tc.env
			out, err := cmd.CombinedOutput()
			if err != nil || string(out) != tc.want {
				t.Fatalf("%v: %q, %v", tc.args, out, err)
			}
			waitRecords(t, p, before+1)
			rec := p.Records()[before]
			if rec.Protocol != tc.rec || rec.Port != tc.port || rec.Host != "web.example.test" || rec.Verdict != Allow {
				t.Errorf("record %+v, want %s to web.example.test:%d", rec, tc.rec, tc.port)
			}
		})
	}
}

func waitRecords(t testing.TB, p *Proxy, n int) {
	t.Helper()
	for i := 0; i < 200 && len(p.Records()) < n; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if len(p.Records()) < n {
		t.Fatalf("%d records, want %d: %+v", len(p.Records()), n, p.Records())
	}
}
