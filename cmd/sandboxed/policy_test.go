package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/policy"
)

func TestPolicyInitShowRoundTrip(t *testing.T) {
	home, _ := isolate(t)
	want := filepath.Join(home, ".config", "sandboxed", "policy.yaml")

	// Before init: the built-in default is in force.
	out, errOut, code := runApp(t, "policy", "show")
	if code != 0 || !strings.HasPrefix(out, "# policy in force: built-in default\n") {
		t.Fatalf("show before init: exit %d, %q %s", code, out, errOut)
	}

	if _, errOut, code := runApp(t, "policy", "init"); code != 0 {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(want)
	if err != nil || string(data) != string(policy.DefaultYAML()) {
		t.Fatalf("init wrote %d bytes to %s (%v), want DefaultYAML", len(data), want, err)
	}

	// A second init refuses to replace it; --force does.
	if _, errOut, code := runApp(t, "policy", "init"); code == 0 || !strings.Contains(errOut, "--force") {
		t.Errorf("second init: exit %d, %s", code, errOut)
	}
	if err := os.WriteFile(want, []byte("version: 1\nlimits:\n  pids:\n    default: 99\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = runApp(t, "policy", "show")
	if code != 0 || !strings.HasPrefix(out, "# policy in force: "+want+"\n") || !strings.Contains(out, "default: 99") {
		t.Errorf("show of the user file: exit %d:\n%s", code, out)
	}
	if _, errOut, code := runApp(t, "policy", "init", "--force"); code != 0 {
		t.Fatalf("init --force: exit %d: %s", code, errOut)
	}

	// The YAML shown loads back to the policy in force.
	out, _, code = runApp(t, "policy", "show")
	if code != 0 || !strings.HasPrefix(out, "# policy in force: "+want+"\n") {
		t.Fatalf("show after init: exit %d:\n%s", code, out)
	}
	got, err := policy.Parse([]byte(out), "shown")
	if err != nil {
		t.Fatalf("shown policy does not load: %v\n%s", err, out)
	}
	def := policy.Default()
	got.File, def.File = "", ""
	if !reflect.DeepEqual(got, def) {
		t.Errorf("shown policy differs from the default:\n%+v\n%+v", got, def)
	}

	// JSON: source, file and the policy.
	out, _, code = runApp(t, "policy", "show", "--format", "json")
	var doc struct {
		Source string         `json:"source"`
		File   string         `json:"file"`
		Policy map[string]any `json:"policy"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
		t.Fatalf("json: exit %d, %v\n%s", code, err, out)
	}
	if doc.Source != want || doc.File != want || doc.Policy["version"] != float64(1) {
		t.Errorf("json doc: %+v", doc)
	}
	limits, _ := doc.Policy["limits"].(map[string]any)
	mem, _ := limits["memory"].(map[string]any)
	if mem["default"] != "512MiB" {
		t.Errorf("json limits.memory: %v", limits["memory"])
	}
}

func TestPolicyInitOutputAndFlag(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "p.yaml")
	if _, errOut, code := runApp(t, "policy", "init", "--output", p); code != 0 {
		t.Fatalf("init --output: exit %d: %s", code, errOut)
	}
	out, _, code := runApp(t, "policy", "show", "--policy", p, "--format", "yaml")
	if code != 0 || !strings.HasPrefix(out, "# policy in force: "+p+"\n") {
		t.Errorf("show --policy: exit %d:\n%s", code, out)
	}
	if _, _, code := runApp(t, "policy", "show", "--format", "xml"); code != exitUsage {
		t.Errorf("--format xml: exit %d, want %d", code, exitUsage)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\nnope: 1\n"), 0o644)
	if _, errOut, code := runApp(t, "policy", "show", "--policy", bad); code != exitUsage || !strings.Contains(errOut, "bad.yaml:2") {
		t.Errorf("invalid policy: exit %d, %s", code, errOut)
	}
}

// A CPU limit is shown as a number, in YAML and JSON, and loads back.
func TestPolicyShowCPUs(t *testing.T) {
	isolate(t)
	p := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(p, []byte("limits:\n  cpus: {default: 0.5, max: 2}\n  tmpfs: {default: 16MiB}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runApp(t, "policy", "show", "--policy", p)
	if code != 0 || !strings.Contains(out, "  cpus:\n    default: 0.5\n    max: 2\n") {
		t.Fatalf("show: exit %d %s\n%s", code, errOut, out)
	}
	got, err := policy.Parse([]byte(out), "shown")
	if err != nil || got.Limits.CPUs != (policy.CPULimit{Default: 0.5, Max: 2}) || got.Limits.Tmpfs.Default != 16<<20 {
		t.Fatalf("shown policy loads to %+v, %v\n%s", got.Limits, err, out)
	}
	out, _, _ = runApp(t, "policy", "show", "--policy", p, "--format", "json")
	var doc struct {
		Policy struct {
			Limits struct {
				CPUs  map[string]any `json:"cpus"`
				Tmpfs map[string]any `json:"tmpfs"`
			} `json:"limits"`
		} `json:"policy"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Policy.Limits.CPUs["default"] != 0.5 ||
		doc.Policy.Limits.CPUs["max"] != float64(2) || doc.Policy.Limits.Tmpfs["default"] != "16MiB" {
		t.Errorf("json: %v %+v\n%s", err, doc.Policy.Limits, out)
	}
}
