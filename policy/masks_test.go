package policy

import (
	"strings"
	"testing"
)

// A grant that names a secret (itself, or a path inside a secret folder)
// needs approval at high risk, with the rule; secrets.except lifts it; any
// other grant of a folder carries one hidden mask per secret name.
func TestSecretNamedByAGrant(t *testing.T) {
	tests := []struct {
		perm     string
		except   []PathPattern
		verdict  Verdict
		rule     string // prefix
		secretMk bool   // the grant carries secret masks (a file grant too: its walk finds none; none where secrets.except covers the grant)
	}{
		{"filesystem:read:" + cwd + "/app", nil, Allow, "default: reads are allowed", true},
		{"filesystem:read:" + cwd + "/app/.env", nil, NeedsApproval, "secrets.mask[0] .env (the grant names it)", true},
		{"filesystem:read:" + cwd + "/app/.env.production", nil, NeedsApproval, "secrets.mask[1] .env.*", true},
		{"filesystem:read:" + cwd + "/id_ed25519", nil, NeedsApproval, "secrets.mask[5] id_ed25519*", true},
		{"filesystem:read:" + cwd + "/id_ed25519.pub", nil, Allow, "default: reads are allowed", false},
		{"filesystem:write:" + cwd + "/certs/server.key", nil, NeedsApproval, "secrets.mask[7] *.key", true},
		{"filesystem:read:" + cwd + "/p/.aws/config", nil, NeedsApproval, "secrets.mask[11] .aws", true},
		{"filesystem:read:" + cwd + "/p/.kube/config", nil, NeedsApproval, "secrets.mask[20] .kube/config", true},
		{"filesystem:read:" + cwd + "/app/.env", []PathPattern{PathPattern(cwd + "/app/.env")}, Allow, "default: reads are allowed", false},
		{"filesystem:read:" + cwd + "/big", []PathPattern{PathPattern(cwd + "/big")}, Allow, "default: reads are allowed", false},
		{"filesystem:read:" + cwd + "/big/sub", []PathPattern{PathPattern(cwd + "/big")}, Allow, "default: reads are allowed", false},
	}
	for _, tt := range tests {
		p := Default()
		if tt.except != nil {
			p.Secrets.Except = tt.except
		}
		r := baseRequest()
		r.Grants = grants(t, tt.perm)
		d := p.Decide(r)
		it, _ := item(d, tt.perm)
		if it.Verdict != tt.verdict || !strings.HasPrefix(it.Rule, tt.rule) {
			t.Errorf("%s: %s by %q (%s), want %s by %q", tt.perm, it.Verdict, it.Rule, it.Reason, tt.verdict, tt.rule)
		}
		if tt.verdict == NeedsApproval && (it.Risk != RiskHigh || it.ApproveFlag != tt.perm || !strings.Contains(it.PolicyFix, "secrets.except")) {
			t.Errorf("%s: risk %s, approve %q, fix %q", tt.perm, it.Risk, it.ApproveFlag, it.PolicyFix)
		}
		secret := 0
		for _, mk := range d.Masks {
			if mk.Secret {
				secret++
				if !mk.Hide || !strings.HasPrefix(mk.Rule, "secrets.mask[") || !strings.Contains(mk.Path, "/**/") {
					t.Errorf("%s: secret mask %+v", tt.perm, mk)
				}
			}
		}
		if (secret > 0) != tt.secretMk {
			t.Errorf("%s: %d secret masks, want some: %v", tt.perm, secret, tt.secretMk)
		}
		if tt.secretMk && tt.except == nil && (len(d.SecretExcept) == 0 || !d.SecretExcepted("/x/id_rsa.pub") || d.SecretExcepted("/x/id_rsa")) {
			t.Errorf("%s: secret excepts %q", tt.perm, d.SecretExcept)
		}
		// Approved, it runs with the secret readable.
		if tt.verdict == NeedsApproval {
			r.Approvals = []string{tt.perm}
			if d := p.Decide(r); d.Verdict != Allow {
				t.Errorf("%s approved: %s", tt.perm, d.Verdict)
			}
		}
	}
}

func TestLoadSecrets(t *testing.T) {
	p, err := Parse([]byte("version: 1\nsecrets:\n  mask: [.env, credentials.json]\n  except: [\"**/.env.example\"]\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Secrets.Mask) != 2 || p.Secrets.Except[0] != "**/.env.example" {
		t.Errorf("secrets %+v", p.Secrets)
	}
	for _, bad := range []string{"/etc/x", "~/.env", "a/../b", "**/.env", "*", ""} {
		_, err := Parse([]byte("version: 1\nsecrets:\n  mask: [\""+bad+"\"]\n"), "p.yaml")
		if err == nil || !strings.Contains(err.Error(), "p.yaml:3") {
			t.Errorf("mask %q: %v, want an error at p.yaml:3", bad, err)
		}
	}
	if _, err := Parse([]byte("version: 1\nsecrets:\n  except: [relative]\n"), "p.yaml"); err == nil {
		t.Errorf("a relative secrets.except pattern loaded")
	}
}
