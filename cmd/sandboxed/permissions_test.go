package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/sandbox/explain"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// runApp runs the CLI with args and returns stdout, stderr and the exit
// code main would use.
func runApp(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	notFound = nil
	app := newApp()
	var out, errb bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errb
	err := app.Run(append([]string{"sandboxed"}, args...))
	if err == nil && notFound != nil {
		err = notFound
	}
	code := exitCode(err)
	if err != nil && !isSilent(err) {
		errb.WriteString("sandboxed: " + err.Error() + "\n")
	}
	return out.String(), errb.String(), code
}

// isolate points HOME, XDG_CONFIG_HOME and the state directory at a fresh
// directory and returns a policy file holding the built-in policy.
func isolate(t *testing.T) (home, policyFile string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("SANDBOXED_STATE_DIR", filepath.Join(home, "state"))
	t.Setenv("SANDBOXED_GLOBAL_DIR", filepath.Join(home, "etc"))
	policyFile = filepath.Join(home, "policy.yaml")
	if err := os.WriteFile(policyFile, policy.DefaultYAML(), 0o644); err != nil {
		t.Fatal(err)
	}
	return home, policyFile
}

func writeTool(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func exampleTools(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../examples/tools/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example tools: %v", err)
	}
	return files
}

// requiredPermissions reads a tool's permissions, through its base tool
// for an alias.
func requiredPermissions(t *testing.T, path string) []string {
	t.Helper()
	def, err := tool.Load(path, tool.ScopePath)
	if err != nil {
		t.Fatal(err)
	}
	if def.Type == "alias" {
		base, err := tool.Load(filepath.Join(filepath.Dir(path), def.BaseTool+".yaml"), tool.ScopePath)
		if err != nil {
			t.Fatal(err)
		}
		def = tool.MergeAlias(def, base)
	}
	return def.Security.RequiredPermissions
}

func TestExplainExamples(t *testing.T) {
	_, pol := isolate(t)
	for _, f := range exampleTools(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, errOut, code := runApp(t, "permissions", "explain", "--policy", pol, f)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, sec := range []string{"Verdict", "Filesystem", "Network", "Environment", "Privilege & isolation", "Resources", "Risks"} {
				if !strings.Contains(out, "\n"+sec+"\n") {
					t.Errorf("no section %s in:\n%s", sec, out)
				}
			}
			for _, p := range requiredPermissions(t, f) {
				if !strings.Contains(out, p) {
					t.Errorf("permission %s not mentioned in:\n%s", p, out)
				}
			}
			if !strings.Contains(out, "ALLOWED") && !strings.Contains(out, "NEEDS APPROVAL") && !strings.Contains(out, "DENIED") {
				t.Errorf("no verdict line in:\n%s", out)
			}
		})
	}
}

func TestExplainWithArguments(t *testing.T) {
	_, pol := isolate(t)
	dir := t.TempDir()
	file := writeTool(t, dir, "input.txt", "one two\n")
	out, errOut, code := runApp(t, "permissions", "explain", "--policy", pol, "../../examples/tools/word-count.yaml", "FILE="+file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"ALLOWED: runs in process isolation as uid",
		"reads 1 path, writes no paths, no network",
		"filesystem:read:" + file,
		"bind mount " + file + " -> " + file + ", read-only",
		"requested:   filesystem:read:{FILE}",
		"cgroup memory limit 64MiB",
		"cgroup pids.max",
		"seccomp profile sandboxed-same-as-user",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestExplainDeniedSSH(t *testing.T) {
	home, pol := isolate(t)
	dir := t.TempDir()
	f := writeTool(t, dir, "keys.yaml", `name: keys
description: reads the ssh keys
bash: cat ~/.ssh/id_ed25519
security:
  required-permissions:
    - "filesystem:read:~/.ssh"
tags: [read]
`)
	check := func(t *testing.T) {
		out, errOut, code := runApp(t, "permissions", "explain", "--policy", pol, f)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if !strings.Contains(out, "DENIED: filesystem:read:"+filepath.Join(home, ".ssh")+" by paths.deny[0] ~/.ssh") {
			t.Errorf("want a denial naming paths.deny[0] ~/.ssh, got:\n%s", out)
		}
		js, _, _ := runApp(t, "permissions", "explain", "--json", "--policy", pol, f)
		var e explain.Explanation
		if err := json.Unmarshal([]byte(js), &e); err != nil {
			t.Fatal(err)
		}
		if e.Verdict.Decision != explain.DecisionDenied || len(e.Filesystem) == 0 || e.Filesystem[0].Rule != "paths.deny[0] ~/.ssh" {
			t.Errorf("json: verdict %+v, filesystem %+v", e.Verdict, e.Filesystem)
		}
	}
	t.Run("missing", check) // decided on the declared path
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Run("present", check) // decided by sandbox.Prepare
}

func TestExplainAnyHostNeedsApproval(t *testing.T) {
	_, pol := isolate(t)
	dir := t.TempDir()
	f := writeTool(t, dir, "fetch.yaml", `name: fetch
description: fetches a page
bash: curl -s {URL}
parameters:
  URL:
    type: string
    description: the page
    required: true
security:
  required-permissions:
    - "network:external:*"
tags: [read]
`)
	out, errOut, code := runApp(t, "permissions", "explain", "--policy", pol, f)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	approved, errOut, code := runApp(t, "permissions", "explain", "--policy", pol, "--approve", "network:external:*", f)
	if code != 0 || !strings.Contains(approved, "ALLOWED: runs in process isolation") || !strings.Contains(approved, "approved by: --approve network:external:*") {
		t.Errorf("with --approve: exit %d %s\n%s", code, errOut, approved)
	}
	if _, _, code := runApp(t, "permissions", "explain", "--policy", pol, "--approve", "bogus", f); code != exitUsage {
		t.Errorf("--approve bogus: exit %d, want %d", code, exitUsage)
	}
	for _, want := range []string{
		"NEEDS APPROVAL: network:external:*",
		"--approve 'network:external:*'",
		"default: egress to any host (*) needs approval",
		"egress proxy allow rule *",
		"[HIGH] network:external:*: egress to any public host",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

const riskyTool = `name: risky
description: does risky things
bash: run {CMD} > {OUT}/x
parameters:
  CMD:
    type: string
    description: free text
    required: true
    security:
      escape-shell: false
  OUT:
    type: string
    description: where
    required: true
environment:
  inherit: true
security:
  isolation: none
  execution-privilege: elevated
  required-permissions:
    - "filesystem:write:{OUT}"
    - "filesystem:write:~/.bashrc"
    - "filesystem:read:/var/run/docker.sock"
    - "network:external:*.com"
    - "network:localhost:5432"
`

func TestExplainRisks(t *testing.T) {
	home, pol := isolate(t)
	dir := t.TempDir()
	f := writeTool(t, dir, "risky.yaml", riskyTool)
	js, errOut, code := runApp(t, "permissions", "explain", "--json", "--policy", pol, f)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var e explain.Explanation
	if err := json.Unmarshal([]byte(js), &e); err != nil {
		t.Fatal(err)
	}
	cats := map[string]bool{}
	for _, r := range e.Risks {
		cats[r.Category] = true
	}
	for _, want := range []string{
		explain.RiskCommandInjection, explain.RiskSecretLeak, explain.RiskUntagged,
		explain.RiskCallerPath, explain.RiskElevated, explain.RiskNoIsolation,
		explain.RiskExfiltration, explain.RiskHostServices,
	} {
		if !cats[want] {
			t.Errorf("no %s risk in %+v", want, e.Risks)
		}
	}
	if e.Verdict.Decision != explain.DecisionDenied {
		t.Errorf("elevated with isolation none and docker.sock: want denied, got %+v", e.Verdict)
	}
	_ = home
}

func TestExplainJSONSchema(t *testing.T) {
	_, pol := isolate(t)
	c := jsonschema.NewCompiler()
	sch, err := c.Compile("../../docs/explain.schema.json")
	if err != nil {
		t.Fatalf("compile schema: %v", err)
	}
	dir := t.TempDir()
	extra := writeTool(t, dir, "net.yaml", `name: net
description: network and env
bash: curl https://api.example.com
environment:
  inherit: true
  variables:
    MODE: fast
security:
  execution-privilege: elevated
  required-permissions:
    - "network:external:api.example.com"
    - "network:localhost:8080"
    - "env:API_TOKEN"
    - "filesystem:write:."
tags: [write]
`)
	// The schema is strict: an unknown field or a wrong verdict fails.
	for _, bad := range []string{`{"schema_version":2,"bogus":true}`, `{"schema_version":1}`} {
		inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		if sch.Validate(inst) == nil {
			t.Errorf("schema accepts %s", bad)
		}
	}
	risky := writeTool(t, dir, "risky.yaml", riskyTool)
	for _, f := range append(exampleTools(t), extra, risky) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, errOut, code := runApp(t, "permissions", "explain", "--json", "--policy", pol, f)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
			if err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			if err := sch.Validate(inst); err != nil {
				t.Fatalf("does not validate: %v\n%s", err, out)
			}
		})
	}
}

func TestExplainDiff(t *testing.T) {
	_, pol := isolate(t)
	dir := t.TempDir()
	body := `name: notes
description: appends a note
version: %s
bash: echo note >> notes.txt
security:
  required-permissions:
%s
tags: [write]
`
	old := writeTool(t, dir, "old.yaml", strings.Replace(strings.Replace(body, "%s", "1.0.0", 1), "%s", `    - "filesystem:write:."`, 1))
	newer := writeTool(t, dir, "new.yaml", strings.Replace(strings.Replace(body, "%s", "1.1.0", 1), "%s",
		`    - "filesystem:write:."
    - "network:external:api.example.com"`, 1)+"resources:\n  max-memory: 1GiB\n")
	out, errOut, code := runApp(t, "permissions", "explain", "--policy", pol, "--diff", old, newer)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"+ network:external:api.example.com  (added)", "limits.memory (requested)"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	js, _, _ := runApp(t, "permissions", "explain", "--json", "--policy", pol, "--diff", old, newer)
	var d explain.ExplainDiff
	if err := json.Unmarshal([]byte(js), &d); err != nil {
		t.Fatal(err)
	}
	sch, err := jsonschema.NewCompiler().Compile("../../docs/explain.schema.json#/$defs/diff")
	if err != nil {
		t.Fatalf("compile diff schema: %v", err)
	}
	inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(js))
	if err := sch.Validate(inst); err != nil {
		t.Errorf("diff does not validate: %v\n%s", err, js)
	}
	if len(d.PermissionsAdded) != 1 || d.PermissionsAdded[0] != "network:external:api.example.com" || len(d.PermissionsRemoved) != 0 {
		t.Errorf("diff: %+v", d)
	}
}

func TestExplainUsage(t *testing.T) {
	isolate(t)
	if _, _, code := runApp(t, "permissions", "explain"); code != exitUsage {
		t.Errorf("no tool: exit %d, want %d", code, exitUsage)
	}
	if _, _, code := runApp(t, "permissions", "explain", "./no-such-tool.yaml"); code != exitUsage {
		t.Errorf("missing tool: exit %d, want %d", code, exitUsage)
	}
}
