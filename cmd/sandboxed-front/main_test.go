package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The front starts in the time of a small program only while it links
// little: the socket client, x/sys and the standard library. Anything
// more belongs in the CLI it hands commands to.
func TestFrontStaysSmall(t *testing.T) {
	out, err := exec.Command(goBin(), "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := map[string]bool{
		"github.com/sandboxed-dev/sandboxed/cmd/sandboxed-front":  true,
		"github.com/sandboxed-dev/sandboxed/internal/serveclient": true,
		"github.com/sandboxed-dev/sandboxed/internal/xdg":         true,
		"golang.org/x/sys/unix":                                   true,
	}
	for _, pkg := range strings.Fields(string(out)) {
		if !allowed[pkg] {
			t.Errorf("the front links %s: keep it in the CLI (cmd/sandboxed), which the front hands commands to", pkg)
		}
	}
}

func goBin() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// buildFront builds the front into a directory of its own and returns its
// path.
func buildFront(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sandboxed")
	build := exec.Command(goBin(), "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// Every command but a served run goes to sandboxed-core beside the front,
// with its arguments as given; a run no server takes goes there with
// --no-server, so the CLI does not ask a server again.
func TestHandsOverToCore(t *testing.T) {
	bin := buildFront(t)
	core := filepath.Join(filepath.Dir(bin), "sandboxed-core")
	if err := os.WriteFile(core, []byte("#!/bin/sh\necho \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"version"}, "", "version"},
		{[]string{"tool", "list", "--json"}, "", "tool list --json"},
		{[]string{"run", "--json", "hello.yaml", "name=x"}, "", "run --no-server --json hello.yaml name=x"},
		{[]string{"run", "--dry-run", "hello.yaml"}, "", "run --dry-run hello.yaml"},
		{[]string{"run", "hello.yaml"}, "SANDBOXED_NO_SERVER=1", "run hello.yaml"},
		{[]string{"mcp"}, "", "mcp"},
	}
	for _, tt := range tests {
		cmd := exec.Command(bin, tt.args...)
		// No server answers there.
		cmd.Env = append(os.Environ(), "SANDBOXED_SERVE_SOCKET="+filepath.Join(t.TempDir(), "none.sock"))
		if tt.env != "" {
			cmd.Env = append(cmd.Env, tt.env)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("sandboxed %q: %v: %s", tt.args, err, out)
			continue
		}
		if got := strings.TrimSpace(string(out)); got != tt.want {
			t.Errorf("sandboxed %q handed over %q, want %q", tt.args, got, tt.want)
		}
	}
}

// Without sandboxed-core beside it or on PATH the front says what is
// missing and how to fix it; a run exits 125 (the sandbox could not run),
// any other command 1.
func TestCoreMissing(t *testing.T) {
	bin := buildFront(t)
	for _, tt := range []struct {
		args []string
		code int
	}{{[]string{"run", "x.yaml"}, 125}, {[]string{"version"}, 1}} {
		cmd := exec.Command(bin, tt.args...)
		cmd.Env = []string{"PATH=/nonexistent", "SANDBOXED_SERVE_SOCKET=" + filepath.Join(t.TempDir(), "none.sock")}
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != tt.code {
			t.Errorf("sandboxed %q: %v, want exit %d", tt.args, err, tt.code)
		}
		if !strings.Contains(string(out), "sandboxed-core") || !strings.Contains(string(out), "make build") {
			t.Errorf("sandboxed %q said %q, want what is missing and how to fix it", tt.args, out)
		}
	}
}
