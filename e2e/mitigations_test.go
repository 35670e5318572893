package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// A read grant of a folder yields its ordinary files and none of its
// secrets (secrets.mask): the tool sees them empty; a grant that names a
// secret needs approval and, approved, reads it; explain lists the masks
// with their rules and says what masks do not catch.
func TestSecretsAreMaskedInGrants(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{
			"data/readme.txt": "PLAIN-FILE", "data/id_rsa.pub": "PUBLIC-KEY", "data/sub/notes.txt": "SUB-FILE",
			"data/.env": "ENV-SECRET", "data/id_rsa": "RSA-SECRET", "data/key.pem": "PEM-SECRET",
			"data/.aws/credentials": "AWS-SECRET", "data/sub/.env.local": "ENV-LOCAL-SECRET",
		})
		reader := toolYAML(t, dir, tier, "reader", `
cat data/readme.txt data/id_rsa.pub data/sub/notes.txt; echo
for f in data/.env data/id_rsa data/key.pem data/.aws/credentials data/sub/.env.local; do cat "$f" 2>/dev/null; done
echo END`, []string{"filesystem:read:./data"}, "")
		r, c := runJSON(t, dir, reader)
		expect(t, r, c, "ok", 0)
		for _, want := range []string{"PLAIN-FILE", "PUBLIC-KEY", "SUB-FILE", "END"} {
			if !strings.Contains(r.Stdout, want) {
				t.Fatalf("positive control: %s missing, the grant did not work:\n%s\n%s", want, r.Stdout, r.Stderr)
			}
		}
		if strings.Contains(r.Stdout, "SECRET") {
			t.Errorf("a secret was readable through a read grant of its folder:\n%s", r.Stdout)
		}

		// Named in the grant, the secret needs approval; approved, it is read.
		named := toolYAML(t, dir, tier, "named", `cat data/.env`, []string{"filesystem:read:./data/.env"}, "")
		r, c = runJSON(t, dir, named)
		expect(t, r, c, "denied", 126)
		if r.Error == nil || !strings.Contains(r.Error.Message+r.Error.Hint, "filesystem:read:"+filepath.Join(dir, "data", ".env")) {
			t.Errorf("refusal %+v does not name the approval", r.Error)
		}
		r, c = runJSON(t, dir, "--approve", "filesystem:read:"+filepath.Join(dir, "data", ".env"), named)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "ENV-SECRET") {
			t.Errorf("the approved grant of data/.env did not read it: %q", r.Stdout)
		}

		// explain shows each mask with its rule, and the approval at high risk.
		ex := sandboxed(t, dir, "permissions", "explain", "--json", reader)
		if ex.code != 0 {
			t.Fatalf("explain: %d\n%s", ex.code, ex.stderr)
		}
		for _, want := range []string{"secrets.mask[0] .env", "secrets.mask[6] *.pem", "secrets.mask[11] .aws", "hard link"} {
			if !strings.Contains(ex.stdout, want) {
				t.Errorf("explain does not show %q:\n%s", want, ex.stdout)
			}
		}
		ex = sandboxed(t, dir, "permissions", "explain", "--json", named)
		var e struct {
			Filesystem []struct {
				Subject, Verdict, Rule, Risk string
			} `json:"filesystem"`
		}
		if err := json.Unmarshal([]byte(ex.stdout), &e); err != nil {
			t.Fatalf("explain: %v\n%s", err, ex.stdout)
		}
		found := false
		for _, p := range e.Filesystem {
			if strings.HasSuffix(p.Subject, "/data/.env") {
				found = true
				if p.Verdict != "approval" || p.Risk != "high" || !strings.Contains(p.Rule, "secrets.mask[0] .env (the grant names it)") {
					t.Errorf("explain of the named secret: %+v", p)
				}
			}
		}
		if !found {
			t.Errorf("explain has no point for data/.env:\n%s", ex.stdout)
		}
	})
}
