package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/tool"
)

// The spec's two `cycod tool add` examples, as a shell would split them.
var (
	specAddWeather = []string{"tool", "add", "weather-lookup",
		"--description", "Get weather for a location",
		"--bash", "curl -s 'wttr.in/{LOCATION}?format={FORMAT}'",
		"--parameter", "LOCATION", "City or airport code", "required=true",
		"--parameter", "FORMAT", "Output format", "default=3",
		"--tag", "weather", "--tag", "api", "--tag", "read",
		"--timeout", "10000",
	}
	specAddWorkflow = []string{"tool", "add", "github-workflow",
		"--description", "Run a complete GitHub workflow",
		"--step", "clone", "git clone {REPO_URL} {WORKSPACE}",
		"--step", "build", "cd {WORKSPACE} && npm install && npm run build",
		"--step", "test", "cd {WORKSPACE} && npm test",
		"--retry-attempts", "3", "--retry-delay", "1000",
		"--run-condition", "{build.exit-code} == 0",
		"--step", "cleanup", "rm -rf {WORKSPACE}",
		"--continue-on-error", "true",
		"--parameter", "REPO_URL", "GitHub repository URL", "required=true",
		"--parameter", "WORKSPACE", "Working directory", "default=./workspace",
		"--resource-timeout", "300000",
		"--security-permission", "filesystem:write:{WORKSPACE}",
		"--tag", "github", "--tag", "build", "--tag", "write",
	}
)

func TestToolAddSpecExamples(t *testing.T) {
	e := newCLIEnv(t)
	for _, args := range [][]string{specAddWeather, specAddWorkflow} {
		out, errOut, code := sandboxed(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", args[2], code, out, errOut)
		}
		path := filepath.Join(e.local(), args[2]+".yaml")
		if !strings.Contains(out, path) {
			t.Errorf("%s: output does not name %s: %q", args[2], path, out)
		}
		if out, _, code := sandboxed(t, "tool", "validate", path); code != 0 {
			t.Errorf("%s: written file does not validate:\n%s", args[2], out)
		}
	}

	w, err := tool.Load(filepath.Join(e.local(), "weather-lookup.yaml"), tool.ScopeLocal)
	if err != nil {
		t.Fatal(err)
	}
	if w.Exec == nil || w.Exec.Kind != tool.ExecBash || w.Timeout != 10*time.Second ||
		strings.Join(w.Tags, ",") != "weather,api,read" || len(w.Parameters) != 2 ||
		!w.Parameters[0].Required || w.Parameters[1].Default != "3" || w.Security.Isolation != tool.IsolationProcess {
		t.Errorf("weather-lookup: %+v", w)
	}

	g, err := tool.Load(filepath.Join(e.local(), "github-workflow.yaml"), tool.ScopeLocal)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Steps) != 4 {
		t.Fatalf("github-workflow steps: %+v", g.Steps)
	}
	test, cleanup := g.Steps[2], g.Steps[3]
	if test.ErrorHandling == nil || test.ErrorHandling.Retry == nil || test.ErrorHandling.Retry.Attempts != 3 ||
		test.ErrorHandling.Retry.Delay != time.Second || test.RunCondition != "{build.exit-code} == 0" || test.ContinueOnError {
		t.Errorf("test step: %+v", test)
	}
	if !cleanup.ContinueOnError || cleanup.Exec.Command != "rm -rf {WORKSPACE}" {
		t.Errorf("cleanup step: %+v", cleanup)
	}
	if g.Steps[0].ErrorHandling != nil || g.Steps[1].RunCondition != "" {
		t.Errorf("step modifiers leaked to other steps: %+v", g.Steps[:2])
	}
	if g.Resources == nil || g.Resources.Timeout != 300*time.Second ||
		strings.Join(g.Security.RequiredPermissions, ",") != "filesystem:write:{WORKSPACE}" ||
		g.Parameters[1].Default != "./workspace" {
		t.Errorf("github-workflow: %+v", g)
	}

	// Adding it again needs --overwrite.
	_, errOut, code := sandboxed(t, specAddWeather...)
	if code != exitUsage || !strings.Contains(errOut, "--overwrite") {
		t.Errorf("second add: exit %d %q", code, errOut)
	}
	if _, errOut, code := sandboxed(t, append(specAddWeather, "--overwrite")...); code != 0 {
		t.Errorf("add --overwrite: exit %d %s", code, errOut)
	}
}

func TestToolAddRefusesInvalid(t *testing.T) {
	e := newCLIEnv(t)
	_, errOut, code := sandboxed(t, "tool", "add", "bad", "--description", "d", "--bash", "echo {MISSING}")
	if code != exitUsage {
		t.Errorf("exit %d, want 2", code)
	}
	if !strings.Contains(errOut, "<generated bad.yaml>:3:") || !strings.Contains(errOut, "{MISSING}") || !strings.Contains(errOut, "nothing written") {
		t.Errorf("stderr:\n%s", errOut)
	}
	if _, err := os.Stat(filepath.Join(e.local(), "bad.yaml")); err == nil {
		t.Errorf("invalid definition written")
	}
}

func TestToolAddForms(t *testing.T) {
	e := newCLIEnv(t)
	out, errOut, code := sandboxed(t, "tool", "add", "multi", "--description", "d",
		"--step", "a=echo {X}",
		"--step", "b", "--pwsh", "Write-Output {X}", "--wait-for", "a", "--output-mode", "stream", "--buffer-limit", "1MB",
		"--parameter", "X=the x", "type=number", "default=2", "validation-min=1", "validation-max=5", "example=3",
		"--env", "K=V", "--inherit-env",
		"--security-isolation", "container", "--security-privilege", "reduced",
		"--category", "demo", "--search-keyword", "k", "--platform", "linux", "--version", "1.0.0",
		"--test", "t1", "a test", "--test-param", "X=3", "--test-expect-exit-code", "0", "--test-expect-contains", "3",
		"--dependency", "other", "required=false",
		"--scope", "user", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(e.user()); err == nil {
		t.Errorf("--dry-run wrote into %s", e.user())
	}
	d, err := tool.Parse([]byte(out), "dry-run.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b := d.Steps[1]
	if d.Steps[0].Exec.Command != "echo {X}" || b.Exec.Kind != tool.ExecPwsh || strings.Join(b.WaitFor, ",") != "a" ||
		b.Output.Mode != tool.OutputStream || b.Output.BufferLimit != 1<<20 {
		t.Errorf("steps: %+v", d.Steps)
	}
	p := d.Parameters[0]
	if p.Type != tool.TypeNumber || p.Default != 2.0 || *p.Validation.Minimum != 1 || *p.Validation.Maximum != 5 || len(p.Examples) != 1 {
		t.Errorf("parameter: %+v", p)
	}
	if !d.Environment.Inherit || d.Environment.Variables["K"] != "V" || d.Security.Isolation != tool.IsolationContainer ||
		d.Metadata.Category != "demo" || d.Tests == nil || len(d.Tests.Cases) != 1 || *d.Tests.Cases[0].Expected.ExitCode != 0 ||
		len(d.Dependencies) != 1 || d.Dependencies[0].Required {
		t.Errorf("definition: %+v", d)
	}

	// --from-file, adding a tag and replacing the description.
	src := filepath.Join(e.cwd, "hello.yaml")
	writeFile(t, src, helloTool)
	if _, errOut, code := sandboxed(t, "tool", "add", "hello2", "--from-file", src, "--tag", "extra", "--description", "new"); code != 0 {
		t.Fatalf("--from-file: exit %d %s", code, errOut)
	}
	h, err := tool.Load(filepath.Join(e.local(), "hello2.yaml"), tool.ScopeLocal)
	if err != nil || h.Name != "hello2" || h.Description != "new" || strings.Join(h.Tags, ",") != "demo,read,extra" {
		t.Errorf("--from-file: %v %+v", err, h)
	}
}

func TestToolAddUsageErrors(t *testing.T) {
	newCLIEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"x", "--bash", "echo"}, "--description is required"},
		{[]string{"--description", "d"}, "which name"},
		{[]string{"x", "--description", "d", "--retry-attempts", "2"}, "give a --step first"},
		{[]string{"x", "--description", "d", "--bash", "true", "--parameter", "P", "p", "colour=red"}, `unknown option "colour"`},
		{[]string{"x", "--description", "d", "--bash", "true", "--parameter", "P"}, "needs a description"},
		{[]string{"x", "--description", "d", "--bogus"}, "unknown flag --bogus"},
		{[]string{"x", "--description", "d", "--bash", "a", "--run", "b"}, "already has a command"},
		{[]string{"x", "--description", "d", "--timeout", "soon"}, "--timeout"},
		{[]string{"x", "--description", "d", "--bash", "true", "--scope", "any"}, "--scope any"},
		{[]string{"x", "--description", "d", "--editor"}, "not supported"},
		{[]string{"x", "--description", "d", "--test-param", "A=1"}, "give a --test first"},
	} {
		_, errOut, code := sandboxed(t, append([]string{"tool", "add"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 with %q", tc.args, code, errOut, tc.want)
		}
	}
	out, _, code := sandboxed(t, "tool", "add", "--help")
	if code != 0 || !strings.Contains(out, "--step") || !strings.Contains(out, "--security-permission") {
		t.Errorf("--help: exit %d\n%s", code, out)
	}
}
