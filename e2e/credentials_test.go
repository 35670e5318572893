package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// echoRequest is the test host's /echo/ handler: it answers with what it
// received of the request, the credential places the proxy rewrites, and
// the sha256 of the Authorization header, so a test can check the real
// value arrived even where the answer itself is redacted.
// With ?gzip in the query the answer is gzip-compressed.
func echoRequest(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	sum := sha256.Sum256([]byte(auth))
	var out io.Writer = w
	if r.URL.Query().Has("gzip") {
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		defer gz.Close()
		out = gz
	}
	fmt.Fprintf(out, "method=%s path=%s query=%s auth-sha=%s\nauth=%s\n", r.Method, r.URL.Path, r.URL.RawQuery, hex.EncodeToString(sum[:]), auth)
}

// credSecret is the real value the tests hand sandboxed through its
// environment; it must never show up in a result, run record or audit
// line, nor inside the sandbox.
const credSecret = "e2e-real-secret-5f0c2a9d"

// credPolicy writes a policy that trusts the test host's CA for the
// servers whose TLS the proxy terminates.
func credPolicy(t *testing.T) string {
	t.Helper()
	dir := workdir(t, nil)
	p := filepath.Join(dir, "policy.yaml")
	must(t, os.WriteFile(p, []byte("version: 1\nnetwork:\n  extra-ca: ["+testNet.caFile+"]\n"), 0o644))
	return p
}

// runWithEnv is runJSON with extra variables in sandboxed's environment.
func runWithEnv(t *testing.T, dir string, extraEnv []string, args ...string) (result, cli) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := command(append([]string{"run", "--json"}, args...)...)
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := runCtx(ctx, cmd)
	if ctx.Err() != nil {
		t.Fatalf("sandboxed run: hung for 3 minutes")
	}
	c := cli{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		c.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("start sandboxed: %v", err)
	}
	var r result
	if err := json.Unmarshal([]byte(c.stdout), &r); err != nil {
		t.Fatalf("run --json %v: exit %d, output is not a result: %v\nstdout: %s\nstderr: %s", args, c.code, err, c.stdout, c.stderr)
	}
	return r, c
}

// noSecretOnDisk fails if the real value is in the run's record or in
// the audit log.
func noSecretOnDisk(t *testing.T, runID string) {
	t.Helper()
	runDir := filepath.Join(env.stateDir, "runs", runID)
	files, err := filepath.Glob(filepath.Join(runDir, "*"))
	must(t, err)
	if len(files) == 0 {
		t.Fatalf("no run record in %s", runDir)
	}
	files = append(files, filepath.Join(env.stateDir, "audit.jsonl"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		must(t, err)
		if bytes.Contains(b, []byte(credSecret)) {
			t.Errorf("%s holds the real value", f)
		}
	}
}

func TestCredentialsAtTheProxy(t *testing.T) {
	pol := credPolicy(t)
	grants := []string{"network:external:web.test", "network:external:other.test"}
	authSHA := func(v string) string {
		s := sha256.Sum256([]byte(v))
		return hex.EncodeToString(s[:])
	}
	forConformance(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		// No curl flag about certificates: the sandbox's system bundle
		// trusts the run CA.
		// The script holds the value only encoded: the definition itself
		// is recorded.
		script := `
echo "ENV:$E2E_TOKEN"
s=$(echo ` + base64.StdEncoding.EncodeToString([]byte(credSecret)) + ` | base64 -d)
[ ${#s} -gt 8 ] && echo DECODED
env | grep -qF "$s" && echo SECRET-IN-ENV
grep -rqsF "$s" /proc/self/environ /tmp /etc/ssl && echo SECRET-IN-SANDBOX
curl -sS http://web.test/echo/plain -H "Authorization: Bearer $E2E_TOKEN" | sed 's/^/PLAIN:/'
curl -sS "https://web.test/echo/tls?token=$E2E_TOKEN" -H "Authorization: Bearer $E2E_TOKEN" | sed 's/^/TLS:/'
curl -sS --compressed "https://web.test/echo/gz?gzip" -H "Authorization: Bearer $E2E_TOKEN" | sed 's/^/GZIP:/'
curl -sS -o /dev/null -w 'OTHER-PLAIN:%{''http_code}\n' http://other.test/echo/x -H "Authorization: Bearer $E2E_TOKEN"
curl -sS --cacert ` + testNet.caFile + ` https://other.test/echo/x -H "Authorization: Bearer $E2E_TOKEN" | sed 's/^/OTHER-TLS:/'
curl -sS -o /dev/null -w 'OTHER-NOCRED:%{''http_code}\n' http://other.test/echo/ok
true`
		extra := "sandboxed:\n  credentials:\n    - name: E2E_TOKEN\n      env: E2E_CRED_SOURCE\n      hosts: [web.test]\nresources:\n  timeout: 60000\n"
		perms := append(append([]string(nil), grants...), "filesystem:read:"+testNet.caFile)
		tool := toolYAML(t, dir, tier, "cred", script, perms, extra)
		args := append(approvals(grants...), "--approve", "credential:E2E_TOKEN", "--policy", pol, tool)
		r, c := runWithEnv(t, dir, []string{"E2E_CRED_SOURCE=" + credSecret}, args...)
		expect(t, r, c, "ok", 0)
		out := r.Stdout
		if !strings.Contains(out, "ENV:sandboxed-stand-in-") {
			t.Errorf("the tool's variable is not the stand-in:\n%s", out)
		}
		for _, bad := range []string{"SECRET-IN-ENV", "SECRET-IN-SANDBOX", credSecret} {
			if strings.Contains(out+r.Stderr, bad) {
				t.Errorf("%s: the real value reached the sandbox or the result:\n%s%s", bad, out, r.Stderr)
			}
		}
		want := authSHA("Bearer " + credSecret)
		for _, p := range []string{"PLAIN:", "TLS:", "GZIP:"} {
			if !strings.Contains(out, p+"method=GET") || !strings.Contains(out, "auth-sha="+want) {
				t.Errorf("%s the test host did not get the real value:\n%s%s", p, out, r.Stderr)
			}
		}
		// The host echoes the value back: the proxy puts the stand-in back
		// in what it can read; a compressed answer it passes as it is, and
		// the result shows the value redacted.
		if !strings.Contains(out, "PLAIN:auth=Bearer sandboxed-stand-in-") || !strings.Contains(out, "TLS:auth=Bearer sandboxed-stand-in-") ||
			!strings.Contains(out, "query=token=sandboxed-stand-in-") {
			t.Errorf("the echoed value did not come back as the stand-in:\n%s", out)
		}
		if !strings.Contains(out, "GZIP:auth=Bearer [credential E2E_TOKEN redacted]") {
			t.Errorf("the echoed value is not redacted in the result:\n%s", out)
		}
		// HTTPS to a host the credential is not for is an end-to-end
		// tunnel the proxy cannot read: that host gets the stand-in.
		for _, w := range []string{"DECODED", "OTHER-PLAIN:403", "OTHER-TLS:auth=Bearer sandboxed-stand-in-", "OTHER-NOCRED:200"} {
			if !strings.Contains(out, w) {
				t.Errorf("want %s:\n%s%s", w, out, r.Stderr)
			}
		}
		refused, sent := 0, 0
		for _, e := range r.Egress {
			if e.Host == "other.test" && e.Verdict == "refused-credential" {
				refused++
			}
			if e.Host == "web.test" && e.Verdict == "allow" && strings.Join(e.Credentials, ",") == "E2E_TOKEN" {
				sent++
			}
		}
		if refused != 1 || sent != 3 {
			t.Errorf("egress records: %d refused-credential to other.test (want 1), %d to web.test with the credential (want 3): %+v", refused, sent, r.Egress)
		}
		if len(r.Warnings) != 1 || !strings.Contains(strings.Join(r.Warnings, "\n"), "stand-in") {
			t.Errorf("no warning about the refused stand-in: %q", r.Warnings)
		}
		noSecretOnDisk(t, r.RunID)
	})
}

func TestHTTPMethodAndPathRules(t *testing.T) {
	pol := credPolicy(t)
	grant := "network:external:web.test"
	forConformance(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		script := `
for u in http://web.test https://web.test; do
  curl -sS -o /dev/null -w "GET-A:%{""http_code}\n" $u/echo/a/x
  curl -sS -o /dev/null -w "POST-A:%{""http_code}\n" -X POST -d x=1 $u/echo/a/x
  curl -sS -o /dev/null -w "GET-B:%{""http_code}\n" $u/echo/b/
  curl -sS -o /dev/null -w "GET-DOTDOT:%{""http_code}\n" --path-as-is $u/echo/a/../b/
done`
		extra := "sandboxed:\n  http:\n    - host: web.test\n      methods: [GET]\n      paths: [/echo/a/]\nresources:\n  timeout: 60000\n"
		tool := toolYAML(t, dir, tier, "rules", script, []string{grant}, extra)
		r, c := runJSON(t, dir, append(approvals(grant), "--policy", pol, tool)...)
		expect(t, r, c, "ok", 0)
		for w, n := range map[string]int{"GET-A:200": 2, "POST-A:403": 2, "GET-B:403": 2, "GET-DOTDOT:403": 2} {
			if got := strings.Count(r.Stdout, w); got != n {
				t.Errorf("%s %d times, want %d:\n%s%s", w, got, n, r.Stdout, r.Stderr)
			}
		}
		denied := 0
		for _, e := range r.Egress {
			if e.Host == "web.test" && e.Verdict == "deny" {
				denied++
			}
		}
		if denied != 6 {
			t.Errorf("%d refused requests recorded, want 6: %+v", denied, r.Egress)
		}
	})
}

// TestHTTPRuleOnUngrantedHostIsRefused: a rule or credential for a
// host no grant allows cannot be enforced and is refused when the run is
// planned, before anything runs.
func TestHTTPRuleOnUngrantedHostIsRefused(t *testing.T) {
	forTierList(t, []string{"process"}, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		extra := "sandboxed:\n  http:\n    - host: other.test\n      methods: [GET]\n"
		tool := toolYAML(t, dir, tier, "norule", "echo SHOULD-NOT-RUN", []string{"network:external:web.test"}, extra)
		r, c := runJSON(t, dir, "--approve", "network:external:web.test", tool)
		if r.Status == "ok" || strings.Contains(r.Stdout, "SHOULD-NOT-RUN") || r.Error == nil || !strings.Contains(r.Error.Message, "no network:external grant allows") {
			t.Errorf("status %s exit %d error %+v\n%s", r.Status, c.code, r.Error, r.Stdout)
		}
	})
}

// TestCredentialsThroughServer: with `sandboxed serve` listening, a run
// with credentials gets its value from the caller's environment (the
// server's has none), whether the server runs it or declines it to run
// cold.
func TestCredentialsThroughServer(t *testing.T) {
	pol := credPolicy(t)
	grant := "network:external:web.test"
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		script := `
echo "ENV:$E2E_TOKEN"
curl -sS "https://web.test/echo/served" -H "Authorization: Bearer $E2E_TOKEN" | sed 's/^/TLS:/'`
		extra := "sandboxed:\n  credentials:\n    - name: E2E_TOKEN\n      env: E2E_CRED_SOURCE\n      hosts: [web.test]\n"
		tool := toolYAML(t, dir, tier, "served", script, []string{grant}, extra)
		srv := startServer(t, dir, "--pool-size", "1")
		args := append(approvals(grant), "--approve", "credential:E2E_TOKEN", "--policy", pol, tool)
		for i := 0; i < 2; i++ {
			r, c := runWithEnv(t, dir, []string{"E2E_CRED_SOURCE=" + credSecret}, args...)
			expect(t, r, c, "ok", 0)
			sum := sha256.Sum256([]byte("Bearer " + credSecret))
			if !strings.Contains(r.Stdout, "ENV:sandboxed-stand-in-") || !strings.Contains(r.Stdout, "auth-sha="+hex.EncodeToString(sum[:])) ||
				strings.Contains(r.Stdout, credSecret) {
				t.Errorf("call %d:\n%s%s\nserver: %s", i, r.Stdout, r.Stderr, srv.log.String())
			}
			noSecretOnDisk(t, r.RunID)
		}
	})
}
