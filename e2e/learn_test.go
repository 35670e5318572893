package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// learnTool has no permissions: it reads a file of one directory, writes
// into another and calls one host. Its comments must survive learning.
const learnTool = `# Copies its input and tells a host about it.
name: learn-me
description: e2e tool learn-me
bash: |
  cat {IN}/data.txt > {OUT}/result.txt   # the copy
  curl -sf http://web.test/ >/dev/null && echo CALLED
parameters:
  IN:
    type: string
    description: the input directory
    required: true
  OUT:
    type: string
    description: the output directory
    required: true # where result.txt goes
`

// learnReport is what `permissions learn --json` prints, as far as the
// tests look.
type learnReport struct {
	View     []string `json:"view"`
	Observed []struct {
		Op   string `json:"op"`
		Path string `json:"path"`
	} `json:"observed"`
	Draft struct {
		Permissions []string `json:"permissions"`
	} `json:"draft"`
	Added []string `json:"added"`
	Run   result   `json:"run"`
}

// treeHash hashes every path, mode and file body under dir but skip.
func treeHash(t *testing.T, dir, skip string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == skip {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		h.Write([]byte(p + "\x00" + fi.Mode().String() + "\x00"))
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// The done-when: learning changes nothing on the host, the
// definition gains exactly the three permissions the run needed
// (parameterised, comments kept), and the tool then runs with them.
func TestPermissionsLearnWritesWhatTheRunNeeded(t *testing.T) {
	forTierList(t, []string{"process"}, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"in/data.txt": "learned input\n", "learn-me.yaml": learnTool})
		out := filepath.Join(dir, "out")
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		giveToRunner(t, out)
		def := filepath.Join(dir, "learn-me.yaml")
		in := filepath.Join(dir, "in")
		args := []string{"IN=" + in, "OUT=" + out}

		// Without approval nothing runs, and the refusal names the fix.
		c := sandboxed(t, dir, append([]string{"permissions", "learn", "--write", def}, args...)...)
		if c.code != 126 || !strings.Contains(c.stderr, "--approve learn") {
			t.Fatalf("unapproved learning: exit %d\n%s%s", c.code, c.stdout, c.stderr)
		}

		before := treeHash(t, dir, def)
		c = sandboxed(t, dir, append([]string{"permissions", "learn", "--json", "--write", "--approve", "learn", def}, args...)...)
		var rep learnReport
		if err := json.Unmarshal([]byte(c.stdout), &rep); err != nil || c.code != 0 {
			t.Fatalf("learn: exit %d, %v\nstdout: %s\nstderr: %s", c.code, err, c.stdout, c.stderr)
		}
		if rep.Run.Status != "ok" || !strings.Contains(rep.Run.Stdout, "CALLED") {
			t.Errorf("the learning run: status %s, stdout %q, stderr %q", rep.Run.Status, rep.Run.Stdout, rep.Run.Stderr)
		}
		if after := treeHash(t, dir, def); after != before {
			t.Errorf("learning changed the host's files under %s", dir)
		}
		if ents, _ := os.ReadDir(out); len(ents) != 0 {
			t.Errorf("learning wrote into %s: %v", out, ents)
		}
		want := []string{"filesystem:read:{IN}/data.txt", "filesystem:write:{OUT}", "network:external:web.test"}
		if !slices.Equal(rep.Draft.Permissions, want) || !slices.Equal(rep.Added, want) {
			t.Errorf("draft %q, added %q; want %q\nobserved: %+v", rep.Draft.Permissions, rep.Added, want, rep.Observed)
		}
		body, err := os.ReadFile(def)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(body), learnTool) {
			t.Errorf("the definition's text was not kept:\n%s", body)
		}
		var got struct {
			Security struct {
				Perms []string `yaml:"required-permissions"`
			} `yaml:"security"`
		}
		if err := yaml.Unmarshal(body, &got); err != nil || !slices.Equal(got.Security.Perms, want) {
			t.Errorf("the definition requires %q (%v), want %q:\n%s", got.Security.Perms, err, want, body)
		}

		// Learning again adds nothing.
		c = sandboxed(t, dir, append([]string{"permissions", "learn", "--write", "--approve", "learn", def}, args...)...)
		if again, _ := os.ReadFile(def); c.code != 0 || string(again) != string(body) {
			t.Errorf("learning again: exit %d, changed %v\n%s", c.code, string(again) != string(body), c.stderr)
		}

		// The tool runs with what was learned, and only with it.
		r, c := runJSON(t, dir, "--approve", "all", def, args[0], args[1])
		expect(t, r, c, "ok", 0)
		if b, err := os.ReadFile(filepath.Join(out, "result.txt")); err != nil || string(b) != "learned input\n" {
			t.Errorf("result.txt: %q, %v", b, err)
		}
		if !strings.Contains(r.Stdout, "CALLED") {
			t.Errorf("the run did not reach the host: %q %q", r.Stdout, r.Stderr)
		}
	})
}
