package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxed-dev/sandboxed/internal/serveclient"
)

// A tool named by a path the server must find from another working
// directory is made absolute; a name, or what only looks like a file in
// the caller's directory without naming a path, stays as it is.
func TestAbsToolArg(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(t.TempDir()) // the server's directory is not the caller's
	for _, f := range []string{"tool.yaml", "sub/other.yml", "plain"} {
		p := filepath.Join(cwd, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct{ arg, want string }{
		{"tool.yaml", filepath.Join(cwd, "tool.yaml")},
		{"sub/other.yml", filepath.Join(cwd, "sub/other.yml")},
		{"./tool.yaml", filepath.Join(cwd, "tool.yaml")},
		{"/abs/x.yaml", "/abs/x.yaml"},
		{"plain", "plain"},               // a name, even with a file of that name here
		{"missing.yaml", "missing.yaml"}, // the server reports it missing as a cold run would look it up
		{"weather-lookup", "weather-lookup"},
	}
	for _, tt := range tests {
		if got := absToolArg(cwd, tt.arg); got != tt.want {
			t.Errorf("absToolArg(%q) = %q, want %q", tt.arg, got, tt.want)
		}
	}
}

// A caller whose directories or identity variables differ from the
// server's is declined (it runs cold); the rest of its environment is its
// own business.
func TestEnvMismatch(t *testing.T) {
	t.Setenv("SANDBOXED_STATE_DIR", "/state")
	t.Setenv("HOME", "/home/u")
	base := []string{"SANDBOXED_STATE_DIR=/state", "HOME=/home/u", "TOKEN=x"}
	for _, name := range serverEnv {
		if name != "SANDBOXED_STATE_DIR" && name != "HOME" {
			if v, ok := os.LookupEnv(name); ok {
				base = append(base, name+"="+v)
			}
		}
	}
	if why := envMismatch(base); why != "" {
		t.Errorf("the server's own environment is declined: %s", why)
	}
	if why := envMismatch(append([]string{"SANDBOXED_STATE_DIR=/other"}, base...)); why == "" {
		t.Error("another state directory is served")
	}
	if why := envMismatch(append([]string{"TOKEN=y"}, base...)); why != "" {
		t.Errorf("a variable of the run's own is declined: %s", why)
	}
}

// A server's run command has no cluster flags, so the CLI must keep a run that names one away from it (serveclient.Cold): every
// cluster flag, and every name of it, is known there. A new cluster flag
// that is not fails here rather than as a server's usage error.
func TestColdKnowsEveryClusterFlag(t *testing.T) {
	none := func(string) string { return "" }
	for _, f := range clusterFlags() {
		for _, name := range f.Names() {
			args := []string{"--" + name, "value", "tool"}
			if name == "backend" {
				args[1] = "kubernetes"
			}
			if why := serveclient.Cold(args, none); why == "" {
				t.Errorf("serveclient.Cold does not keep --%s from a server; add it to its cluster flags", name)
			}
		}
	}
	// And the server's run command knows every other flag of run.
	served := map[string]bool{}
	for _, f := range newRunCommand(false).Flags {
		for _, n := range f.Names() {
			served[n] = true
		}
	}
	cluster := map[string]bool{}
	for _, f := range clusterFlags() {
		for _, n := range f.Names() {
			cluster[n] = true
		}
	}
	for _, f := range newRunCommand(true).Flags {
		for _, n := range f.Names() {
			if !served[n] && !cluster[n] {
				t.Errorf("run's --%s is neither a server's flag nor a cluster flag", n)
			}
		}
	}
}
