package e2e

import (
	"fmt"
	"net"
	"strings"
	"testing"
)

// egressTool writes a tool that may reach what perms grant; the CA of the
// test host is readable so curl can verify HTTPS.
func egressTool(t *testing.T, tier, name, script string, perms ...string) (dir, path string) {
	t.Helper()
	dir = workdir(t, nil)
	perms = append(perms, "filesystem:read:"+testNet.caFile)
	extra := "sandboxed:\n  pids-limit: 512\nresources:\n  max-memory: 512MB\n  timeout: 60000\n"
	return dir, toolYAML(t, dir, tier, name, script, perms, extra)
}

func approvals(perms ...string) []string {
	var a []string
	for _, p := range perms {
		a = append(a, "--approve", p)
	}
	return a
}

func egressVerdicts(r result) map[string]string {
	m := map[string]string{}
	for _, e := range r.Egress {
		m[fmt.Sprintf("%s:%d", e.Host, e.Port)] = e.Verdict
	}
	return m
}

func TestEgressAllowedNameOnly(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		grant := "network:external:web.test"
		script := fmt.Sprintf(`
curl -sf http://web.test/ | sed 's/^/HTTP:/'
curl -sf --cacert %s https://web.test/ | sed 's/^/HTTPS:/'
if command -v wget >/dev/null; then wget -t 1 -qO- http://web.test/ | sed 's/^/WGET:/'; wget -t 1 -qO- --ca-certificate=%s https://web.test/ | sed 's/^/WGETS:/'; else echo WGET:missing; fi
curl -sf http://other.test/ >/dev/null || echo OTHER-REFUSED
curl -s http://other.test/ | grep -q 'network:external:other.test' && echo HINT-NAMES-PERMISSION
true`, testNet.caFile, testNet.caFile)
		dir, tool := egressTool(t, tier, "fetch", script, grant)
		r, c := runJSON(t, dir, append(approvals(grant), tool)...)
		expect(t, r, c, "ok", 0)
		wants := []string{"HTTP:" + strings.TrimSpace(webBody), "HTTPS:" + strings.TrimSpace(webBody),
			"WGET:" + strings.TrimSpace(webBody), "WGETS:" + strings.TrimSpace(webBody), "OTHER-REFUSED", "HINT-NAMES-PERMISSION"}
		for _, want := range wants {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("want %q in:\n%s%s", want, r.Stdout, r.Stderr)
			}
		}
		v := egressVerdicts(r)
		if v["web.test:80"] != "allow" || v["web.test:443"] != "allow" || v["other.test:80"] != "deny" {
			t.Errorf("egress records: %+v", r.Egress)
		}
		for _, e := range r.Egress {
			if e.Host == "web.test" && e.Verdict == "allow" && e.BytesDown == 0 {
				t.Errorf("no bytes recorded for %+v", e)
			}
		}
	})
}

func TestEgressWildcardAdmitsSubdomainsOnly(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		grant := "network:external:*.wild.test"
		dir, tool := egressTool(t, tier, "wild", `
curl -sf http://a.wild.test/ | sed 's/^/SUB:/'
curl -sf http://wild.test/ >/dev/null || echo APEX-REFUSED`, grant)
		r, c := runJSON(t, dir, append(approvals(grant), tool)...)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "SUB:"+strings.TrimSpace(webBody)) || !strings.Contains(r.Stdout, "APEX-REFUSED") {
			t.Errorf("wildcard grant:\n%s%s", r.Stdout, r.Stderr)
		}
	})
}

func TestEgressCannotBeBypassed(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		grant := "network:external:web.test"
		dir, tool := egressTool(t, tier, "bypass", fmt.Sprintf(`
curl -sf http://web.test/ >/dev/null && echo POSITIVE
(exec 3<>/dev/tcp/%[1]s/80) 2>/dev/null && echo DIRECT-TCP
curl -sf --noproxy '*' -m 3 http://%[1]s/ >/dev/null 2>&1 && echo NOPROXY
curl -sf -m 3 http://%[1]s/ >/dev/null 2>&1 && echo IP-LITERAL
getent hosts web.test && echo DNS-GETENT
getent hosts example.com && echo DNS-PUBLIC
python3 -c 'import socket; socket.getaddrinfo("web.test", 80)' 2>/dev/null && echo DNS-PY
true`, webAddr), grant)
		r, c := runJSON(t, dir, append(approvals(grant), tool)...)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "POSITIVE") {
			t.Fatalf("the granted host was not reachable:\n%s%s", r.Stdout, r.Stderr)
		}
		for _, bad := range []string{"DIRECT-TCP", "NOPROXY", "IP-LITERAL", "DNS-GETENT", "DNS-PUBLIC", "DNS-PY"} {
			if strings.Contains(r.Stdout, bad) {
				t.Errorf("%s got through:\n%s", bad, r.Stdout)
			}
		}
	})
}

func TestEgressRefusesRebinding(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		g1, g2, g3 := "network:external:rebind.test", "network:external:metadata.test", "network:external:web.test"
		dir, tool := egressTool(t, tier, "rebind", `
curl -sf http://web.test/ >/dev/null && echo POSITIVE
curl -sf -m 5 http://rebind.test/ >/dev/null 2>&1 || echo LOOPBACK-REFUSED
curl -sf -m 5 http://metadata.test/ >/dev/null 2>&1 || echo METADATA-REFUSED`, g1, g2, g3)
		r, c := runJSON(t, dir, append(approvals(g1, g2, g3), tool)...)
		expect(t, r, c, "ok", 0)
		for _, want := range []string{"POSITIVE", "LOOPBACK-REFUSED", "METADATA-REFUSED"} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("want %s:\n%s%s", want, r.Stdout, r.Stderr)
			}
		}
		v := egressVerdicts(r)
		if v["rebind.test:80"] != "deny" || v["metadata.test:80"] != "deny" {
			t.Errorf("egress records: %+v", r.Egress)
		}
	})
}

func TestLocalhostGrantReachesExactlyThatPort(t *testing.T) {
	serve := func(reply string) (net.Listener, int) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				fmt.Fprintf(c, "HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(reply), reply)
				c.Close()
			}
		}()
		return ln, ln.Addr().(*net.TCPAddr).Port
	}
	ln1, granted := serve("GRANTED-PORT")
	defer ln1.Close()
	ln2, other := serve("OTHER-PORT")
	defer ln2.Close()
	forConformance(t, func(t *testing.T, tier string) {
		grant := fmt.Sprintf("network:localhost:%d", granted)
		dir, tool := egressTool(t, tier, "local", fmt.Sprintf(`
curl -s --noproxy '*' -m 5 http://127.0.0.1:%d/; echo
curl -s --noproxy '*' -m 5 http://127.0.0.1:%d/ || echo OTHER-UNREACHABLE`, granted, other), grant)
		r, c := runJSON(t, dir, append(approvals(grant), tool)...)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "GRANTED-PORT") || strings.Contains(r.Stdout, "OTHER-PORT") || !strings.Contains(r.Stdout, "OTHER-UNREACHABLE") {
			t.Errorf("localhost grant:\n%s%s", r.Stdout, r.Stderr)
		}
	})
}

func TestNoGrantNoNetwork(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, tier, "offline", fmt.Sprintf(`
echo POSITIVE
env | grep -i _proxy && echo PROXY-ENV
curl -sf -m 3 http://web.test/ && echo REACHED-NAME
curl -sf -m 3 http://%s/ && echo REACHED-IP
true`, webAddr), nil, "")
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "POSITIVE") {
			t.Fatalf("the tool did not run: %s", r.Stderr)
		}
		for _, bad := range []string{"PROXY-ENV", "REACHED-NAME", "REACHED-IP"} {
			if strings.Contains(r.Stdout, bad) {
				t.Errorf("%s without a network grant:\n%s", bad, r.Stdout)
			}
		}
	})
}

func TestEgress200ConcurrentConnections(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		grant := "network:external:web.test"
		dir, tool := egressTool(t, tier, "many", `
seq 200 | xargs -P 200 -I{} curl -s -o /dev/null -m 30 -w '%{''http_code}\n' http://web.test/slow | sort | uniq -c`, grant)
		r, c := runJSON(t, dir, append(approvals(grant), tool)...)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "200 200") {
			t.Errorf("200 concurrent connections: %q %s", r.Stdout, r.Stderr)
		}
	})
}
