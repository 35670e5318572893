package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/tool"
)

// cliEnv is a private set of scopes: HOME, the global directory and the
// working directory all live under one temporary directory.
type cliEnv struct {
	cwd, home, etc string
}

func (e *cliEnv) local() string  { return filepath.Join(e.cwd, ".sandboxed", "tools") }
func (e *cliEnv) user() string   { return filepath.Join(e.home, ".sandboxed", "tools") }
func (e *cliEnv) global() string { return filepath.Join(e.etc, "sandboxed", "tools") }

// Paths of the package's test inputs, made absolute before a test changes
// directory.
var (
	examplesDir, _ = filepath.Abs("../../examples/tools")
	brokenDir, _   = filepath.Abs("../../tool/testdata/corpus/broken")
)

func newCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	root := t.TempDir()
	e := &cliEnv{cwd: filepath.Join(root, "work"), home: filepath.Join(root, "home"), etc: filepath.Join(root, "etc")}
	for _, d := range []string{e.cwd, e.home, e.etc} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", e.home)
	t.Setenv("SANDBOXED_GLOBAL_DIR", e.etc)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "config"))
	t.Chdir(e.cwd)
	return e
}

// sandboxed runs the CLI in-process as main does and returns its stdout,
// stderr and exit code.
func sandboxed(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &errb
	notFound = nil
	err := app.Run(append([]string{"sandboxed"}, args...))
	if err == nil && notFound != nil {
		err = notFound
	}
	if err != nil && !isSilent(err) {
		fmt.Fprintln(&errb, "sandboxed:", err)
	}
	return out.String(), errb.String(), exitCode(err)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const helloTool = `name: hello
description: Say hello
version: 1.2.0
bash: echo hello {NAME}
parameters:
  NAME:
    type: string
    description: who
    default: world
tags: [demo, read]
platforms: [linux]
metadata:
  category: greeting
`

func TestToolListReportsBroken(t *testing.T) {
	e := newCLIEnv(t)
	writeFile(t, filepath.Join(e.local(), "hello.yaml"), helloTool)
	writeFile(t, filepath.Join(e.local(), "broken.yaml"), "name: broken\ndescription: [oops\n")
	writeFile(t, filepath.Join(e.user(), "hello.yaml"), strings.Replace(helloTool, "Say hello", "User hello", 1))
	writeFile(t, filepath.Join(e.global(), "other.yaml"), "name: other\ndescription: Other\nbash: echo other\n")

	out, errOut, code := sandboxed(t, "tool", "list")
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !regexp.MustCompile(`^NAME\s+SCOPE\s+STATUS\s+VERSION\s+ISOLATION\s+TAGS\s+DESCRIPTION$`).MatchString(lines[0]) {
		t.Errorf("header %q", lines[0])
	}
	for _, want := range []string{
		`^broken\s+local\s+invalid\s+-\s+-\s+-\s+1:1: invalid YAML`,
		`^hello\s+local\s+ok\s+1\.2\.0\s+process\s+demo,read\s+Say hello$`,
		`^hello\s+user\s+shadowed\s+.*User hello$`,
		`^other\s+global\s+ok\s+`,
	} {
		if !regexp.MustCompile(`(?m)` + want).MatchString(out) {
			t.Errorf("no row matching %s in\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "1 tool definition(s) failed to load") || !strings.Contains(errOut, filepath.Join(e.local(), "broken.yaml")) {
		t.Errorf("stderr does not report the broken file:\n%s", errOut)
	}

	// JSON carries the error; broken files survive the filters.
	out, _, code = sandboxed(t, "tool", "list", "--format", "json", "--tag", "demo", "--scope", "local")
	if code != 0 {
		t.Fatalf("json: exit %d", code)
	}
	var items []toolListItem
	if err := json.Unmarshal([]byte(out), &items); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if len(items) != 2 || items[0].Name != "broken" || items[0].Status != "invalid" || !strings.Contains(items[0].Error, "broken.yaml:1:1: invalid YAML") ||
		items[1].Name != "hello" || items[1].Category != "greeting" {
		t.Errorf("json items: %+v", items)
	}

	// Filters that exclude the valid tools; flags after nothing.
	out, _, _ = sandboxed(t, "tool", "list", "--tag", "nosuch", "-q")
	if strings.TrimSpace(out) != "" {
		t.Errorf("-q --tag nosuch: %q", out)
	}
	out, _, _ = sandboxed(t, "tool", "list", "-q", "--platform", "windows")
	if strings.TrimSpace(out) != "other" {
		t.Errorf("--platform windows: %q, want other (it names no platform)", out)
	}
	out, _, _ = sandboxed(t, "tool", "list", "-q")
	if got := strings.Fields(out); strings.Join(got, " ") != "hello hello other" {
		t.Errorf("-q: %q", got)
	}
	out, _, code = sandboxed(t, "tool", "list", "--format", "yaml")
	if code != 0 || !strings.Contains(out, "status: invalid") {
		t.Errorf("yaml: exit %d\n%s", code, out)
	}
}

func TestToolUnknownFormat(t *testing.T) {
	e := newCLIEnv(t)
	writeFile(t, filepath.Join(e.local(), "hello.yaml"), helloTool)
	for _, args := range [][]string{
		{"tool", "list", "--format", "xml"},
		{"tool", "get", "hello", "--format", "table"},
		{"tool", "validate", "--format", "yaml", "hello"},
		{"tool", "schema", "--format", "gemini", "hello"},
		{"tool", "export", "hello", "--format", "toml"},
	} {
		_, errOut, code := sandboxed(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "--format") {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming --format", args, code, errOut)
		}
	}
}

func TestToolValidateExamples(t *testing.T) {
	newCLIEnv(t)
	files, _ := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if len(files) == 0 {
		t.Fatalf("no examples in %s", examplesDir)
	}
	for _, f := range files {
		out, errOut, code := sandboxed(t, "tool", "validate", f)
		if code != 0 || !strings.HasPrefix(out, f+": ok\n") {
			t.Errorf("%s: exit %d\n%s%s", f, code, out, errOut)
		}
		if strings.Contains(out, "warning") {
			t.Errorf("%s: unexpected warning\n%s", f, out)
		}
	}
	// All at once, as a directory.
	out, _, code := sandboxed(t, "tool", "validate", examplesDir)
	if code != 0 || strings.Count(out, ": ok\n") != len(files) {
		t.Errorf("directory: exit %d\n%s", code, out)
	}
}

func TestToolValidateBroken(t *testing.T) {
	newCLIEnv(t)
	files, _ := filepath.Glob(filepath.Join(brokenDir, "*.yaml"))
	if len(files) == 0 {
		t.Fatalf("no broken corpus in %s", brokenDir)
	}
	for _, f := range files {
		out, errOut, code := sandboxed(t, "tool", "validate", f)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want 2", f, code)
		}
		located := regexp.MustCompile(`^` + regexp.QuoteMeta(f) + `:\d+:\d+: \S`)
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if !located.MatchString(line) {
				t.Errorf("%s: line %q is not FILE:LINE:COL: message", f, line)
			}
		}
		if !strings.Contains(errOut, "1 of 1 definition(s) invalid") {
			t.Errorf("%s: stderr %q", f, errOut)
		}
	}
	// JSON, mixed with a valid file: still exit 2.
	out, _, code := sandboxed(t, "tool", "validate", "--format", "json", files[0], filepath.Join(examplesDir, "hello.yaml"))
	var res []validateResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != exitUsage {
		t.Fatalf("json: exit %d, %v\n%s", code, err, out)
	}
	if len(res) != 2 || res[0].Valid || len(res[0].Diagnostics) == 0 || res[0].Diagnostics[0].Line == 0 || !res[1].Valid {
		t.Errorf("json: %+v", res)
	}
}

func TestToolValidateNamesAndAliases(t *testing.T) {
	e := newCLIEnv(t)
	writeFile(t, filepath.Join(e.local(), "hello.yaml"), helloTool)
	writeFile(t, filepath.Join(e.local(), "hi.yaml"), "name: hi\ndescription: alias\ntype: alias\nbase-tool: hello\n")
	writeFile(t, filepath.Join(e.local(), "orphan.yaml"), "name: orphan\ndescription: alias\ntype: alias\nbase-tool: gone\n")
	out, _, code := sandboxed(t, "tool", "validate", "hello", "hi", "orphan")
	if code != 0 {
		t.Errorf("exit %d, want 0 (a missing base tool is a warning)\n%s", code, out)
	}
	for _, want := range []string{
		filepath.Join(e.local(), "hello.yaml") + ": ok",
		filepath.Join(e.local(), "hi.yaml") + ": ok",
		"orphan.yaml: warning: alias orphan: base tool gone is not found",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "hi.yaml: warning") {
		t.Errorf("warning for an alias whose base exists:\n%s", out)
	}
	_, errOut, code := sandboxed(t, "tool", "validate", "nosuch")
	if code != exitUsage {
		t.Errorf("nosuch: exit %d, want 2 (%s)", code, errOut)
	}
}

// The spec's "Generated Schema Example" definition. example-generation is
// false here: with true the schema also carries the examples, which the
// spec's JSON leaves out.
const specWeatherYAML = `name: weather-lookup
description: Get weather for a location
bash: curl -s 'wttr.in/{LOCATION}?format={FORMAT}'
parameters:
  LOCATION:
    type: string
    description: City or airport code
    required: true
    examples: ["New York", "SFO"]
  FORMAT:
    type: string
    description: Output format
    default: "3"
    examples: ["1", "3"]
function-calling:
  schema-generation:
    include-descriptions: true
    include-defaults: true
    example-generation: false
`

// specWeatherSchema is the JSON the spec's "Generated Schema Example"
// shows, verbatim.
var specWeatherSchema = func() string {
	b, err := os.ReadFile("../../tool/testdata/spec/weather-lookup.openai.json")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
	return b.String()
}

func TestToolSchemaSpecExample(t *testing.T) {
	e := newCLIEnv(t)
	writeFile(t, filepath.Join(e.local(), "weather-lookup.yaml"), specWeatherYAML)
	out, errOut, code := sandboxed(t, "tool", "schema", "weather-lookup")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got, want := compactJSON(t, out), compactJSON(t, specWeatherSchema); got != want {
		t.Errorf("openai schema\ngot  %s\nwant %s", got, want)
	}
	if !strings.HasPrefix(out, "{\n  \"name\": \"weather-lookup\",\n  \"description\"") {
		t.Errorf("not indented by two spaces:\n%s", out)
	}

	// Several tools: an array; mcp and anthropic keys; no HTML escaping.
	writeFile(t, filepath.Join(e.local(), "lt.yaml"), "name: lt\ndescription: a < b & c\nbash: echo\n")
	out, _, code = sandboxed(t, "tool", "schema", "--format", "mcp", "weather-lookup", "lt")
	var arr []map[string]any
	if err := json.Unmarshal([]byte(out), &arr); err != nil || code != 0 || len(arr) != 2 {
		t.Fatalf("array: exit %d %v\n%s", code, err, out)
	}
	if _, ok := arr[0]["inputSchema"]; !ok {
		t.Errorf("mcp schema has no inputSchema: %v", arr[0])
	}
	if !strings.Contains(out, `"a < b & c"`) {
		t.Errorf("HTML-escaped output:\n%s", out)
	}
	out, _, _ = sandboxed(t, "tool", "schema", "lt", "--format", "anthropic")
	if !strings.Contains(out, `"input_schema"`) {
		t.Errorf("anthropic (flag after the argument):\n%s", out)
	}
}

func TestToolGetAndExport(t *testing.T) {
	e := newCLIEnv(t)
	writeFile(t, filepath.Join(e.user(), "hello.yaml"), helloTool)
	out, errOut, code := sandboxed(t, "tool", "get", "hello", "--scope", "user", "--format", "json")
	if code != 0 {
		t.Fatalf("get: exit %d %s", code, errOut)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil || m["name"] != "hello" {
		t.Errorf("get json: %v %v", err, m)
	}
	if _, _, code := sandboxed(t, "tool", "get", "hello", "--scope", "local"); code != exitUsage {
		t.Errorf("get in the wrong scope: exit %d, want 2", code)
	}
	out, _, _ = sandboxed(t, "tool", "get", "hello")
	if _, err := tool.Parse([]byte(out), "get.yaml"); err != nil {
		t.Errorf("get yaml does not parse back: %v\n%s", err, out)
	}

	dst := filepath.Join(e.cwd, "out", "hello.yaml")
	if _, errOut, code := sandboxed(t, "tool", "export", "hello", "--output", dst); code != 0 {
		t.Fatalf("export: exit %d %s", code, errOut)
	}
	if _, err := tool.Load(dst, tool.ScopePath); err != nil {
		t.Errorf("exported file: %v", err)
	}
	_, errOut, code = sandboxed(t, "tool", "export", "hello", "--output", dst)
	if code != exitUsage || !strings.Contains(errOut, "--overwrite") {
		t.Errorf("export over a file: exit %d %s", code, errOut)
	}
	if _, _, code := sandboxed(t, "tool", "export", "hello", "--output", dst, "--overwrite", "--format", "json"); code != 0 {
		t.Errorf("export --overwrite: exit %d", code)
	}
}

func TestToolImportRefusesOverwrite(t *testing.T) {
	e := newCLIEnv(t)
	src := filepath.Join(e.cwd, "hello-src.yaml")
	writeFile(t, src, "# kept\n"+helloTool)
	out, errOut, code := sandboxed(t, "tool", "import", src, "--scope", "user")
	dst := filepath.Join(e.user(), "hello.yaml")
	if code != 0 || !strings.Contains(out, dst) {
		t.Fatalf("import: exit %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(dst); !strings.HasPrefix(string(b), "# kept\n") {
		t.Errorf("imported file not copied as is: %q", b)
	}
	_, errOut, code = sandboxed(t, "tool", "import", src, "--scope", "user")
	if code != exitUsage || !strings.Contains(errOut, "--overwrite") {
		t.Errorf("second import: exit %d, stderr %q; want 2 with the --overwrite hint", code, errOut)
	}
	if _, _, code := sandboxed(t, "tool", "import", "--overwrite", "--scope", "user", src); code != 0 {
		t.Errorf("import --overwrite: exit %d", code)
	}
	// Invalid files are refused and write nothing.
	bad := filepath.Join(brokenDir, "documentation-best-practices-section--L81--ae614e45db.yaml")
	if _, _, code := sandboxed(t, "tool", "import", bad); code != exitUsage {
		t.Errorf("import broken: exit %d, want 2", code)
	}
	if _, err := os.Stat(e.local()); err == nil {
		t.Errorf("import of a broken file created %s", e.local())
	}
	// Another file of the scope claiming the name is a conflict.
	writeFile(t, filepath.Join(e.local(), "greeter.yaml"), helloTool)
	if _, errOut, code := sandboxed(t, "tool", "import", src); code != exitUsage || !strings.Contains(errOut, "greeter.yaml") {
		t.Errorf("import over another file's name: exit %d %s", code, errOut)
	}
	if _, _, code := sandboxed(t, "tool", "import", src, "--scope", "any"); code != exitUsage {
		t.Errorf("--scope any: exit %d, want 2", code)
	}
}

func TestToolRemove(t *testing.T) {
	e := newCLIEnv(t)
	path := filepath.Join(e.local(), "hello.yaml")
	writeFile(t, path, helloTool)
	oldTerm, oldIn := stdinIsTerminal, confirmInput
	defer func() { stdinIsTerminal, confirmInput = oldTerm, oldIn }()

	stdinIsTerminal = func() bool { return false }
	_, errOut, code := sandboxed(t, "tool", "remove", "hello")
	if code != exitUsage || !strings.Contains(errOut, "--force") {
		t.Errorf("no terminal: exit %d, stderr %q; want 2 with the --force hint", code, errOut)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("removed without confirmation: %v", err)
	}

	stdinIsTerminal = func() bool { return true }
	confirmInput = func() io.Reader { return strings.NewReader("n\n") }
	if _, _, code := sandboxed(t, "tool", "remove", "hello"); code == 0 {
		t.Errorf("answered no: exit 0")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("removed after no: %v", err)
	}
	confirmInput = func() io.Reader { return strings.NewReader("y\n") }
	if _, errOut, code := sandboxed(t, "tool", "remove", "hello"); code != 0 || !strings.Contains(errOut, "[y/N]") {
		t.Errorf("answered yes: exit %d %q", code, errOut)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("not removed after yes")
	}

	stdinIsTerminal = func() bool { return false }
	writeFile(t, path, helloTool)
	writeFile(t, filepath.Join(e.user(), "hello.yaml"), helloTool)
	out, _, code := sandboxed(t, "tool", "remove", "hello", "--scope", "user", "--force")
	if code != 0 || !strings.Contains(out, e.user()) {
		t.Errorf("--scope user --force: exit %d %s", code, out)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("removed the local one instead: %v", err)
	}
	if _, _, code := sandboxed(t, "tool", "remove", "-f", "nosuch"); code != exitUsage {
		t.Errorf("nosuch: exit %d, want 2", code)
	}
	// A file that does not load can be removed by the name it claims.
	writeFile(t, filepath.Join(e.local(), "bad.yaml"), "name: bad\ndescription: [\n")
	if _, errOut, code := sandboxed(t, "tool", "remove", "bad", "--force"); code != 0 {
		t.Errorf("remove broken: exit %d %s", code, errOut)
	}
}

func TestUnescapeHTML(t *testing.T) {
	for in, want := range map[string]string{
		`"a \u003c b \u0026 c \u003e"`: `"a < b & c >"`,
		`"\\u003c"`:                    `"\\u003c"`, // an escaped backslash, then text
		`"\\\u003c"`:                   `"\\<"`,
		`"\u00e9 \n"`:                  `"\u00e9 \n"`,
	} {
		if got := string(unescapeHTML([]byte(in))); got != want {
			t.Errorf("unescapeHTML(%s) = %s, want %s", in, got, want)
		}
		var a, b string
		if json.Unmarshal([]byte(in), &a) != nil || json.Unmarshal([]byte(want), &b) != nil || a != b {
			t.Errorf("%s and %s do not decode to the same string", in, want)
		}
	}
}

func TestToolNotesOtherScopes(t *testing.T) {
	e := newCLIEnv(t)
	writeFile(t, filepath.Join(e.user(), "hello.yaml"), helloTool)
	src := filepath.Join(e.cwd, "src.yaml")
	writeFile(t, src, helloTool)
	_, errOut, code := sandboxed(t, "tool", "import", src, "--scope", "global")
	if code != 0 || !strings.Contains(errOut, "note: the user scope also defines hello") ||
		!strings.Contains(errOut, "uses "+filepath.Join(e.user(), "hello.yaml")) {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}

func TestToolFlagErrors(t *testing.T) {
	newCLIEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tool", "get", "--bogus", "x"}, "tool get: flag provided but not defined"},
		{[]string{"tool", "get", "x", "--bogus"}, "tool get: unknown flag --bogus"},
		{[]string{"tool", "get", "x", "--scope"}, "needs a value"},
		{[]string{"tool", "list", "--scope", "nope"}, "parse scope"},
		{[]string{"tool", "list", "extra"}, "unexpected argument"},
		{[]string{"tool", "nosuch"}, `unknown command "nosuch"`},
	} {
		_, errOut, code := sandboxed(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 with %q", tc.args, code, errOut, tc.want)
		}
	}
	out, _, code := sandboxed(t, "tool", "get", "x", "--help")
	if code != 0 || !strings.Contains(out, "sandboxed tool get") {
		t.Errorf("get x --help: exit %d\n%s", code, out)
	}
}

func TestDiscoverGrantGrammar(t *testing.T) {
	isolate(t)
	_, stderr, code := runApp(t, "discover", "--grant", "filesystem:exec:.", t.TempDir())
	if code != 2 || !strings.Contains(stderr, `--grant "filesystem:exec:."`) {
		t.Errorf("discover --grant filesystem:exec:.: exit %d, stderr %q; want 2 and the grammar", code, stderr)
	}
}

func TestDiscoverToolNames(t *testing.T) {
	ls := &tool.Definition{Name: "ls", Sandboxed: &tool.SandboxedExt{ExposedAs: &tool.ExposedAs{Name: "_ls"}}}
	cat := &tool.Definition{Name: "cat"}
	for _, tc := range []struct {
		d    *tool.Discovery
		want string
	}{
		{&tool.Discovery{Tools: []*tool.Definition{ls, cat}}, "ls (_ls),cat"},
		{&tool.Discovery{}, "-"},
	} {
		if got := toolNames(tc.d); got != tc.want {
			t.Errorf("toolNames = %q, want %q", got, tc.want)
		}
	}
}
