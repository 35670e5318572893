package tool

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

func TestToolNameFor(t *testing.T) {
	for in, want := range map[string]string{
		"_ls": "ls", "__read": "read", "-dash": "dash", "_-x_y": "x_y", "LS": "LS", "2fa": "2fa",
		"my-tool_1": "my-tool_1", "_": "tool", "-": "tool",
	} {
		if got := ToolNameFor(in); got != want {
			t.Errorf("ToolNameFor(%q) = %q, want %q", in, got, want)
		}
		if !isToolName(ToolNameFor(in)) {
			t.Errorf("ToolNameFor(%q) = %q is not a tool name", in, ToolNameFor(in))
		}
	}
	for in, want := range map[string]string{"_ls.py": "ls", "-x.sh": "x", "a b.py": "a_b", "_.sh": "tool"} {
		if got := BaseName(in); got != want {
			t.Errorf("BaseName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParamNamesFor(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want map[string]string
	}{
		{[]string{"path", "max-depth", "MAX_DEPTH", "_x"}, map[string]string{"path": "path", "max-depth": "max-depth", "MAX_DEPTH": "MAX_DEPTH", "_x": "_x"}},
		{[]string{"-A", "--all", "a.b", "2x", "é", "-", ""}, map[string]string{"-A": "A", "--all": "all", "a.b": "a_b", "2x": "_2x", "é": "_", "": "param", "-": "param_2"}},
		// A kept name is taken first; derived ones count up in name order.
		{[]string{"-A", "A", "--A", "A_2"}, map[string]string{"A": "A", "A_2": "A_2", "--A": "A_3", "-A": "A_4"}},
		{[]string{"a.b", "a b", "a_b"}, map[string]string{"a_b": "a_b", "a b": "a_b_2", "a.b": "a_b_3"}},
		// A built-in's name is never a parameter's: a parameter would
		// shadow {WORKSPACE} in a permission given with discover --grant,
		// and the agent would choose the path.
		{[]string{"WORKSPACE", "TEMP", "TOOL_NAME", "WORKSPACE_2"}, map[string]string{"WORKSPACE_2": "WORKSPACE_2", "WORKSPACE": "WORKSPACE_3", "TEMP": "TEMP_2", "TOOL_NAME": "TOOL_NAME_2"}},
	} {
		got := ParamNamesFor(tc.in)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParamNamesFor(%q) = %v, want %v", tc.in, got, tc.want)
		}
		seen := map[string]bool{}
		for _, own := range got {
			if seen[own] || !isNameIdent(own) {
				t.Errorf("ParamNamesFor(%q): %q is a duplicate or not a parameter name", tc.in, own)
			}
			seen[own] = true
		}
	}
}

// nameCall is one call of a discovered tool, with arguments under the
// names the function schema shows, and what the script must receive.
type nameCall struct {
	tool string
	args Input
	// want is the JSON object argv[1] holds (simple JSON), or the
	// arguments after the script's path, one per line (command line).
	want any
}

// TestDiscoverNameShapes discovers sample scripts of every shape of name,
// writes each definition as discover --write does, loads it back with the
// loader, checks its schema (tool schema, MCP) shows the script's own
// names, and runs it: the script receives its own names, unchanged.
func TestDiscoverNameShapes(t *testing.T) {
	testenv.NeedCommand(t, "bash")
	dir := t.TempDir()
	jsonScript := "#!/bin/sh\nprintf '%s\\n' \"$1\"\n"
	argvScript := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n"
	usage := ProbeOutput{ExitCode: 2, Stderr: "usage: x [-h]\nx: error: unrecognized arguments\n"}
	for _, tc := range []struct {
		file    string
		body    string
		probes  fakeProbes
		names   []string          // definition names
		exposed map[string]string // definition name -> function name
		props   map[string][]string
		calls   []nameCall
	}{
		{file: "_ls", body: jsonScript,
			probes: fakeProbes{ProbePing: {Stdout: pingOK}, ProbeSchema: {Stdout: `{"name":"_ls","description":"List","parameters":{"type":"object","properties":{
				"-A":{"type":"boolean"},"A":{"type":"string"},"max-depth":{"type":"integer"},"--all":{"type":"boolean"},"a.b":{"type":"string"},"2x":{"type":"number"},"path":{"type":"string"},"{path}":{"type":"string"},"a\"b":{"type":"string"}},"required":["max-depth"]}}`}},
			names: []string{"ls"}, exposed: map[string]string{"ls": "_ls"},
			props: map[string][]string{"ls": {"--all", "-A", "2x", "A", "a\"b", "a.b", "max-depth", "path", "{path}"}},
			calls: []nameCall{
				{"ls", Input{"-A": true, "max-depth": 2.0, "--all": false, "a.b": "x y", "2x": 1.5, "A": "big", "{path}": "p", "a\"b": "q"},
					map[string]any{"-A": true, "max-depth": 2.0, "--all": false, "a.b": "x y", "2x": 1.5, "A": "big", "{path}": "p", "a\"b": "q"}},
				{"ls", Input{"max-depth": "3", "path": "/w"}, map[string]any{"max-depth": 3.0, "path": "/w"}},
			}},
		{file: "-dash.sh", body: jsonScript,
			probes: fakeProbes{ProbePing: {Stdout: pingOK}, ProbeSchema: {Stdout: `{"type":"object","properties":{"--verbose":{"type":"boolean"}}}`}},
			names:  []string{"dash"}, exposed: map[string]string{"dash": "-dash"}, props: map[string][]string{"dash": {"--verbose"}},
			calls: []nameCall{{"dash", Input{"--verbose": true}, map[string]any{"--verbose": true}}}},
		{file: "upper.py", body: jsonScript,
			probes: fakeProbes{ProbePing: {Stdout: pingOK}, ProbeSchema: {Stdout: `{"name":"LS","parameters":{"type":"object","properties":{"Path":{"type":"string"}}}}`}},
			names:  []string{"LS"}, exposed: map[string]string{"LS": "LS"}, props: map[string][]string{"LS": {"Path"}},
			calls: []nameCall{{"LS", Input{"Path": "x"}, map[string]any{"Path": "x"}}}},
		{file: "2fa", body: jsonScript,
			probes: fakeProbes{ProbePing: {Stdout: pingOK}, ProbeSchema: {Stdout: `{"parameters":{"type":"object","properties":{"6digits":{"type":"string"}}}}`}},
			names:  []string{"2fa"}, exposed: map[string]string{"2fa": "2fa"}, props: map[string][]string{"2fa": {"6digits"}},
			calls: []nameCall{{"2fa", Input{"6digits": "123456"}, map[string]any{"6digits": "123456"}}}},
		{file: "_files.py", body: jsonScript,
			probes: fakeProbes{ProbePing: {Stdout: pingOK}, ProbeMultiSchema: {Stdout: `[{"name":"_read","parameters":{"type":"object","properties":{"file-path":{"type":"string"}}}},{"name":"_write","parameters":{"type":"object","properties":{"-f":{"type":"string"},"action":{"type":"string"}}}}]`}},
			names:  []string{"read", "write"}, exposed: map[string]string{"read": "_read", "write": "_write"},
			props: map[string][]string{"read": {"file-path"}, "write": {"-f", "action"}},
			calls: []nameCall{
				{"read", Input{"file-path": "a"}, map[string]any{"action": "_read", "file-path": "a"}},
				// A schema that declares "action" passes its own.
				{"write", Input{"-f": "b", "action": "x"}, map[string]any{"-f": "b", "action": "x"}},
			}},
		{file: "_legacy.py", body: argvScript,
			probes: fakeProbes{ProbePing: usage, ProbeMultiSchema: usage, ProbeSchema: {Stdout: `{"name":"_legacy","parameters":{"type":"object","properties":{"-A":{"type":"boolean"},"-n":{"type":"integer"},"max_depth":{"type":"integer"},"max-width":{"type":"integer"},"--all":{"type":"boolean"},"--out":{"type":"string"}}}}`}},
			names:  []string{"legacy"}, exposed: map[string]string{"legacy": "_legacy"},
			props: map[string][]string{"legacy": {"--all", "--out", "-A", "-n", "max-width", "max_depth"}},
			calls: []nameCall{{"legacy", Input{"-A": true, "-n": 3.0, "max_depth": 2.0, "max-width": 4.0, "--all": true, "--out": "o"},
				"--all\n--out=o\n-A\n-n3\n--max-width=4\n--max-depth=2\n"}}},
		{file: "_helped.py", body: argvScript,
			probes: fakeProbes{ProbePing: usage, ProbeMultiSchema: usage, ProbeSchema: usage, ProbeHelp: {Stdout: "usage: _helped.py [-h] [--2fa CODE] [--dry-run] FILE\n\nHelped.\n\npositional arguments:\n  FILE         the file\n\noptions:\n  --2fa CODE   a code\n  --dry-run    do nothing\n"}},
			names:  []string{"helped"}, exposed: map[string]string{"helped": "_helped"},
			props: map[string][]string{"helped": {"FILE", "_2fa", "dry_run"}},
			calls: []nameCall{{"helped", Input{"_2fa": "42", "dry_run": true, "FILE": "-x"}, "--2fa=42\n--dry-run\n--\n-x\n"}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			if err := os.WriteFile(path, []byte(tc.body), 0o755); err != nil {
				t.Fatal(err)
			}
			d := Discover(Script{File: tc.file, Path: path, Argv: []string{path}}, tc.probes.probe)
			if d.Result != ResultRegistered || !reflect.DeepEqual(d.Names, tc.names) {
				t.Fatalf("discover: %s %v (%s), want %v", d.Result, d.Names, d.Why, tc.names)
			}
			out := t.TempDir()
			loaded := map[string]*Definition{}
			for _, def := range d.Tools {
				p, err := WriteDiscovered(out, def)
				if err != nil {
					t.Fatal(err)
				}
				back, err := Load(p, ScopeLocal)
				if err != nil {
					t.Fatalf("written definition does not load: %v", err)
				}
				if back.Name != def.Name || filepath.Base(p) != def.Name+".yaml" {
					t.Errorf("wrote %s for tool %s (loaded as %s)", p, def.Name, back.Name)
				}
				loaded[back.Name] = back
				fs, err := FunctionSchema(back, SchemaMCP)
				if err != nil {
					t.Fatal(err)
				}
				name, _ := fs.(*OrderedObject).Get("name")
				in, _ := fs.(*OrderedObject).Get("inputSchema")
				props, _ := in.(*OrderedObject).Get("properties")
				keys := props.(*OrderedObject).Keys()
				sort.Strings(keys)
				if name != tc.exposed[back.Name] || !reflect.DeepEqual(keys, tc.props[back.Name]) {
					t.Errorf("%s: schema lists %v with %q, want %s with %q", back.Name, name, keys, tc.exposed[back.Name], tc.props[back.Name])
				}
			}
			for _, c := range tc.calls {
				got := runBound(t, loaded[c.tool], c.args)
				if s, ok := c.want.(string); ok {
					if got != s {
						t.Errorf("%s %v: the script got\n%s\nwant\n%s", c.tool, c.args, got, s)
					}
					continue
				}
				var obj map[string]any
				if err := json.Unmarshal([]byte(got), &obj); err != nil {
					t.Fatalf("%s: argv[1] is not JSON: %v: %q", c.tool, err, got)
				}
				if !reflect.DeepEqual(obj, c.want) {
					t.Errorf("%s %v: the script got %v, want %v", c.tool, c.args, obj, c.want)
				}
			}
		})
	}
}

// runBound binds def to in and runs its command on the host (the sample
// scripts only print what they get), returning its stdout.
func runBound(t *testing.T, def *Definition, in Input) string {
	t.Helper()
	b, err := Bind(def, in, BindEnv{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	argv := b.Steps[0].Argv
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run %q: %v\n%s", argv, err, stderr.String())
	}
	return string(out)
}

func TestGrant(t *testing.T) {
	s := Script{File: "greet.py", Path: "/tools/greet.py", Argv: []string{"/tools/greet.py"}}
	ds, _ := ParseSchemaDump(schemaDump, false)
	def, err := DefinitionFor(s, ds[0], "greet", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := Grant(def, []string{"filesystem:read:.", "network:external:api.example.com", "filesystem:read:."}); err != nil {
		t.Fatal(err)
	}
	want := []string{"filesystem:read:/tools/greet.py", "filesystem:read:.", "network:external:api.example.com"}
	if !reflect.DeepEqual(def.Security.RequiredPermissions, want) {
		t.Errorf("permissions = %v, want %v", def.Security.RequiredPermissions, want)
	}
	if _, err := WriteDiscovered(t.TempDir(), def); err != nil {
		t.Fatal(err)
	}
	// A script's property named WORKSPACE does not take over {WORKSPACE}
	// in a granted permission.
	ws, _ := ParseSchemaDump(`{"description":"d","parameters":{"type":"object","properties":{"WORKSPACE":{"type":"string"}}}}`, false)
	wdef, err := DefinitionFor(s, ws[0], "w", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := Grant(wdef, []string{"filesystem:write:{WORKSPACE}"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range wdef.Parameters {
		if p.Name == BuiltinWorkspace {
			t.Errorf("the script's WORKSPACE property is the parameter WORKSPACE, which shadows the built-in in %v", wdef.Security.RequiredPermissions)
		}
	}
	if got := wdef.ExposedParam("WORKSPACE_2"); got != "WORKSPACE" {
		t.Errorf("WORKSPACE_2 is exposed as %q, want WORKSPACE", got)
	}
	for _, bad := range []string{"filesystem:exec:/", "network:anywhere", "read:."} {
		if err := Grant(def, []string{bad}); err == nil {
			t.Errorf("Grant(%q) accepted", bad)
		}
	}
}

func TestWriteDiscoveredRefusals(t *testing.T) {
	dir := t.TempDir()
	s := Script{File: "greet.py", Path: "/tools/greet.py", Argv: []string{"/tools/greet.py"}}
	ds, _ := ParseSchemaDump(schemaDump, false)
	def, err := DefinitionFor(s, ds[0], "greet", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WriteDiscovered(dir, def); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteDiscovered(dir, def); !errors.Is(err, ErrExists) {
		t.Errorf("second write: %v, want ErrExists", err)
	}
	// A grant that names a parameter the tool does not have would not load:
	// nothing is written.
	def.Name = "greet2"
	def.Security.RequiredPermissions = append(def.Security.RequiredPermissions, "filesystem:read:{NOPE}")
	if _, err := WriteDiscovered(dir, def); err == nil || !strings.Contains(err.Error(), "does not load") {
		t.Errorf("write of a definition that does not load: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "greet2.yaml")); err == nil {
		t.Error("a definition that does not load was written")
	}
}
