package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// discovery is one entry of `sandboxed discover --json`.
type discovery struct {
	File       string   `json:"file"`
	Result     string   `json:"result"`
	Convention string   `json:"convention"`
	Source     string   `json:"source"`
	Tools      []string `json:"tools"`
	Why        string   `json:"why"`
	Written    []string `json:"written"`
	Probes     []struct {
		Kind     string `json:"kind"`
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
		TimedOut bool   `json:"timed_out"`
	} `json:"probes"`
}

// sampleScripts copies testdata/discover (modes kept) into a fresh
// world-readable directory and returns it.
func sampleScripts(t *testing.T) string {
	t.Helper()
	return copyScripts(t, "discover")
}

// copyScripts copies testdata/NAME (modes kept) into a fresh
// world-readable directory and returns it.
func copyScripts(t *testing.T, name string) string {
	t.Helper()
	dir := workdir(t, nil)
	src := filepath.Join("testdata", name)
	des, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		data, err := os.ReadFile(filepath.Join(src, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		fi, err := de.Info()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, de.Name())
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// Exec bits as in the repository (git keeps 755/644 only).
		if err := os.Chmod(p, fi.Mode().Perm()|0o444); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// sneakyMarkers are the host paths sneaky.sh tries to write while probed.
func sneakyMarkers(scripts string) []string {
	home, _ := os.UserHomeDir()
	return []string{filepath.Join(scripts, "MARKER"), "/tmp/sneaky-marker", "/var/tmp/sneaky-marker", filepath.Join(home, "sneaky-marker")}
}

func TestDiscoverSamples(t *testing.T) {
	begin(t)
	scripts := sampleScripts(t)
	for _, m := range sneakyMarkers(scripts) {
		os.Remove(m)
	}
	cwd := workdir(t, nil)
	// A listener on the host's loopback that sneaky.sh tries to reach
	// (its port in the PORT file next to it): no probe may connect.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var reached atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			conn.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	sneakyPath := filepath.Join(scripts, "sneaky.sh")
	src, err := os.ReadFile(sneakyPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sneakyPath, []byte(strings.Replace(string(src), "@PORT@", port, 1)), 0o755); err != nil {
		t.Fatal(err)
	}
	// A file beside the scripts' folder that sneaky.sh tries to read and
	// report: a probe sees its own folder (so the modules there import)
	// and nothing else of the host but the system directories.
	secret := filepath.Join(filepath.Dir(scripts), filepath.Base(scripts)+"-SECRET")
	if err := os.WriteFile(secret, []byte("TOPSECRET-beside-the-folder\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(secret) })

	c := sandboxed(t, cwd, "discover", "--json", scripts)
	if c.code != 0 {
		t.Fatalf("discover: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	var found []discovery
	if err := json.Unmarshal([]byte(c.stdout), &found); err != nil {
		t.Fatalf("discover --json: %v\n%s", err, c.stdout)
	}
	byFile := map[string]discovery{}
	for _, d := range found {
		byFile[d.File] = d
	}
	for _, tc := range []struct {
		file   string
		result string
		tools  string
		source string
		why    string
	}{
		{"greet.py", "registered", "greet", "schema", ""},
		{"twice.py", "registered", "twice", "schema", ""},
		{"strict.py", "registered", "strict_add", "schema", "did not answer the simple JSON ping"},
		{"bare.py", "registered", "bare", "schema", ""},
		{"anthropic.py", "registered", "to_upper,to_lower", "multi-schema", `"action"`},
		{"slow.sh", "registered", "slow_echo", "schema", ""},
		{"sneaky.sh", "registered", "sneaky", "schema", ""},
		{"needs_module.py", "skipped", "", "", "No module named 'requests_not_installed_here'"},
		{"helponly.py", "registered", "helponly", "help", "described by --help only"},
		{"noshebang.sh", "skipped", "", "", "no #! line"},
		{"hangs.sh", "skipped", "", "", "timed out"},
		{"legacy.py", "registered", "legacy_convert", "schema", "a command line"},
		{"documented.sh", "skipped", "", "", "companion definition"},
	} {
		d, ok := byFile[tc.file]
		if !ok {
			t.Errorf("%s: not reported", tc.file)
			continue
		}
		if d.Result != tc.result || strings.Join(d.Tools, ",") != tc.tools || d.Source != tc.source || !strings.Contains(d.Why, tc.why) {
			probes, _ := json.MarshalIndent(d.Probes, "  ", "  ")
			t.Errorf("%s: %s %v source %q why %q; want %s %s source %q why containing %q\nprobes: %s",
				tc.file, d.Result, d.Tools, d.Source, d.Why, tc.result, tc.tools, tc.source, tc.why, probes)
		}
	}
	if len(found) != 13 {
		t.Errorf("discover reported %d files, want 13", len(found))
	}

	// The probes ran in sandboxes: sneaky.sh wrote nothing on the host
	// and reached no network; slow.sh had the time it needed.
	for _, m := range sneakyMarkers(scripts) {
		if _, err := os.Stat(m); err == nil {
			t.Errorf("probing sneaky.sh left %s on the host", m)
			os.Remove(m)
		}
	}
	sneaky := byFile["sneaky.sh"]
	if len(sneaky.Probes) == 0 {
		t.Fatal("sneaky.sh: no probes reported")
	}
	for _, p := range sneaky.Probes {
		if strings.Contains(p.Stderr, "REACHED") {
			t.Errorf("sneaky.sh probe %s reached the network: %s", p.Kind, p.Stderr)
		}
		if strings.Contains(p.Stderr, "TOPSECRET") || strings.Contains(p.Stdout, "TOPSECRET") {
			t.Errorf("sneaky.sh probe %s read a file beside its folder: %s", p.Kind, p.Stderr)
		}
		// The script's folder is read-only to the probe.
		if !strings.Contains(p.Stderr, "MARKER: Read-only file system") && !strings.Contains(p.Stderr, "MARKER: Permission denied") {
			t.Errorf("sneaky.sh probe %s: want its write to its own directory refused, stderr %q", p.Kind, p.Stderr)
		}
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("probes reached the host's loopback %d time(s)", n)
	}
	for _, p := range byFile["slow.sh"].Probes {
		if p.TimedOut {
			t.Errorf("slow.sh probe %s timed out", p.Kind)
		}
	}
}

func TestDiscoverWriteAndRun(t *testing.T) {
	begin(t)
	scripts := sampleScripts(t)
	cwd := workdir(t, nil)

	c := sandboxed(t, cwd, "discover", "--write", scripts)
	if c.code != 0 {
		t.Fatalf("discover --write: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	for _, name := range []string{"greet", "twice", "strict_add", "bare", "to_upper", "to_lower", "slow_echo", "sneaky", "helponly", "legacy_convert"} {
		p := filepath.Join(cwd, ".sandboxed", "tools", name+".yaml")
		if _, err := os.Stat(p); err != nil {
			t.Errorf("discover --write did not write %s: %v\n%s", p, err, c.stdout)
		}
	}
	if c.stdout == "" || !strings.Contains(c.stdout, "FILE") || !strings.Contains(c.stdout, "wrote ") {
		t.Errorf("discover table:\n%s", c.stdout)
	}

	// Every definition written validates.
	if v := sandboxed(t, cwd, "tool", "validate", filepath.Join(cwd, ".sandboxed", "tools")); v.code != 0 {
		t.Errorf("tool validate of what discover wrote: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}

	// A second --write refuses to replace what is there.
	again := sandboxed(t, cwd, "discover", "--write", scripts)
	if again.code == 0 || !strings.Contains(again.stdout, "exists") {
		t.Errorf("second discover --write: exit %d, want a refusal\n%s%s", again.code, again.stdout, again.stderr)
	}

	// The discovered tools run through `sandboxed run`, by name, with the
	// simple JSON convention.
	r, rc := runJSON(t, cwd, "greet", "name=Ada", "times=2")
	expect(t, r, rc, "ok", 0)
	if strings.TrimSpace(r.Stdout) != `{"greeting": "Hello, Ada! Hello, Ada!"}` {
		t.Errorf("greet: stdout %q", r.Stdout)
	}
	// Values stay one JSON string, whatever they hold.
	hostile := `Ada"; $(touch ` + filepath.Join(scripts, "PWNED") + `) '`
	r, rc = runJSON(t, cwd, "greet", "name="+hostile)
	expect(t, r, rc, "ok", 0)
	var ans map[string]string
	if err := json.Unmarshal([]byte(r.Stdout), &ans); err != nil || ans["greeting"] != "Hello, "+hostile+"!" {
		t.Errorf("greet with a hostile name: %q (%v)", r.Stdout, err)
	}
	if _, err := os.Stat(filepath.Join(scripts, "PWNED")); err == nil {
		t.Error("a parameter value ran as a command")
	}
	// {"error": ...} is a failure that carries the message.
	r, rc = runJSON(t, cwd, "greet", "name=nobody")
	expect(t, r, rc, "failed", 1)
	if !strings.Contains(r.Stderr, "cannot greet nobody") {
		t.Errorf("error answer: stderr %q", r.Stderr)
	}
	// One script, several tools, told apart by "action".
	r, rc = runJSON(t, cwd, "to_lower", "text=ABC")
	expect(t, r, rc, "ok", 0)
	if strings.TrimSpace(r.Stdout) != `{"result": "abc"}` {
		t.Errorf("to_lower: stdout %q", r.Stdout)
	}
	// A script described only by --help runs as a command line.
	r, rc = runJSON(t, cwd, "helponly", "celsius=100")
	expect(t, r, rc, "ok", 0)
	if strings.TrimSpace(r.Stdout) != "212.0" {
		t.Errorf("helponly: stdout %q", r.Stdout)
	}
	// A legacy argparse script gets --option=VALUE arguments.
	r, rc = runJSON(t, cwd, "legacy_convert", "celsius=100", "to_unit=K", "verbose=true")
	expect(t, r, rc, "ok", 0)
	if strings.TrimSpace(r.Stdout) != `{"value": 373.15, "unit": "K"}` {
		t.Errorf("legacy_convert: stdout %q", r.Stdout)
	}
	// A number parameter arrives as a JSON number.
	r, rc = runJSON(t, cwd, "strict_add", "a=1", "b=2.5")
	expect(t, r, rc, "ok", 0)
	if strings.TrimSpace(r.Stdout) != `{"sum": 3.5}` {
		t.Errorf("strict_add: stdout %q", r.Stdout)
	}
}

// TestDiscoverNamesRoundTrip: a script named _ls with the properties -A and
// max-depth is written as the tool ls, validates, lists under its own names
// in schemas, runs with the workspace granted by --grant, and receives -A
// and max-depth unchanged, whichever spelling the call used. A second
// script that becomes the name ls is skipped, naming both.
func TestDiscoverNamesRoundTrip(t *testing.T) {
	begin(t)
	scripts := copyScripts(t, "discover-names")
	cwd := workdir(t, map[string]string{"data/a.txt": "a", "data/.hidden": "h", "data/sub/b.txt": "b", "data/sub/deep/c.txt": "c"})

	c := sandboxed(t, cwd, "discover", "--json", "--write", "--grant", "filesystem:read:.", scripts)
	if c.code != 0 {
		t.Fatalf("discover --write: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	var found []discovery
	if err := json.Unmarshal([]byte(c.stdout), &found); err != nil {
		t.Fatalf("discover --json: %v\n%s", err, c.stdout)
	}
	byFile := map[string]discovery{}
	for _, d := range found {
		byFile[d.File] = d
	}
	def := filepath.Join(cwd, ".sandboxed", "tools", "ls.yaml")
	if d := byFile["_ls"]; d.Result != "registered" || strings.Join(d.Tools, ",") != "ls" || len(d.Written) != 1 || d.Written[0] != def {
		t.Fatalf("_ls: %+v", d)
	}
	if d := byFile["ls.sh"]; d.Result != "skipped" || !strings.Contains(d.Why, "tool name ls (ls of ls.sh) is already taken by _ls of _ls") {
		t.Errorf("ls.sh: %s, why %q; want skipped, naming _ls", d.Result, d.Why)
	}

	if v := sandboxed(t, cwd, "tool", "validate", filepath.Join(cwd, ".sandboxed", "tools")); v.code != 0 || !strings.Contains(v.stdout, "ok") {
		t.Fatalf("tool validate: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	data, err := os.ReadFile(def)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: ls\n", "exposed-as:", "name: _ls", "A: -A", "filesystem:read:.\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("ls.yaml does not hold %q:\n%s", want, data)
		}
	}

	// Schemas and MCP list the script's own names.
	sc := sandboxed(t, cwd, "tool", "schema", "--format", "mcp", "ls")
	var schema struct {
		Name        string `json:"name"`
		InputSchema struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		} `json:"inputSchema"`
	}
	if err := json.Unmarshal([]byte(sc.stdout), &schema); err != nil {
		t.Fatalf("tool schema: exit %d: %v\n%s%s", sc.code, err, sc.stdout, sc.stderr)
	}
	_, hasA := schema.InputSchema.Properties["-A"]
	_, hasDepth := schema.InputSchema.Properties["max-depth"]
	if schema.Name != "_ls" || !hasA || !hasDepth || len(schema.InputSchema.Properties) != 3 || strings.Join(schema.InputSchema.Required, ",") != "max-depth" {
		t.Errorf("tool schema: %s", sc.stdout)
	}

	type answer struct {
		Received map[string]any `json:"received"`
		Entries  []string       `json:"entries"`
	}
	for _, tc := range []struct {
		name     string
		args     []string
		received map[string]any
		entries  []string
	}{
		{"exposed names", []string{`--params-json={"-A": true, "max-depth": 1, "path": "data"}`, "ls"},
			map[string]any{"-A": true, "max-depth": 1.0, "path": "data"}, []string{".hidden", "a.txt", "sub", "sub/b.txt", "sub/deep"}},
		{"own names", []string{"ls", "A=false", "max-depth=0", "path=data"},
			map[string]any{"-A": false, "max-depth": 0.0, "path": "data"}, []string{"a.txt", "sub"}},
		{"--param", []string{"ls", "--param", "-A=true", "--param", "max-depth=0", "path=data/sub"},
			map[string]any{"-A": true, "max-depth": 0.0, "path": "data/sub"}, []string{"b.txt", "deep"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, rc := runJSON(t, cwd, tc.args...)
			expect(t, r, rc, "ok", 0)
			var got answer
			if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
				t.Fatalf("answer is not JSON: %v: %q", err, r.Stdout)
			}
			if !reflect.DeepEqual(got.Received, tc.received) || !reflect.DeepEqual(got.Entries, tc.entries) {
				t.Errorf("the script received %v and listed %q; want %v and %q", got.Received, got.Entries, tc.received, tc.entries)
			}
		})
	}
	// sandboxed mcp lists the tool as _ls with -A and max-depth, and a call
	// under those names reaches the script unchanged.
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
	if len(list.Tools) != 1 || list.Tools[0].Name != "_ls" {
		t.Fatalf("mcp lists %d tools (%+v), want _ls alone", len(list.Tools), list.Tools)
	}
	props, _ := json.Marshal(list.Tools[0].InputSchema)
	if !strings.Contains(string(props), `"-A":`) || !strings.Contains(string(props), `"max-depth":`) {
		t.Errorf("mcp input schema of _ls: %s", props)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "_ls", Arguments: map[string]any{"-A": true, "max-depth": 0, "path": "data"}})
	if err != nil {
		t.Fatalf("call _ls: %v", err)
	}
	var got answer
	if res.IsError || len(res.Content) == 0 || json.Unmarshal([]byte(textOf(res.Content[0])), &got) != nil {
		t.Fatalf("mcp call _ls: isError %v, content %q\nstderr: %s", res.IsError, texts(res.Content), stderr.String())
	}
	if want := map[string]any{"-A": true, "max-depth": 0.0, "path": "data"}; !reflect.DeepEqual(got.Received, want) || strings.Join(got.Entries, ",") != ".hidden,a.txt,sub" {
		t.Errorf("mcp call _ls: the script received %v and listed %q", got.Received, got.Entries)
	}
	cs.Close()

	// One parameter under both its names is refused before anything runs.
	r, rc := runJSON(t, cwd, `--params-json={"-A": true, "max-depth": 0}`, "ls", "A=false")
	msg := rc.stderr
	if r.Error != nil {
		msg += r.Error.Message
	}
	if r.Status == "ok" || rc.code == 0 || !strings.Contains(msg, "given twice") {
		t.Errorf("-A and A together: status %s exit %d, error %+v, stderr %q", r.Status, rc.code, r.Error, rc.stderr)
	}
}
