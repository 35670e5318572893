package tool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAddPermissionsYAML(t *testing.T) {
	perms := []string{"filesystem:read:{IN}/data.txt", "filesystem:write:{OUT}", "network:external:203.0.113.7:8080"}
	cases := []struct {
		name, src, want string
	}{
		{name: "no security section",
			src: "# a tool\nname: t # the name\ndescription: d\n",
			want: "# a tool\nname: t # the name\ndescription: d\nsecurity:\n  required-permissions:\n    - filesystem:read:{IN}/data.txt\n" +
				"    - filesystem:write:{OUT}\n    - network:external:203.0.113.7:8080\n"},
		{name: "no trailing newline",
			src:  "name: t",
			want: "name: t\nsecurity:\n  required-permissions:\n    - filesystem:read:{IN}/data.txt\n    - filesystem:write:{OUT}\n    - network:external:203.0.113.7:8080\n"},
		{name: "security without the key",
			src: "name: t\nsecurity:\n    # why\n    isolation: process\nsteps: []\n",
			want: "name: t\nsecurity:\n    required-permissions:\n      - filesystem:read:{IN}/data.txt\n      - filesystem:write:{OUT}\n" +
				"      - network:external:203.0.113.7:8080\n    # why\n    isolation: process\nsteps: []\n"},
		{name: "empty flow list, comment kept",
			src: "name: t\nsecurity:\n  required-permissions: [] # none yet\n  isolation: process\n",
			want: "name: t\nsecurity:\n  required-permissions: # none yet\n    - filesystem:read:{IN}/data.txt\n    - filesystem:write:{OUT}\n" +
				"    - network:external:203.0.113.7:8080\n  isolation: process\n"},
		{name: "block list: appended in its indent, existing kept",
			src: "security:\n  required-permissions:\n  - filesystem:write:{OUT}   # out\n  # the end\nname: t\n",
			want: "security:\n  required-permissions:\n  - filesystem:write:{OUT}   # out\n  - filesystem:read:{IN}/data.txt\n" +
				"  - network:external:203.0.113.7:8080\n  # the end\nname: t\n"},
		{name: "CRLF stays CRLF",
			src:  "name: t\r\nsecurity:\r\n  required-permissions:\r\n    - \"network:external:203.0.113.7:8080\"\r\n",
			want: "name: t\r\nsecurity:\r\n  required-permissions:\r\n    - \"network:external:203.0.113.7:8080\"\r\n    - filesystem:read:{IN}/data.txt\r\n    - filesystem:write:{OUT}\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, added, err := AddPermissionsYAML([]byte(tc.src), perms)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", out, tc.want)
			}
			if len(added) == 0 {
				t.Error("nothing reported added")
			}
			// Idempotent: a second pass changes nothing.
			again, added2, err := AddPermissionsYAML(out, perms)
			if err != nil || string(again) != string(out) || len(added2) != 0 {
				t.Errorf("second pass: err %v, added %q, changed %v", err, added2, string(again) != string(out))
			}
		})
	}
}

func TestAddPermissionsYAMLRefuses(t *testing.T) {
	for name, src := range map[string]string{
		"flow mapping":       "{name: t}",
		"flow list of items": "security:\n  required-permissions: [env:HOME]\n",
		"security not a map": "security: process\n",
		"not yaml":           "name: [\n",
		"list":               "- a\n",
	} {
		if _, _, err := AddPermissionsYAML([]byte(src), []string{"env:X"}); !errors.Is(err, ErrNotEditable) {
			t.Errorf("%s: got %v, want ErrNotEditable", name, err)
		}
	}
}

func TestAddPermissionsYAMLQuotes(t *testing.T) {
	out, _, err := AddPermissionsYAML([]byte("name: t\n"), []string{"filesystem:read:/a #b", "filesystem:read:*x"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `'filesystem:read:/a #b'`) {
		t.Errorf("a comment-looking permission is not quoted:\n%s", out)
	}
}

func TestAddPermissionsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.yaml")
	src := "# keep me\nname: learn-me\ndescription: a tool\nbash: cat {IN}\nparameters:\n  IN:\n    type: string\n    description: in\n    required: true\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	added, err := AddPermissionsFile(path, []string{"filesystem:read:{IN}"})
	if err != nil || len(added) != 1 {
		t.Fatalf("added %q, %v", added, err)
	}
	got, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(got), src) || !strings.Contains(string(got), "- filesystem:read:{IN}") {
		t.Errorf("file:\n%s", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600 kept", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
	if _, err := AddPermissionsFile(filepath.Join(dir, "t.json"), nil); !errors.Is(err, ErrNotEditable) {
		t.Errorf("json: %v", err)
	}
}
