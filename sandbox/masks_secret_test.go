package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/policy"
)

// The built-in secrets.mask hides, inside a read grant of a folder, the
// secrets found at any depth and nothing else; secrets.except lifts a
// mask by path.
func TestSecretMasksOfAFolder(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"readme.txt": "plain", "src/main.go": "package main", "id_rsa": "KEY", "id_rsa.pub": "PUB",
		".env": "TOKEN=1", "sub/.env.local": "TOKEN=2", "key.pem": "PEM", ".aws/credentials": "AWS",
		"id_test.go": "package id", ".kube/config": "kube", "kube/config": "not a secret",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	masked := func(pol *policy.Policy) []string {
		t.Helper()
		grants, err := permissions.Resolve([]string{"filesystem:read:" + dir}, dir, "/nonexistent-home")
		if err != nil {
			t.Fatal(err)
		}
		if err := ResolveMounts(grants, false); err != nil {
			t.Fatal(err)
		}
		d := pol.Decide(policy.Request{Tool: "t", Tags: []string{"read"}, Grants: grants, Cwd: dir, Home: "/nonexistent-home"})
		if d.Verdict != policy.Allow {
			t.Fatalf("verdict %s: %+v", d.Verdict, d.Items)
		}
		if !slices.Contains(d.Notes, policy.SecretMaskGaps) {
			t.Errorf("notes %q do not say what masks miss", d.Notes)
		}
		f := &HostFacts{}
		mounts := mountGrants(grants)
		gatherMasks(f, &d, mounts)
		_, _, out, err := planMasks(d.Masks, mounts, f, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range out {
			rel, _ := filepath.Rel(dir, m.Path)
			if !m.Hide || m.Source != filepath.Join(dir, rel) {
				t.Errorf("mask %+v: want hidden, from the host path", m)
			}
			got = append(got, rel)
		}
		slices.Sort(got)
		return got
	}
	want := []string{".aws", ".env", ".kube/config", "id_rsa", "key.pem", "sub/.env.local"}
	if got := masked(policy.Default()); !slices.Equal(got, want) {
		t.Errorf("masked %q, want %q", got, want)
	}
	pol := policy.Default()
	pol.Secrets.Except = append(pol.Secrets.Except, policy.PathPattern(filepath.Join(dir, ".env")))
	if got := masked(pol); slices.Contains(got, ".env") || !slices.Contains(got, "sub/.env.local") {
		t.Errorf("with secrets.except %s/.env: masked %q", dir, got)
	}
}
