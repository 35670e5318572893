package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

// copyTree copies testdata/NAME, folders and modes kept, into a fresh
// world-readable directory and returns it.
func copyTree(t *testing.T, name string) string {
	t.Helper()
	dir := workdir(t, nil)
	src := filepath.Join("testdata", name)
	err := filepath.WalkDir(src, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(dir, rel)
		if de.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := de.Info()
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return err
		}
		return os.Chmod(dst, fi.Mode().Perm()|0o444)
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := env.runner; r != nil {
		if err := chownTree(dir, int(r.uid), int(r.gid)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRealToolRepository: discover on the root of a repository shaped like
// a real one (tools in nested folders, helper modules their siblings
// import, a package folder that is not a tool, a virtual environment,
// node_modules and .git) writes a valid definition of every tool, says
// why each other file was passed over, and every tool gives the same
// output as its script run directly with the same JSON: unions, arrays,
// objects and untyped values keep their JSON types. A discovered tool
// runs reduced (nobody), and writes into the 0755 folder of the user it
// was granted: what it makes there is the user's, in every tier.
func TestRealToolRepository(t *testing.T) {
	begin(t)
	testenv.NeedCommand(t, "python3")
	repo := copyTree(t, "realtools")
	// What a checkout also holds, made here (a repository cannot carry them).
	for p, body := range map[string]string{
		".git/hooks/pre-commit":         "#!/bin/sh\nexit 1\n",
		"node_modules/left-pad/cli.js":  "#!/usr/bin/env node\n",
		".venv/pyvenv.cfg":              "home = /usr/bin\n",
		".venv/bin/activate_tool.py":    "#!/usr/bin/env python3\n",
		"os/__pycache__/os_helpers.pyc": "\x00",
	} {
		full := filepath.Join(repo, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The folder the notes tool is granted: the user's, 0755, with a
	// note in it already.
	cwd := workdir(t, map[string]string{"kept/notes/old.txt": "old\n"})
	kept := filepath.Join(cwd, "kept")

	c := sandboxed(t, cwd, "discover", "--write", "--json", "--grant", "filesystem:write:"+kept, repo)
	if c.code != 0 {
		t.Fatalf("discover --write: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	var found []struct {
		discovery
		Interpreter string `json:"interpreter"`
	}
	if err := json.Unmarshal([]byte(c.stdout), &found); err != nil {
		t.Fatalf("discover --json: %v\n%s", err, c.stdout)
	}
	if strings.Contains(c.stderr, "warning") {
		t.Errorf("discover warns of a write grant its tools can write:\n%s", c.stderr)
	}
	byFile := map[string]int{}
	for i, d := range found {
		byFile[d.File] = i
	}
	for file, want := range map[string]struct{ result, tools, why, interp string }{
		"echo.sh":                {"registered", "echo_json", "", "/bin/sh"},
		"os/shell_tool.py":       {"registered", "shell_tool", "", "/usr/bin/python3"},
		"crm/hub/hub_tool.py":    {"registered", "hub_search,hub_count", "", "/usr/bin/python3"},
		"notes/note_tool.py":     {"registered", "note_tool", "", "/usr/bin/python3"},
		"os/os_helpers.py":       {"skipped", "", "a module, not a tool", ""},
		"crm/hub/hub_helpers.py": {"skipped", "", "a module, not a tool", ""},
		"lib/util.py":            {"skipped", "", "a module of the Python package lib", ""},
		"node_modules/":          {"skipped", "", "installed JavaScript packages", ""},
		"os/__pycache__/":        {"skipped", "", "bytecode cache", ""},
	} {
		i, ok := byFile[file]
		if !ok {
			t.Errorf("%s: not reported\n%s", file, c.stdout)
			continue
		}
		d := found[i]
		if d.Result != want.result || strings.Join(d.Tools, ",") != want.tools || !strings.Contains(d.Why, want.why) || d.Interpreter != want.interp {
			t.Errorf("%s: %s %v %q interpreter %q; want %+v", file, d.Result, d.Tools, d.Why, d.Interpreter, want)
		}
	}
	for _, hidden := range []string{".git/", ".venv/", "lib/__init__.py", "docs/README.md"} {
		if _, ok := byFile[hidden]; ok {
			t.Errorf("%s is reported; hidden folders, __init__.py and documents are not", hidden)
		}
	}
	if v := sandboxed(t, cwd, "tool", "validate", filepath.Join(cwd, ".sandboxed", "tools")); v.code != 0 {
		t.Errorf("tool validate of what discover wrote: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}

	// Each tool, given JSON, answers as its script run directly with it.
	for _, tc := range []struct {
		tool, script, in, direct string
	}{
		{"shell_tool", "os/shell_tool.py", `{"command": "ls", "timeout": 1, "args": ["-l", "a b"], "env": {"A": "x y", "N": 2}, "extra": [1, {"x": null}, "s"]}`, ""},
		{"shell_tool", "os/shell_tool.py", `{"command": "ls", "timeout": false}`, ""},
		{"shell_tool", "os/shell_tool.py", `{"command": "it's \"quoted\" $(id) \\ and\nnewline", "timeout": 2.5, "extra": true}`, ""},
		{"hub_search", "crm/hub/hub_tool.py", `{"query": "a", "tags": ["math"], "limit": 5, "filters": {"min_id": 2}}`, `{"action": "hub_search", "query": "a", "tags": ["math"], "limit": 5, "filters": {"min_id": 2}}`},
		{"hub_count", "crm/hub/hub_tool.py", `{"verbose": true}`, `{"action": "hub_count", "verbose": true}`},
		{"echo_json", "echo.sh", `{"value": {"nested": [1, 2.5, "x", false, null]}}`, ""},
	} {
		direct := tc.direct
		if direct == "" {
			direct = tc.in
		}
		want := runDirect(t, filepath.Join(repo, tc.script), direct)
		r, rc := runJSON(t, cwd, "--params-json", tc.in, tc.tool)
		expect(t, r, rc, "ok", 0)
		if !sameJSON(r.Stdout, want) {
			t.Errorf("%s %s:\n via sandboxed %s\n directly      %s", tc.tool, tc.in, r.Stdout, want)
		}
	}

	reducedWrites(t, repo, cwd, kept)

	// NAME=VALUE is read by the script's schema: 1 is the number for
	// ["number", "boolean"], false the boolean; an array and an object
	// as JSON text.
	r, rc := runJSON(t, cwd, "shell_tool", "command=ls", "timeout=1", `args=["x"]`, `env={"K":"v"}`, "extra=7")
	expect(t, r, rc, "ok", 0)
	want := runDirect(t, filepath.Join(repo, "os/shell_tool.py"), `{"command": "ls", "timeout": 1, "args": ["x"], "env": {"K": "v"}, "extra": 7}`)
	if !sameJSON(r.Stdout, want) {
		t.Errorf("NAME=VALUE:\n via sandboxed %s\n directly      %s", r.Stdout, want)
	}
	// A value the schema refuses is refused before anything runs.
	c = sandboxed(t, cwd, "run", "--json", "hub_search", "query=a", "limit=0.5")
	if c.code != 2 || !strings.Contains(c.stdout+c.stderr, `\"0.5\" is not an integer`) {
		t.Errorf("limit=0.5: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	// Agents see the script's own schema, and an MCP call's arguments
	// reach the script with their JSON types.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := command("mcp")
	cmd.Dir = cwd
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sandboxed-e2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to sandboxed mcp: %v\nstderr: %s", err, stderr.String())
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	var schema string
	for _, tl := range list.Tools {
		if tl.Name == "shell_tool" {
			b, _ := json.Marshal(tl.InputSchema)
			schema = string(b)
		}
	}
	if !strings.Contains(schema, `"timeout":{`) || !strings.Contains(schema, `"type":["number","boolean"]`) || !strings.Contains(schema, `"items":{"type":"string"}`) {
		t.Errorf("mcp input schema of shell_tool: %s", schema)
	}
	args := map[string]any{"command": "ls", "timeout": 1, "args": []any{"-l"}, "env": map[string]any{"A": "b"}, "extra": []any{1, map[string]any{"x": nil}}}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell_tool", Arguments: args})
	if err != nil {
		t.Fatalf("call shell_tool: %v", err)
	}
	argJSON, _ := json.Marshal(args)
	want = runDirect(t, filepath.Join(repo, "os/shell_tool.py"), string(argJSON))
	if res.IsError || len(res.Content) == 0 || !sameJSON(textOf(res.Content[0]), want) {
		t.Errorf("mcp call shell_tool: isError %v, content %q, want %s\nstderr: %s", res.IsError, texts(res.Content), want, stderr.String())
	}
	// Over MCP (a warm sandbox where the host has pools) the reduced tool
	// writes its grant too, and what it makes is the user's.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "note_tool", Arguments: map[string]any{"folder": kept, "name": "by-mcp.txt", "text": "over mcp\n"}})
	if err != nil || res.IsError {
		t.Errorf("mcp call note_tool: %v %v %q\nstderr: %s", err, res != nil && res.IsError, texts(res.Content), stderr.String())
	}
	user := [2]uint32{0, 0}
	if r := env.runner; r != nil {
		user = [2]uint32{r.uid, r.gid}
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(kept, "notes", "by-mcp.txt"), &st); err != nil || [2]uint32{st.Uid, st.Gid} != user {
		t.Errorf("notes/by-mcp.txt: %v, owner %d:%d, want %v", err, st.Uid, st.Gid, user)
	}
	cs.Close()
}

// TestDiscoverInterpreter: a script that imports a package the system's
// python lacks is skipped with the interpreter that ran and the fix; with
// --interpreter of a virtual environment that has it, it is registered
// and its tool runs with that environment.
func TestDiscoverInterpreter(t *testing.T) {
	begin(t)
	testenv.NeedCommand(t, "python3")
	ver, err := exec.Command("/usr/bin/python3", "-c", "import sys; print('python%d.%d' % sys.version_info[:2])").Output()
	if err != nil {
		t.Fatal(err)
	}
	site := filepath.Join("venv", "lib", strings.TrimSpace(string(ver)), "site-packages")
	root := workdir(t, map[string]string{
		"tools/needs_pkg.py": "#!/usr/bin/env python3\nimport json, sys\nimport only_in_venv\n" +
			"if sys.argv[1] == '{\"__test__\": true}':\n    print(json.dumps({'success': True, '_simple': True}))\n" +
			"elif sys.argv[1] == '--fractalic-dump-schema':\n    print(json.dumps({'name': 'needs_pkg', 'parameters': {'type': 'object', 'properties': {'n': {'type': 'integer'}}}}))\n" +
			"else:\n    print(json.dumps({'answer': only_in_venv.answer(json.loads(sys.argv[1])['n'])}))\n",
		"venv/pyvenv.cfg":         "home = /usr/bin\ninclude-system-site-packages = false\n",
		site + "/only_in_venv.py": "def answer(n):\n    return n * 2\n",
	})
	os.Chmod(filepath.Join(root, "tools/needs_pkg.py"), 0o755)
	os.MkdirAll(filepath.Join(root, "venv", "bin"), 0o755)
	if err := os.Symlink("/usr/bin/python3", filepath.Join(root, "venv", "bin", "python")); err != nil {
		t.Fatal(err)
	}
	cwd := workdir(t, nil)

	c := sandboxed(t, cwd, "discover", "--json", filepath.Join(root, "tools"))
	var found []struct {
		File, Result, Why, Interpreter string
	}
	if err := json.Unmarshal([]byte(c.stdout), &found); err != nil || len(found) != 1 {
		t.Fatalf("discover: exit %d: %v\n%s%s", c.code, err, c.stdout, c.stderr)
	}
	if d := found[0]; d.Result != "skipped" || d.Interpreter != "/usr/bin/python3" ||
		!strings.Contains(d.Why, "the interpreter that ran is /usr/bin/python3, which has no module only_in_venv") || !strings.Contains(d.Why, "--interpreter VENV/bin/python") {
		t.Errorf("without --interpreter: %+v", d)
	}

	venvPython := filepath.Join(root, "venv", "bin", "python")
	c = sandboxed(t, cwd, "discover", "--write", "--interpreter", venvPython, filepath.Join(root, "tools"))
	if c.code != 0 || !strings.Contains(c.stdout, "needs_pkg") || !strings.Contains(c.stdout, venvPython) {
		t.Fatalf("discover --interpreter: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	r, rc := runJSON(t, cwd, "needs_pkg", "n=21")
	expect(t, r, rc, "ok", 0)
	if strings.TrimSpace(r.Stdout) != `{"answer": 42}` {
		t.Errorf("needs_pkg: stdout %q", r.Stdout)
	}
}

// runDirect runs a script on the host with /usr/bin/python3 (or as
// itself) and one JSON argument, as a user of the repository would.
func runDirect(t *testing.T, script, arg string) string {
	t.Helper()
	var cmd *exec.Cmd
	if strings.HasSuffix(script, ".py") {
		cmd = exec.Command("/usr/bin/python3", script, arg)
	} else {
		cmd = exec.Command(script, arg)
	}
	cmd.Dir = filepath.Dir(script)
	asRunner(cmd) // as the user who runs sandboxed
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s directly: %v\n%s", script, arg, err, out)
	}
	return string(out)
}

// reducedWrites runs the discovered note_tool, which runs reduced, in
// each tier that takes a write grant here (runTiers: the rootless mode
// has only the process tier): it adds to a note the user made and makes a new
// file and folder in its grant, a 0755 folder of the user's. Its output
// is the script's run directly (by the user) with the same JSON, and
// afterwards everything in the grant is the user's, the folder's mode
// unchanged.
func reducedWrites(t *testing.T, repo, cwd, kept string) {
	t.Helper()
	user := [2]uint32{0, 0}
	// The rootless mode, and a host that runs only some tiers (the VM's
	// SANDBOXED_E2E_TIERS=process), run fewer.
	tiers := runTiers([]string{"process", "container"})
	how := "the grant's bind is idmapped"
	if r := env.runner; r != nil {
		user = [2]uint32{r.uid, r.gid}
		how = "is handed to its uid for the run and back to uid " + fmt.Sprint(r.uid)
	}
	// The review says how the tool writes there.
	if c := sandboxed(t, cwd, "permissions", "explain", "note_tool", "folder="+kept, "name=x", "text=y"); !strings.Contains(c.stdout, how) {
		t.Errorf("explain note_tool does not say %q:\n%s%s", how, c.stdout, c.stderr)
	}
	for _, tier := range tiers {
		for _, name := range []string{"old.txt", "by-" + tier + ".txt"} {
			in := fmt.Sprintf(`{"folder": %q, "name": %q, "text": "from the %s tier\n"}`, kept, name, tier)
			r, rc := runJSON(t, cwd, "--isolation", tier, "--params-json", in, "note_tool")
			expect(t, r, rc, "ok", 0)
			// The user edits what the tool made, and the tool what the
			// user made.
			want := runDirect(t, filepath.Join(repo, "notes/note_tool.py"), in)
			if !sameJSON(r.Stdout, want) {
				t.Errorf("note_tool %s in the %s tier:\n via sandboxed %s\n directly      %s", in, tier, r.Stdout, want)
			}
		}
	}
	err := filepath.WalkDir(kept, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := de.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if [2]uint32{st.Uid, st.Gid} != user {
			t.Errorf("%s belongs to %d:%d, want the user's %d:%d", p, st.Uid, st.Gid, user[0], user[1])
		}
		if p == kept && fi.Mode().Perm() != 0o755 {
			t.Errorf("the grant folder's mode is %o after the runs, want 755", fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(kept, "notes", "old.txt"))
	want := "old\n"
	for _, tier := range tiers {
		want += strings.Repeat("from the "+tier+" tier\n", 2)
	}
	if string(b) != want {
		t.Errorf("notes/old.txt holds %q, want %q", b, want)
	}
}

// sameJSON reports whether a and b hold equal JSON values.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// TestImportFunctionDeclarations: an OpenAI function, an Anthropic tool
// and an MCP tools/list answer are recognised; without a command import
// says what is missing; with --bash each becomes a definition that runs,
// its values keeping their JSON types.
func TestImportFunctionDeclarations(t *testing.T) {
	begin(t)
	testenv.NeedCommand(t, "python3")
	cwd := workdir(t, map[string]string{
		"openai.json":    `{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"]}, "units": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}`,
		"anthropic.json": `{"name": "sum_numbers", "description": "Add numbers", "input_schema": {"type": "object", "properties": {"numbers": {"type": "array", "items": {"type": "number"}}}, "required": ["numbers"]}}`,
		"mcp.json":       `{"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "echo-object", "description": "Echo an object", "inputSchema": {"type": "object", "properties": {"obj": {"type": "object"}, "flag": {"type": "boolean"}}, "required": ["obj"]}}, {"name": "other", "inputSchema": {"type": "object", "properties": {}}}]}}`,
	})
	for _, tc := range []struct {
		file, format string
		args         []string
		tool, params string
		want         string
	}{
		{"openai.json", "an OpenAI function declaration", []string{"--bash", `printf '%s|%s|%s\n' {city} "{days}" {units}`},
			"get_weather", `{"city": "Saint-Étienne \"d'Or\" $(id)", "days": 3, "units": "c"}`, "Saint-Étienne \"d'Or\" $(id)|3|c\n"},
		{"anthropic.json", "an Anthropic tool declaration", []string{"--bash", `python3 -c 'import json, sys; print(sum(json.loads(sys.argv[1])))' {numbers}`},
			"sum_numbers", `{"numbers": [1, 2.5, -4]}`, "-0.5\n"},
		{"mcp.json", "an MCP tools/list answer", []string{"--tool", "echo-object", "--bash", `printf '%s %s\n' {obj} {flag}`},
			"echo-object", `{"obj": {"k": ["v", 1]}, "flag": false}`, `{"k":["v",1]} false` + "\n"},
	} {
		c := sandboxed(t, cwd, "tool", "import", tc.file)
		if c.code != 2 || !strings.Contains(c.stderr, "it is "+tc.format) || !strings.Contains(c.stderr, "--bash") {
			t.Errorf("import %s without a command: exit %d\n%s%s", tc.file, c.code, c.stdout, c.stderr)
		}
		c = sandboxed(t, cwd, append([]string{"tool", "import", tc.file}, tc.args...)...)
		if c.code != 0 {
			t.Errorf("import %s %v: exit %d\n%s%s", tc.file, tc.args, c.code, c.stdout, c.stderr)
			continue
		}
		r, rc := runJSON(t, cwd, "--params-json", tc.params, tc.tool)
		expect(t, r, rc, "ok", 0)
		if r.Stdout != tc.want {
			t.Errorf("%s: stdout %q, want %q", tc.tool, r.Stdout, tc.want)
		}
	}
	if v := sandboxed(t, cwd, "tool", "validate", filepath.Join(cwd, ".sandboxed", "tools")); v.code != 0 {
		t.Errorf("tool validate of the imports: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
}

// TestPythonAnalyzeData: a python: tool of the corpus's analyze-data shape
// (the path in '…', the analysis type compared in '…', a number bare in
// code) runs, and a FILE_PATH holding quotes, backslashes and a newline
// stays one literal string.
func TestPythonAnalyzeData(t *testing.T) {
	begin(t)
	testenv.NeedCommand(t, "python3")
	name := "we'ird \"na\\me\nx.csv"
	cwd := workdir(t, map[string]string{
		name: "city,temp\nParis,21\nOslo,12\nParis,23\nLima,19\n",
		"analyze-data.yaml": `name: analyze-data
description: Analyze data from a CSV file using Python
python: |
  import csv
  import sys

  # Read the CSV file: {FILE_PATH}
  with open('{FILE_PATH}', newline='') as f:
      data = list(csv.DictReader(f))

  # Perform analysis based on type
  if '{ANALYSIS_TYPE}' == 'summary':
      result = "%d rows" % len(data)
  elif '{ANALYSIS_TYPE}' == 'head':
      result = [r['city'] for r in data[:{NUM_ROWS}]]
  elif '{ANALYSIS_TYPE}' == 'unique':
      result = sorted(set(r["{COLUMN}"] for r in data))
  else:
      print("Unknown analysis type")
      sys.exit(1)
  print(result)
  print(repr("""{FILE_PATH}"""))
parameters:
  FILE_PATH: {type: string, description: Path to the CSV file, required: true}
  ANALYSIS_TYPE: {type: string, description: "summary, head or unique", default: summary}
  NUM_ROWS: {type: number, description: rows for head, default: 5}
  COLUMN: {type: string, description: column for unique, default: city}
security:
  required-permissions: ["filesystem:read:."]
tags: [read]
`,
	})
	if v := sandboxed(t, cwd, "tool", "validate", "analyze-data.yaml"); v.code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	path := filepath.Join(cwd, name)
	quoted := "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(path) + "'"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ANALYSIS_TYPE=summary"}, "4 rows\n"},
		{[]string{"ANALYSIS_TYPE=head", "NUM_ROWS=2"}, "['Paris', 'Oslo']\n"},
		{[]string{"ANALYSIS_TYPE=unique", "COLUMN=city"}, "['Lima', 'Oslo', 'Paris']\n"},
		{[]string{"ANALYSIS_TYPE=it's \"not\" one"}, "Unknown analysis type\n"},
	} {
		args := append([]string{"analyze-data.yaml", "FILE_PATH=" + path}, tc.args...)
		r, rc := runJSON(t, cwd, args...)
		want := tc.want + quoted + "\n"
		if strings.HasPrefix(tc.want, "Unknown") {
			expect(t, r, rc, "failed", 1)
			want = tc.want
		} else {
			expect(t, r, rc, "ok", 0)
		}
		if r.Stdout != want {
			t.Errorf("%v: stdout %q, want %q (stderr %s)", tc.args, r.Stdout, want, r.Stderr)
		}
	}
	// A string where the program wants a number is refused, not run.
	c := sandboxed(t, cwd, "run", "analyze-data.yaml", "FILE_PATH="+path, "ANALYSIS_TYPE=head", "NUM_ROWS=2); import os; (1")
	if c.code != 2 {
		t.Errorf("NUM_ROWS with code: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
}

// TestDefinitionsValidateOrRun walks the examples, the CYCOD corpus and
// the reference's own examples with the built binary: each either fails
// `tool validate` with FILE:LINE:COL reasons, or validates and plans a run
// (--dry-run) with a value of each required parameter's type.
func TestDefinitionsValidateOrRun(t *testing.T) {
	begin(t)
	var files []string
	for _, g := range []string{"../examples/tools/*.yaml", "../tool/testdata/corpus/complete/*.yaml", "../tool/testdata/spec/*.yaml"} {
		m, _ := filepath.Glob(g)
		if len(m) == 0 {
			t.Fatalf("no files match %s", g)
		}
		files = append(files, m...)
	}
	located := regexp.MustCompile(`(?m)^\S+:\d+:\d+: `)
	valid, refused := 0, 0
	for _, f := range files {
		abs, _ := filepath.Abs(f)
		dir := workdir(t, nil)
		v := sandboxed(t, dir, "tool", "validate", "--format", "json", abs)
		var res []struct {
			Valid       bool `json:"valid"`
			Name        string
			Diagnostics []struct {
				Line, Col int
				Message   string
			} `json:"diagnostics"`
		}
		if err := json.Unmarshal([]byte(v.stdout), &res); err != nil || len(res) != 1 {
			t.Errorf("%s: validate --format json: exit %d: %v\n%s%s", f, v.code, err, v.stdout, v.stderr)
			continue
		}
		if !res[0].Valid {
			refused++
			text := sandboxed(t, dir, "tool", "validate", abs)
			if len(res[0].Diagnostics) == 0 || !located.MatchString(text.stdout) {
				t.Errorf("%s: invalid without a located reason:\n%s", f, text.stdout)
			}
			for _, d := range res[0].Diagnostics {
				if d.Line < 1 || d.Col < 1 {
					t.Errorf("%s: diagnostic without a position: %+v", f, d)
				}
			}
			continue
		}
		valid++
		def := sandboxed(t, dir, "tool", "get", "--format", "json", abs)
		var got struct {
			Type  string `json:"type"`
			Steps []struct {
				UseTool string `json:"use-tool"`
			} `json:"steps"`
			Security struct {
				Permissions []string `json:"required-permissions"`
			} `json:"security"`
			Parameters map[string]struct {
				Type       string `json:"type"`
				Required   bool   `json:"required"`
				Default    any    `json:"default"`
				Examples   []any  `json:"examples"`
				Validation struct {
					Enum []any `json:"enum"`
				} `json:"validation"`
			} `json:"parameters"`
		}
		if err := json.Unmarshal([]byte(def.stdout), &got); err != nil {
			t.Errorf("%s: tool get: %v\n%s%s", f, err, def.stdout, def.stderr)
			continue
		}
		if got.Type == "alias" {
			continue // planned with its base tool, which the corpus holds under one name several times
		}
		// What a run of it needs around it: the files its fixed grants
		// name, the tools its steps use, a file its sample values name.
		for _, perm := range got.Security.Permissions {
			if rest, ok := strings.CutPrefix(perm, "filesystem:read:"); ok && !strings.Contains(rest, "{") && !strings.HasPrefix(rest, "~") {
				os.MkdirAll(filepath.Join(dir, rest), 0o755)
			}
		}
		for _, st := range got.Steps {
			if st.UseTool == "" {
				continue
			}
			sib, _ := filepath.Glob(filepath.Join(filepath.Dir(abs), "*.yaml"))
			for _, sf := range sib {
				if data, err := os.ReadFile(sf); err == nil && strings.Contains(string(data), "name: "+st.UseTool+"\n") && !strings.Contains(string(data), "type: alias") {
					os.MkdirAll(filepath.Join(dir, ".sandboxed", "tools"), 0o755)
					os.WriteFile(filepath.Join(dir, ".sandboxed", "tools", st.UseTool+".yaml"), data, 0o644)
					break
				}
			}
		}
		os.WriteFile(filepath.Join(dir, "sample.txt"), []byte("a sample\n"), 0o644)
		args := []string{"run", "--dry-run", abs}
		for name, p := range got.Parameters {
			if !p.Required || p.Default != nil {
				continue
			}
			sample := map[string]string{"number": "3", "boolean": "true", "array": `["a b","c"]`, "object": `{"k":"v"}`}[p.Type]
			switch {
			case len(p.Examples) > 0:
				sample = fmt.Sprint(p.Examples[0])
			case len(p.Validation.Enum) > 0:
				sample = fmt.Sprint(p.Validation.Enum[0])
			case sample == "":
				sample = "sample.txt"
			}
			args = append(args, name+"="+sample)
		}
		// A read grant of a parameter names a path that must exist.
		values := map[string]string{}
		for name, p := range got.Parameters {
			if d, ok := p.Default.(string); ok {
				values[name] = d
			}
		}
		for _, a := range args[3:] {
			k, v, _ := strings.Cut(a, "=")
			values[k] = v
		}
		for _, perm := range got.Security.Permissions {
			rest, ok := strings.CutPrefix(perm, "filesystem:read:{")
			if !ok || !strings.HasSuffix(rest, "}") {
				continue
			}
			v := values[strings.TrimSuffix(rest, "}")]
			if v == "" || strings.ContainsAny(v, "{~") || filepath.IsAbs(v) {
				continue
			}
			if p := filepath.Join(dir, v); filepath.Ext(v) != "" {
				os.WriteFile(p, []byte("a sample\n"), 0o644)
			} else {
				os.MkdirAll(p, 0o755)
			}
		}
		if r := sandboxed(t, dir, args...); r.code != 0 && r.code != 126 {
			// 126: the default policy wants an approval (a tool without a
			// tier tag); the plan was made.
			t.Errorf("%s: validates, but %v: exit %d\n%s%s", f, args, r.code, r.stdout, r.stderr)
		}
	}
	t.Logf("%d valid and planned, %d refused with located reasons", valid, refused)
	if valid == 0 || refused == 0 {
		t.Errorf("valid %d, refused %d: the walk is not walking", valid, refused)
	}
}
