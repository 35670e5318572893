package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/tool"
)

const fedoraBundle = "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"

func TestPlanCredentials(t *testing.T) {
	const head = "name: t\ndescription: d\nbash: echo hi\n"
	grant := "security:\n  required-permissions: [network:external:api.example.com]\n"
	tests := []struct {
		name    string
		yaml    string
		tier    tool.Isolation
		bundle  string // HostFacts.TrustBundle
		wantErr string
		check   func(t *testing.T, p *isolation.Plan)
	}{
		{"credential and rule", head + grant + `sandboxed:
  credentials:
    - env: TOKEN
      hosts: [API.example.com]
    - name: K
      file: ~/k
      hosts: [api.example.com]
  http:
    - {host: api.example.com, methods: [GET], paths: [/repos/]}
`, tool.IsolationProcess, fedoraBundle, "", func(t *testing.T, p *isolation.Plan) {
			e := p.Egress
			if len(e.Credentials) != 2 || e.Credentials[0].Name != "TOKEN" || e.Credentials[0].Hosts[0] != "api.example.com" ||
				e.Credentials[1].Source.File != "/home/ada/k" || e.Credentials[1].Source.Env != "" {
				t.Fatalf("credentials %+v", e.Credentials)
			}
			if e.Credentials[0].StandIn != StandIn("RUN", 0, "TOKEN") || e.Credentials[0].StandIn == e.Credentials[1].StandIn {
				t.Errorf("stand-ins %q %q", e.Credentials[0].StandIn, e.Credentials[1].StandIn)
			}
			if len(e.HTTP) != 1 || e.HTTP[0].Paths[0] != "/repos/" {
				t.Errorf("http %+v", e.HTTP)
			}
			env := envOf(p)
			if !slices.Contains(env, "TOKEN="+e.Credentials[0].StandIn) || !slices.Contains(env, "SSL_CERT_FILE="+fedoraBundle) {
				t.Errorf("env %q", env)
			}
			for _, kv := range env {
				if strings.Contains(kv, "s3cret") {
					t.Errorf("the host value of TOKEN is in the plan: %s", kv)
				}
			}
			m := mountAt(p.Spec, fedoraBundle)
			if e.CABundle != "/run/sandboxed/RUN/ca-bundle.crt" || m == nil || m.Source != e.CABundle || !slices.Contains(m.Options, "ro") {
				t.Errorf("bundle %q mount %+v", e.CABundle, m)
			}
		}},
		{"inherited environment without the source", head + grant + "environment:\n  inherit: true\nsandboxed:\n  credentials:\n    - name: OTHER\n      env: TOKEN\n      hosts: [api.example.com]\n",
			tool.IsolationProcess, fedoraBundle, "", func(t *testing.T, p *isolation.Plan) {
				for _, kv := range envOf(p) {
					if strings.HasPrefix(kv, "TOKEN=") || strings.Contains(kv, "s3cret") {
						t.Errorf("the credential's host variable was inherited: %s", kv)
					}
				}
				if !slices.Contains(envOf(p), "LANG=fr_FR.UTF-8") {
					t.Errorf("nothing inherited: %q", envOf(p))
				}
			}},
		{"container tier: the image's bundle", head + grant + "sandboxed:\n  credentials:\n    - env: TOKEN\n      hosts: [api.example.com]\n",
			tool.IsolationContainer, "", "", func(t *testing.T, p *isolation.Plan) {
				if m := mountAt(p.Spec, isolation.SandboxCABundle); m == nil || !slices.Contains(envOf(p), "CURL_CA_BUNDLE="+isolation.SandboxCABundle) {
					t.Errorf("no bundle at %s: %q", isolation.SandboxCABundle, envOf(p))
				}
			}},
		{"process tier on a host without a bundle", head + grant + "sandboxed:\n  credentials:\n    - env: TOKEN\n      hosts: [api.example.com]\n",
			tool.IsolationProcess, "", "no system trust bundle", nil},
		{"no credentials, no bundle", head + grant, tool.IsolationProcess, fedoraBundle, "", func(t *testing.T, p *isolation.Plan) {
			if p.Egress.CABundle != "" || mountAt(p.Spec, isolation.SandboxCABundle) != nil {
				t.Errorf("a bundle without credentials: %+v", p.Egress)
			}
		}},
		{"host without a grant", head + grant + "sandboxed:\n  credentials:\n    - env: TOKEN\n      hosts: [other.example.com]\n",
			tool.IsolationProcess, fedoraBundle, "no network:external grant allows", nil},
		{"no network at all", head + "sandboxed:\n  http:\n    - {host: a.example.com}\n", tool.IsolationProcess, fedoraBundle, "need network:external grants", nil},
		{"isolation none", head + grant + "sandboxed:\n  credentials:\n    - env: TOKEN\n      hosts: [api.example.com]\n",
			tool.IsolationNone, fedoraBundle, "isolation none has none", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, grants, f := planFixture(t, tt.yaml)
			d := allow(64<<20, 0)
			d.Isolation = tt.tier
			f.TrustBundle = tt.bundle
			p, _, _, err := buildPlan(PlanInput{RunID: "RUN", Bound: b, Grants: grants, Decision: d, Facts: f})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrPlan) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, p)
		})
	}
}

func TestStandInsArePrefixFree(t *testing.T) {
	var all []string
	for i := 0; i < 12; i++ {
		all = append(all, StandIn("20261123T220000-0123456789ab", i, "T"))
	}
	for i, a := range all {
		for j, b := range all {
			if i != j && strings.HasPrefix(b, a) {
				t.Errorf("%q is a prefix of %q", a, b)
			}
		}
	}
}

func TestReadCredential(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tok")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(file, []byte("from-file\n"), 0o600))
	env := []string{"SBX_TEST_CRED=from-env", "SBX_TEST_EMPTY=", "SBX_TEST_CRED=second", "PATH=" + os.Getenv("PATH")}
	multi := filepath.Join(dir, "multi")
	must(os.WriteFile(multi, []byte("a\nb\n"), 0o600))
	tests := []struct {
		src     isolation.CredentialSource
		want    string
		wantErr string
	}{
		{isolation.CredentialSource{Env: "SBX_TEST_CRED"}, "from-env", ""},
		{isolation.CredentialSource{File: file}, "from-file", ""},
		{isolation.CredentialSource{Command: []string{"printf", "from-cmd\\n"}}, "from-cmd", ""},
		{isolation.CredentialSource{Command: []string{"sh", "-c", "echo \"$SBX_TEST_CRED\""}}, "from-env", ""}, // the caller's environment
		{isolation.CredentialSource{Env: "SBX_TEST_UNSET_X"}, "", "is not set"},
		{isolation.CredentialSource{Env: "SBX_TEST_EMPTY"}, "", "empty"},
		{isolation.CredentialSource{File: multi}, "", "control characters"},
		{isolation.CredentialSource{File: filepath.Join(dir, "none")}, "", "no such file"},
		{isolation.CredentialSource{Command: []string{"false"}}, "", "run false"},
	}
	for _, tt := range tests {
		v, err := readCredential(context.Background(), isolation.Credential{Name: "T", StandIn: "stand-in-x", Source: tt.src}, env)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%+v: err = %v, want %q", tt.src, err, tt.wantErr)
			}
			continue
		}
		if err != nil || v != tt.want {
			t.Errorf("%+v = %q, %v; want %q", tt.src, v, err, tt.want)
		}
	}
}

func TestRedactResult(t *testing.T) {
	r := newRedactor(map[string]string{"TOKEN": "s3cret-value"})
	res := &Result{Stdout: "got s3cret-value twice: s3cret-value", Stderr: "x",
		Egress: []EgressEntry{{Reason: "saw s3cret-value"}}, Error: &ErrorInfo{Message: "s3cret-value"}}
	r.result(res)
	for _, s := range []string{res.Stdout, res.Egress[0].Reason, res.Error.Message, string(r.bytes([]byte("..s3cret-value..")))} {
		if strings.Contains(s, "s3cret-value") || !strings.Contains(s, "[credential TOKEN redacted]") {
			t.Errorf("not redacted: %q", s)
		}
	}
	var none *redactor
	none.result(res) // a run without credentials
}
