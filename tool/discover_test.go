package tool

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

func TestIsSimpleAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  string
		want bool
	}{
		{"answer", `{"success": true, "_simple": true}` + "\n", true},
		{"twice", `{"success": true, "_simple": true}` + "\n" + `{"success": true, "_simple": true}` + "\n", true},
		{"banner first", "loading...\n" + `{"success":true,"_simple":true}`, true},
		{"error answer", `{"error": "unknown action"}`, false},
		{"not simple", `{"success": true}`, false},
		{"string true", `{"success": "true", "_simple": "true"}`, false},
		{"text", "usage: x [-h]\n", false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsSimpleAnswer(tc.out); got != tc.want {
				t.Errorf("IsSimpleAnswer(%q) = %v, want %v", tc.out, got, tc.want)
			}
		})
	}
}

func TestParseSchemaDump(t *testing.T) {
	for _, tc := range []struct {
		name      string
		out       string
		multi     bool
		wantNames []string
		wantProps []string // of the first decl
		wantDesc  string
		wantOut   bool
		wantErr   string
	}{
		{name: "openai", out: `{"name":"weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`,
			wantNames: []string{"weather"}, wantProps: []string{"city"}, wantDesc: "Weather"},
		{name: "no name", out: `{"description":"D","parameters":{"type":"object","properties":{"a":{}}}}`,
			wantNames: []string{""}, wantProps: []string{"a"}, wantDesc: "D"},
		{name: "anthropic", out: `{"name":"t","description":"D","input_schema":{"type":"object","properties":{"q":{"type":"string"}}},"output_schema":{"type":"object"}}`,
			wantNames: []string{"t"}, wantProps: []string{"q"}, wantDesc: "D", wantOut: true},
		{name: "mcp", out: `{"name":"t","inputSchema":{"type":"object","properties":{"q":{}}}}`,
			wantNames: []string{"t"}, wantProps: []string{"q"}},
		{name: "function wrapper", out: `{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{}}}}}`,
			wantNames: []string{"f"}, wantProps: []string{"x"}},
		{name: "bare schema", out: `{"type":"object","title":"Adder","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`,
			wantNames: []string{""}, wantProps: []string{"a", "b"}, wantDesc: "Adder"},
		{name: "pretty printed", out: "{\n  \"name\": \"p\",\n  \"parameters\": {\"type\": \"object\", \"properties\": {}}\n}\n",
			wantNames: []string{"p"}},
		{name: "single as list", out: `[{"name":"a","parameters":{"type":"object"}},{"name":"b","parameters":{"type":"object"}}]`,
			wantNames: []string{"a", "b"}},
		{name: "multi", multi: true, out: `[{"name":"a","parameters":{"type":"object"}},{"name":"b","parameters":{"type":"object"}}]`,
			wantNames: []string{"a", "b"}},
		{name: "multi tools key", multi: true, out: `{"tools":[{"name":"a","parameters":{"type":"object"}}]}`,
			wantNames: []string{"a"}},
		{name: "multi object", multi: true, out: `{"name":"a","parameters":{"type":"object"}}`, wantErr: "not a list"},
		{name: "error answer", out: `{"error": "Expecting value: line 1 column 1"}`, wantErr: "answered with an error"},
		{name: "ping answer", out: `{"success": true, "_simple": true}`, wantErr: "no parameters"},
		{name: "not json", out: "usage: tool [-h]\n", wantErr: "not JSON"},
		{name: "empty", out: "", wantErr: "no output"},
		{name: "parameters not object", out: `{"name":"a","parameters":{"type":"string"}}`, wantErr: "type string"},
		{name: "empty list", out: `[]`, wantErr: "no tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := ParseSchemaDump(tc.out, tc.multi)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, d := range ds {
				names = append(names, d.Name)
			}
			if !reflect.DeepEqual(names, tc.wantNames) {
				t.Errorf("names = %q, want %q", names, tc.wantNames)
			}
			if tc.wantProps != nil {
				props, _ := ds[0].Input["properties"].(map[string]any)
				var got []string
				for _, p := range tc.wantProps {
					if _, ok := props[p]; ok {
						got = append(got, p)
					}
				}
				if len(got) != len(tc.wantProps) || len(props) != len(tc.wantProps) {
					t.Errorf("properties = %v, want %v", props, tc.wantProps)
				}
			}
			if ds[0].Description != tc.wantDesc {
				t.Errorf("description = %q, want %q", ds[0].Description, tc.wantDesc)
			}
			if ds[0].HasOutput != tc.wantOut {
				t.Errorf("HasOutput = %v", ds[0].HasOutput)
			}
		})
	}
}

const (
	pingOK     = `{"success": true, "_simple": true}` + "\n"
	schemaDump = `{"description":"Greets","parameters":{"type":"object","properties":{"name":{"type":"string","description":"Who"},"times":{"type":"integer","minimum":1,"maximum":5,"default":1}},"required":["name"]}}`
	multiDump  = `[{"name":"up","description":"Upper","parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},{"name":"down","description":"Lower","parameters":{"type":"object","properties":{"text":{"type":"string"}}}}]`
	argError   = `{"error": "Expecting value: line 1 column 1 (char 0)"}` + "\n"
)

type fakeProbes map[ProbeKind]ProbeOutput

func (f fakeProbes) probe(k ProbeKind) ProbeOutput { return f[k] }

func TestDiscover(t *testing.T) {
	s := Script{File: "greet.py", Path: "/tools/greet.py", Argv: []string{"/tools/greet.py"}}
	for _, tc := range []struct {
		name       string
		probes     fakeProbes
		wantResult string
		wantNames  []string
		wantSource ProbeKind
		wantWhy    string
		wantRan    []ProbeKind
	}{
		{name: "simple json with schema",
			probes:     fakeProbes{ProbePing: {Stdout: pingOK}, ProbeMultiSchema: {Stdout: argError, ExitCode: 1}, ProbeSchema: {Stdout: schemaDump}},
			wantResult: ResultRegistered, wantNames: []string{"greet"}, wantSource: ProbeSchema,
			wantRan: []ProbeKind{ProbePing, ProbeMultiSchema, ProbeSchema}},
		{name: "ping printed twice",
			probes:     fakeProbes{ProbePing: {Stdout: pingOK + pingOK}, ProbeSchema: {Stdout: schemaDump}},
			wantResult: ResultRegistered, wantNames: []string{"greet"}, wantSource: ProbeSchema},
		{name: "rejects ping, dumps schema",
			probes:     fakeProbes{ProbePing: {Stdout: `{"error":"bad input"}`, ExitCode: 1}, ProbeSchema: {Stdout: schemaDump}},
			wantResult: ResultRegistered, wantNames: []string{"greet"}, wantSource: ProbeSchema, wantWhy: "did not answer the simple JSON ping"},
		{name: "legacy argparse with schema",
			probes:     fakeProbes{ProbePing: {Stderr: "usage: greet.py [-h] --name NAME\ngreet.py: error: unrecognized arguments: {\"__test__\": true}\n", ExitCode: 2}, ProbeMultiSchema: {ExitCode: 2, Stderr: "usage: x"}, ProbeSchema: {Stdout: schemaDump}},
			wantResult: ResultRegistered, wantNames: []string{"greet"}, wantSource: ProbeSchema, wantWhy: "a command line"},
		{name: "multi schema",
			probes:     fakeProbes{ProbePing: {Stdout: pingOK}, ProbeMultiSchema: {Stdout: multiDump}},
			wantResult: ResultRegistered, wantNames: []string{"up", "down"}, wantSource: ProbeMultiSchema, wantWhy: `"action": TOOL`,
			wantRan: []ProbeKind{ProbePing, ProbeMultiSchema}},
		{name: "ping only",
			probes:     fakeProbes{ProbePing: {Stdout: pingOK}},
			wantResult: ResultRegistered, wantNames: []string{"greet"}, wantSource: ProbePing, wantWhy: "without parameters"},
		{name: "help only",
			probes:     fakeProbes{ProbePing: {Stderr: "usage: greet [-h] --name NAME\nerror: unrecognized arguments", ExitCode: 2}, ProbeMultiSchema: {ExitCode: 2}, ProbeSchema: {ExitCode: 2}, ProbeHelp: {Stdout: "usage: greet [-h] --name NAME\n\nGreet someone.\n\noptions:\n  -h, --help   show this help message and exit\n  --name NAME  Who\n"}},
			wantResult: ResultRegistered, wantNames: []string{"greet"}, wantSource: ProbeHelp, wantWhy: "described by --help only",
			wantRan: []ProbeKind{ProbePing, ProbeMultiSchema, ProbeSchema, ProbeHelp}},
		{name: "help without usage",
			probes:     fakeProbes{ProbePing: {ExitCode: 1}, ProbeSchema: {ExitCode: 1}, ProbeHelp: {Stdout: "I am a tool\n"}},
			wantResult: ResultSkipped, wantWhy: "without a usage: line"},
		{name: "not readable by nobody",
			probes:     fakeProbes{ProbePing: {ExitCode: 126, Stderr: "sandboxed: exec /t/greet.py: permission denied"}, ProbeSchema: {ExitCode: 126}, ProbeHelp: {ExitCode: 126}},
			wantResult: ResultSkipped, wantWhy: "must be world-readable"},
		{name: "missing module",
			probes:     fakeProbes{ProbePing: {Stderr: "Traceback (most recent call last):\n  File \"x\", line 3\nModuleNotFoundError: No module named 'requests'\n", ExitCode: 1}, ProbeMultiSchema: {ExitCode: 1}, ProbeSchema: {ExitCode: 1}, ProbeHelp: {ExitCode: 1}},
			wantResult: ResultSkipped, wantWhy: "No module named 'requests'"},
		{name: "timeout",
			probes:     fakeProbes{ProbePing: {TimedOut: true, ExitCode: 124}, ProbeMultiSchema: {TimedOut: true}, ProbeSchema: {TimedOut: true}, ProbeHelp: {TimedOut: true}},
			wantResult: ResultSkipped, wantWhy: "ping and multi-schema dump timed out",
			wantRan: []ProbeKind{ProbePing, ProbeMultiSchema}},
		{name: "ping times out, schema answers",
			probes:     fakeProbes{ProbePing: {TimedOut: true, ExitCode: 124}, ProbeSchema: {Stdout: schemaDump}},
			wantResult: ResultRegistered, wantNames: []string{"greet"}, wantSource: ProbeSchema, wantWhy: "timed out"},
		{name: "sandbox failure",
			probes:     fakeProbes{ProbePing: {Error: "start sandbox: boom", ExitCode: 125}, ProbeMultiSchema: {Error: "x"}, ProbeSchema: {Error: "x"}, ProbeHelp: {Error: "x"}},
			wantResult: ResultSkipped, wantWhy: "sandbox failed: start sandbox: boom"},
		{name: "bad schema",
			probes:     fakeProbes{ProbePing: {ExitCode: 1}, ProbeSchema: {Stdout: `{"name": "x"}`}, ProbeHelp: {ExitCode: 1}},
			wantResult: ResultSkipped, wantWhy: "schema dump: the dump has no parameters"},
		{name: "bad parameter name",
			probes:     fakeProbes{ProbePing: {Stdout: pingOK}, ProbeSchema: {Stdout: `{"parameters":{"type":"object","properties":{"a\tb":{}}}}`}},
			wantResult: ResultSkipped, wantWhy: `parameter "a\tb"`},
		{name: "parameter names CYCOD cannot spell",
			probes:     fakeProbes{ProbePing: {Stdout: pingOK}, ProbeSchema: {Stdout: `{"name":"_ls","parameters":{"type":"object","properties":{"-A":{"type":"boolean"},"max-depth":{"type":"integer"},"a b":{}}}}`}},
			wantResult: ResultRegistered, wantNames: []string{"ls"}, wantSource: ProbeSchema},
		{name: "two tools one name",
			probes:     fakeProbes{ProbePing: {Stdout: pingOK}, ProbeMultiSchema: {Stdout: `[{"name":"_ls","parameters":{"type":"object"}},{"name":"ls","parameters":{"type":"object"}}]`}},
			wantResult: ResultSkipped, wantWhy: `tools "_ls" and "ls", which both become the tool name ls`},
		{name: "bad tool name",
			probes:     fakeProbes{ProbePing: {Stdout: pingOK}, ProbeSchema: {Stdout: `{"name":"a b","parameters":{"type":"object"}}`}},
			wantResult: ResultSkipped, wantWhy: `tool name "a b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran []ProbeKind
			d := Discover(s, func(k ProbeKind) ProbeOutput { ran = append(ran, k); return tc.probes.probe(k) })
			if d.Result != tc.wantResult {
				t.Fatalf("result = %s (%s), want %s", d.Result, d.Why, tc.wantResult)
			}
			if tc.wantResult == ResultRegistered && !reflect.DeepEqual(d.Names, tc.wantNames) {
				t.Errorf("names = %v, want %v", d.Names, tc.wantNames)
			}
			if d.Source != tc.wantSource {
				t.Errorf("source = %q, want %q", d.Source, tc.wantSource)
			}
			if !strings.Contains(d.Why, tc.wantWhy) {
				t.Errorf("why = %q, want it to say %q", d.Why, tc.wantWhy)
			}
			if tc.wantRan != nil && !reflect.DeepEqual(ran, tc.wantRan) {
				t.Errorf("probes run = %v, want %v", ran, tc.wantRan)
			}
			for _, def := range d.Tools {
				roundTrip(t, def)
			}
		})
	}
}

// roundTrip writes def as YAML and loads it back: what discover --write
// writes must be a valid definition.
func roundTrip(t *testing.T, def *Definition) *Definition {
	t.Helper()
	data, err := Marshal(def, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(data, def.Name+".yaml")
	if err != nil {
		t.Fatalf("generated definition does not load: %v\n%s", err, data)
	}
	if back.Security.ExecutionPrivilege != PrivilegeReduced || back.Security.Isolation != IsolationProcess {
		t.Errorf("security = %+v", back.Security)
	}
	return back
}

func TestDefinitionForParameters(t *testing.T) {
	s := Script{File: "greet.py", Path: "/tools/greet.py", Argv: []string{"/tools/greet.py"}}
	ds, err := ParseSchemaDump(schemaDump, false)
	if err != nil {
		t.Fatal(err)
	}
	def, err := DefinitionFor(s, ds[0], "greet", "")
	if err != nil {
		t.Fatal(err)
	}
	def = roundTrip(t, def)
	if len(def.Parameters) != 2 || def.Parameters[0].Name != "name" || !def.Parameters[0].Required {
		t.Fatalf("parameters = %+v", def.Parameters)
	}
	times := def.Parameters[1]
	if times.Type != TypeNumber || times.Validation == nil || *times.Validation.Maximum != 5 || times.Default != 1.0 {
		t.Errorf("times = %+v", times)
	}
	if got := def.Security.RequiredPermissions; !reflect.DeepEqual(got, []string{"filesystem:read:/tools/greet.py"}) {
		t.Errorf("permissions = %v", got)
	}
	if def.Description != "Greets" {
		t.Errorf("description = %q", def.Description)
	}
	fs, err := FunctionSchema(def, SchemaMCP)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(fs)
	if !strings.Contains(string(b), `"required":["name"]`) {
		t.Errorf("schema = %s", b)
	}
}

// TestSimpleJSONCommand runs the generated command with bash against a
// stand-in script that prints its argv[1]: whatever the values, the
// script gets one valid JSON object holding exactly the parameters given.
func TestSimpleJSONCommand(t *testing.T) {
	testenv.NeedCommand(t, "bash")
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	echo := filepath.Join(dir, "echo.sh")
	if err := os.WriteFile(echo, []byte("#!/bin/sh\nprintf '%s\\n' \"$1\"\n[ \"$2\" = \"\" ] || exit 9\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	props := `{"type":"object","properties":{"s":{"type":"string"},"n":{"type":"number"},"b":{"type":"boolean"},"a":{"type":"array"},"o":{"type":"object"}}}`
	for _, tc := range []struct {
		name   string
		in     Input
		action string
		want   map[string]any
	}{
		{"none", Input{}, "", map[string]any{}},
		{"hostile string", Input{"s": `'"; $(touch /tmp/pwned) ` + "`id`\n\\\"}, {\"x\": 1"}, "",
			map[string]any{"s": `'"; $(touch /tmp/pwned) ` + "`id`\n\\\"}, {\"x\": 1"}},
		{"typed", Input{"n": "2.5", "b": "false", "a": []any{"x", 1.0}, "o": map[string]any{"k": "v"}}, "",
			map[string]any{"n": 2.5, "b": false, "a": []any{"x", 1.0}, "o": map[string]any{"k": "v"}}},
		{"empty string kept", Input{"s": ""}, "", map[string]any{"s": ""}},
		{"action", Input{"s": "x"}, "up", map[string]any{"action": "up", "s": "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := ParseSchemaDump(props, false)
			if err != nil {
				t.Fatal(err)
			}
			def, err := DefinitionFor(Script{File: "echo.sh", Path: echo, Argv: []string{echo}}, ds[0], "echo", tc.action)
			if err != nil {
				t.Fatal(err)
			}
			def = roundTrip(t, def)
			b, err := Bind(def, tc.in, BindEnv{Workspace: dir})
			if err != nil {
				t.Fatal(err)
			}
			argv := b.Steps[0].Argv
			out, err := exec.Command(bash, append([]string{"-c"}, argv[len(argv)-1])...).Output()
			if err != nil {
				t.Fatalf("run: %v\n%s", err, argv[len(argv)-1])
			}
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("argv[1] is not a JSON object: %v: %q", err, out)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("argv[1] = %v, want %v", got, tc.want)
			}
		})
	}
	// An {"error": ...} answer fails the call.
	errScript := filepath.Join(dir, "err.sh")
	os.WriteFile(errScript, []byte("#!/bin/sh\necho '{\"error\": \"no such city\"}'\n"), 0o755)
	ds, _ := ParseSchemaDump(`{"type":"object"}`, false)
	def, err := DefinitionFor(Script{File: "err.sh", Path: errScript, Argv: []string{errScript}}, ds[0], "err", "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Bind(def, Input{}, BindEnv{Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, "-c", b.Steps[0].Argv[len(b.Steps[0].Argv)-1])
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("error answer: err = %v, want exit 1", err)
	}
	if !strings.Contains(string(out), "no such city") || !strings.Contains(stderr.String(), "answered with an error: {\"error\": \"no such city\"}") {
		t.Errorf("stdout %q stderr %q", out, stderr.String())
	}
}

func TestParseShebang(t *testing.T) {
	for _, tc := range []struct {
		line    string
		want    []string
		wantErr bool
	}{
		{"#!/usr/bin/python3\n", []string{"/usr/bin/python3"}, false},
		{"#!/usr/bin/env python3\n", []string{"/usr/bin/env", "python3"}, false},
		{"#! /bin/bash -eu\n", []string{"/bin/bash", "-eu"}, false},
		{"#!python\n", nil, true},
		{"import os\n", nil, true},
	} {
		got, err := ParseShebang(tc.line)
		if (err != nil) != tc.wantErr || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseShebang(%q) = %v, %v", tc.line, got, err)
		}
	}
}

func TestFindScripts(t *testing.T) {
	dir := t.TempDir()
	files := map[string]struct {
		body string
		mode os.FileMode
	}{
		"exec.py":      {"#!/usr/bin/python3\n", 0o755},
		"noexec.py":    {"#!/usr/bin/env python3\n", 0o644},
		"noshebang.sh": {"echo hi\n", 0o644},
		"has.sh":       {"#!/bin/sh\n", 0o755},
		"has.yaml":     {"name: has\n", 0o644},
		"README.md":    {"x", 0o644},
		"data.csv":     {"x", 0o644},
		"bin-tool":     {"\x7fELF", 0o755},
	}
	for n, f := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(f.body), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	scripts, skipped, err := FindScripts(dir, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, s := range scripts {
		got[s.File] = s.Argv
	}
	real, _ := filepath.EvalSymlinks(dir)
	want := map[string][]string{
		"bin-tool":  {filepath.Join(real, "bin-tool")},
		"exec.py":   {filepath.Join(real, "exec.py")},
		"noexec.py": {"/usr/bin/env", "python3", filepath.Join(real, "noexec.py")},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scripts = %v, want %v", got, want)
	}
	whys := map[string]string{}
	for _, d := range skipped {
		whys[d.File] = d.Why
	}
	if !strings.Contains(whys["has.sh"], "companion definition") || !strings.Contains(whys["noshebang.sh"], "no #! line") || len(whys) != 2 {
		t.Errorf("skipped = %v", whys)
	}
}

// TestFindScriptsRepository: a repository shaped like a real one is
// searched folder by folder; what is passed over says why.
func TestFindScriptsRepository(t *testing.T) {
	dir := t.TempDir()
	files := map[string]struct {
		body string
		mode os.FileMode
	}{
		"top.sh":                      {"#!/bin/sh\n", 0o755},
		"os/shell_tool.py":            {"#!/usr/bin/env python3\nimport os_helpers\n", 0o644},
		"os/os_helpers.py":            {"def f(): pass\n", 0o644},
		"crm/hub/hub_tool.py":         {"#!/usr/bin/python3\n", 0o755},
		"lib/__init__.py":             {"", 0o644},
		"lib/util.py":                 {"x = 1\n", 0o644},
		"a/b/c/deep.sh":               {"#!/bin/sh\n", 0o755},
		"node_modules/x/cli.js":       {"#!/usr/bin/env node\n", 0o755},
		".git/hooks/pre-commit":       {"#!/bin/sh\n", 0o755},
		"venv/pyvenv.cfg":             {"home = /usr/bin\n", 0o644},
		"venv/bin/tool":               {"#!/bin/sh\n", 0o755},
		"os/__pycache__/x.cpython.sh": {"#!/bin/sh\n", 0o755},
	}
	for n, f := range files {
		p := filepath.Join(dir, n)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(f.body), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	real, _ := filepath.EvalSymlinks(dir)
	scripts, skipped, err := FindScripts(dir, ScanOptions{MaxDepth: 2, SandboxPath: func(p string) string { return "/usr/bin/" + p }})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Script{}
	for _, s := range scripts {
		got[s.File] = s
	}
	if len(got) != 3 || got["top.sh"].Path == "" || got["crm/hub/hub_tool.py"].Path == "" {
		t.Fatalf("scripts = %v", scripts)
	}
	sh := got["os/shell_tool.py"]
	if !reflect.DeepEqual(sh.Argv, []string{"/usr/bin/env", "python3", filepath.Join(real, "os/shell_tool.py")}) || sh.Interpreter != "/usr/bin/python3" {
		t.Errorf("shell_tool = %+v", sh)
	}
	if !reflect.DeepEqual(sh.ReadPaths(), []string{filepath.Join(real, "os")}) {
		t.Errorf("shell_tool reads %v, want its folder", sh.ReadPaths())
	}
	whys := map[string]string{}
	for _, d := range skipped {
		whys[d.File] = d.Why
	}
	for file, want := range map[string]string{
		"os/os_helpers.py": "a module, not a tool",
		"lib/util.py":      "a module of the Python package lib",
		"a/b/c/":           "deeper than --depth 2",
		"node_modules/":    "installed JavaScript packages",
		"venv/":            "virtual environment",
		"os/__pycache__/":  "bytecode cache",
	} {
		if !strings.Contains(whys[file], want) {
			t.Errorf("%s: why %q, want %q (all: %v)", file, whys[file], want, whys)
		}
	}
	if _, ok := whys[".git/"]; ok {
		t.Errorf(".git is reported: %v", whys)
	}

	// Another interpreter runs the scripts of its language, and its
	// environment is readable.
	venv := filepath.Join(dir, "venv")
	scripts, _, err = FindScripts(filepath.Join(dir, "os"), ScanOptions{Interpreter: filepath.Join(venv, "bin", "python")})
	if err != nil || len(scripts) != 1 {
		t.Fatalf("%v %v", scripts, err)
	}
	if s := scripts[0]; s.Argv[0] != filepath.Join(venv, "bin", "python") || !slices.Contains(s.ReadPaths(), filepath.Join(real, "venv")) {
		t.Errorf("with --interpreter: %+v", s)
	}
}

func TestMissingModuleHint(t *testing.T) {
	s := Script{File: "hub.py", Path: "/t/hub.py", Argv: []string{"/usr/bin/env", "python3", "/t/hub.py"}, Interpreter: "/usr/bin/python3", HostInterpreter: "/home/u/.pyenv/shims/python3"}
	d := Discover(s, func(k ProbeKind) ProbeOutput {
		return ProbeOutput{ExitCode: 1, Stderr: "Traceback (most recent call last):\nModuleNotFoundError: No module named 'hubspot'\n"}
	})
	for _, want := range []string{"the interpreter that ran is /usr/bin/python3, which has no module hubspot", "/home/u/.pyenv/shims/python3, is not seen in a sandbox", "--interpreter VENV/bin/python"} {
		if !strings.Contains(d.Why, want) {
			t.Errorf("why %q lacks %q", d.Why, want)
		}
	}
}
