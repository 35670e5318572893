package policy

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestDefaultYAMLLoadsToDefault(t *testing.T) {
	p, err := Parse(DefaultYAML(), "default.yaml")
	if err != nil {
		t.Fatalf("Parse(DefaultYAML()): %v", err)
	}
	if p.File != "default.yaml" {
		t.Errorf("File = %q", p.File)
	}
	p.File = ""
	if want := Default(); !reflect.DeepEqual(p, want) {
		t.Errorf("DefaultYAML loads to\n%+v\nwant Default()\n%+v", p, want)
	}
}

// TestDefaultYAMLSpellsEveryKey checks that the commented default file
// names every key of the format, so it documents all of them.
func TestDefaultYAMLSpellsEveryKey(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal(DefaultYAML(), &doc); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var walk func(n *yaml.Node, where string)
	walk = func(n *yaml.Node, where string) {
		switch n.Kind {
		case yaml.DocumentNode:
			walk(n.Content[0], where)
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := join(where, n.Content[i].Value)
				seen[k] = true
				walk(n.Content[i+1], k)
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, where+"[]")
			}
		}
	}
	walk(&doc, "")
	var want func(t reflect.Type, where string) []string
	want = func(t reflect.Type, where string) []string {
		var out []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			k := join(where, tag)
			out = append(out, k)
			ft := f.Type
			if ft.Kind() == reflect.Slice {
				ft, k = ft.Elem(), k+"[]"
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, want(ft, k)...)
			}
		}
		return out
	}
	for _, k := range want(reflect.TypeOf(Policy{}), "") {
		// sources[].path has no built-in rule; a commented example spells it.
		// commands.allow has no built-in rule; a commented example spells it.
		if !seen[k] && !(k == "sources[].path" && strings.Contains(string(DefaultYAML()), "#   - path: ")) &&
			!(strings.HasPrefix(k, "commands.allow[].") && strings.Contains(string(DefaultYAML()), "#   - prefix: git status")) &&
			!(strings.HasPrefix(k, "quotas[].") && strings.Contains(string(DefaultYAML()), "#   - host: api.example.com")) {
			t.Errorf("DefaultYAML does not spell key %s", k)
		}
	}
}

func TestParseOverrides(t *testing.T) {
	p, err := Parse([]byte(`
limits:
  memory:
    max: 256MiB
paths:
  deny: []
  allow-write: [/tmp/out]
network:
  allow: ["*.example.com"]
sources:
  - scope: path
    trusted: true
`), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := Default()
	if p.Limits.Memory.Max != 256*mib || p.Limits.Memory.Default != 256*mib {
		t.Errorf("memory = %+v, want max 256MiB and the default brought down to it", p.Limits.Memory)
	}
	if p.Limits.Timeout != d.Limits.Timeout || p.Limits.Pids != d.Limits.Pids {
		t.Errorf("keys not given changed: %+v", p.Limits)
	}
	if len(p.Paths.Deny) != 0 {
		t.Errorf("deny: [] kept %v", p.Paths.Deny)
	}
	if !reflect.DeepEqual(p.Paths.DenyWrite, d.Paths.DenyWrite) {
		t.Errorf("deny-write changed: %v", p.Paths.DenyWrite)
	}
	if len(p.Sources) != 1 || !p.Sources[0].Trusted {
		t.Fatalf("sources = %+v", p.Sources)
	}
	if iso := p.Sources[0].Isolation; iso.Minimum != "process" || len(iso.Allowed) != 2 {
		t.Errorf("omitted isolation = %+v, want process or container, minimum process", iso)
	}
}

func TestParseEmpty(t *testing.T) {
	for _, s := range []string{"", "# nothing\n", "---\n"} {
		p, err := Parse([]byte(s), "e.yaml")
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		p.File = ""
		if !reflect.DeepEqual(p, Default()) {
			t.Errorf("Parse(%q) is not Default()", s)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       string // "file:line: ..." prefix and substring
	}{
		{"unknown top key", "version: 1\nsandbox: {}\n", `p.yaml:2: unknown key "sandbox" in the policy`},
		{"unknown nested key", "limits:\n  memroy:\n    max: 1GiB\n", `p.yaml:2: unknown key "memroy" in limits (known keys: cpus, memory, output, pids, timeout, tmpfs)`},
		{"unknown key in list item", "sources:\n  - scope: user\n    trust: true\n", `p.yaml:3: unknown key "trust" in sources[0]`},
		{"duplicate key", "limits:\n  pids: {max: 1}\n  pids: {max: 2}\n", `p.yaml:3: key "pids" given twice`},
		{"bad isolation", "sources:\n  - scope: user\n    isolation:\n      allowed: [vm]\n", `p.yaml:4: sources[0].isolation.allowed[0]: isolation "vm"`},
		{"bad scope", "sources:\n  - scope: remote\n", `p.yaml:2: sources[0].scope: scope "remote"`},
		{"bad landlock", "sources:\n  - scope: user\n    isolation:\n      landlock: maybe\n", `p.yaml:4: sources[0].isolation.landlock: landlock "maybe": want best-effort or required`},
		{"bad size", "limits:\n  memory:\n    max: lots\n", `p.yaml:3: limits.memory.max: parse size "lots"`},
		{"bad duration", "limits:\n  timeout:\n    max: soon\n", `p.yaml:3: limits.timeout.max: parse duration "soon"`},
		{"bad int", "limits:\n  pids:\n    max: many\n", `p.yaml:3: limits.pids.max: "many": want a whole number`},
		{"bad bool", "sources:\n  - trusted: maybe\n", `p.yaml:2: sources[0].trusted: "maybe": want true or false`},
		{"bad undo bool", "undo:\n  disable: maybe\n", `p.yaml:2: undo.disable: "maybe": want true or false`},
		{"bad undo count", "undo:\n  max-files: 1.5\n", `p.yaml:2: undo.max-files: "1.5": want a whole number`},
		{"bad matcher", "approval:\n  auto-approve: [tier:safe]\n", `p.yaml:2: approval.auto-approve[0]: matcher "tier:safe"`},
		{"bad matcher kind", "approval:\n  auto-deny: [tag:x]\n", `p.yaml:2: approval.auto-deny[0]: matcher "tag:x"`},
		{"bad approval", "approval:\n  standing: [sudo]\n", `p.yaml:2: approval.standing[0]: approval "sudo"`},
		{"relative path", "paths:\n  deny: [secrets]\n", `p.yaml:2: paths.deny[0]: path pattern "secrets"`},
		{"dotdot path", "paths:\n  deny: [/a/../b]\n", `p.yaml:2: paths.deny[0]: path pattern "/a/../b"`},
		{"empty element", "paths:\n  deny: [/etc//shadow]\n", `p.yaml:2: paths.deny[0]: path pattern "/etc//shadow": write it without empty elements`},
		{"bad host", "network:\n  deny: [\"a b\"]\n", `p.yaml:2: network.deny[0]: host "a b"`},
		{"host with port", "network:\n  allow: [\"a.com:443\"]\n", `p.yaml:2: network.allow[0]: host "a.com:443"`},
		{"list for mapping", "limits: [1]\n", `p.yaml:1: limits: want a mapping`},
		{"scalar for list", "paths:\n  deny: /etc\n", `p.yaml:2: paths.deny: want a list`},
		{"version", "version: 2\n", `p.yaml:1: version 2`},
		{"zero default", "limits:\n  pids:\n    default: 0\n", `p.yaml:3: limits.pids.default must be above 0: write one such as 256`},
		{"zero tmpfs", "limits:\n  tmpfs:\n    default: 0\n", `p.yaml:3: limits.tmpfs.default must be above 0: write one such as 64MiB`},
		{"negative tmpfs cap", "limits:\n  tmpfs:\n    max: -1\n", `p.yaml:3: limits.tmpfs.max: parse size "-1"`},
		{"bad tmpfs", "limits:\n  tmpfs:\n    max: big\n", `p.yaml:3: limits.tmpfs.max: parse size "big"`},
		{"negative cpus", "limits:\n  cpus:\n    default: -1\n", `p.yaml:3: limits.cpus.default: "-1": want 0 (none) or a number of CPUs from 0.01 to 1024, such as 0.5 or 2`},
		{"too many cpus", "limits:\n  cpus:\n    max: 1025\n", `p.yaml:3: limits.cpus.max: "1025": want 0 (none) or a number of CPUs from 0.01 to 1024`},
		{"NaN cpus", "limits:\n  cpus:\n    max: .nan\n", `p.yaml:3: limits.cpus.max: ".nan": want 0 (none) or a number of CPUs`},
		{"too few cpus", "limits:\n  cpus:\n    max: 0.005\n", `p.yaml:3: limits.cpus.max: "0.005": want 0 (none) or a number of CPUs from 0.01 to 1024`},
		{"Inf cpus", "limits:\n  cpus:\n    max: .inf\n", `p.yaml:3: limits.cpus.max: ".inf": want 0 (none) or a number of CPUs`},
		{"NaN word cpus", "limits:\n  cpus:\n    max: NaN\n", `p.yaml:3: limits.cpus.max: "NaN": want 0 (none) or a number of CPUs`},
		{"quoted cpus", "limits:\n  cpus:\n    default: \"0.5\"\n", `p.yaml:3: limits.cpus.default: "0.5": want 0 (none) or a number of CPUs`},
		{"word cpus", "limits:\n  cpus:\n    default: half\n", `p.yaml:3: limits.cpus.default: "half": want 0 (none) or a number of CPUs`},
		{"list cpus", "limits:\n  cpus:\n    default: [1]\n", `p.yaml:3: limits.cpus.default: want a single value, got a list`},
		{"bad port", "network:\n  localhost-allow: [70000]\n", `p.yaml:2: network.localhost-allow: port 70000`},
		{"negative undo count", "version: 1\nundo:\n  keep: 7d\n  max-files: -1\n", `p.yaml:4: undo.max-files: -1 is below zero`},
		{"a sources index", "sources:\n  - scope: any\n  - scope: local\n    isolation:\n      landlock-gaps: [nope]\n", `p.yaml:5: `},
		{"two documents", "version: 1\n---\nversion: 1\n", `p.yaml:2: more than one YAML document`},
		{"syntax", "limits: {\n", `p.yaml:`},
		{"root scalar", "hello\n", `p.yaml:1: want a mapping`},
		{"bare ~ path", "paths:\n  allow-write: [~]\n", `p.yaml:2: paths.allow-write[0]: empty value (YAML reads a bare ~ as empty`},
		{"empty host", "network:\n  allow: [\"\"]\n", `p.yaml:2: network.allow[0]: host ""`},
		{"empty glob", "sources:\n  - path: \"\"\n", `p.yaml:2: sources[0].path: empty path glob`},
		{"empty secret name", "secrets:\n  mask: [\"\"]\n", `p.yaml:2: secrets.mask[0]: empty name: write a file or folder name`},
		{"secret name a path", "secrets:\n  mask: [/a/.env]\n", `p.yaml:2: secrets.mask[0]: "/a/.env": write a name matched inside grants`},
		{"secret name with **", "secrets:\n  mask: [\"a/**/b\"]\n", `p.yaml:2: secrets.mask[0]: "a/**/b": a name already matches at any depth`},
		{"null isolation", "sources:\n  - isolation: {minimum: }\n", `p.yaml:2: sources[0].isolation.minimum: empty value`},
	}
	if p, err := Parse([]byte("undo:\n  disable: yes\n"), "p.yaml"); err != nil || !p.Undo.Disable {
		t.Errorf("disable: yes: %v", err) // YAML 1.1's words still load
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "p.yaml")
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Errorf("%v does not wrap ErrInvalidPolicy", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte("limits:\n  pids:\n    max: 9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.File != path || p.Limits.Pids.Max != 9 {
		t.Errorf("Load = %+v", p)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want ErrNotExist", err)
	}
	if err := os.WriteFile(path, []byte("bogus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.HasPrefix(err.Error(), path+":1:") {
		t.Errorf("Load(bad) = %v, want an error located at %s:1", err, path)
	}
	p, err = LoadLocated("")
	if err != nil || !reflect.DeepEqual(p, Default()) {
		t.Errorf("LoadLocated(\"\") = %v, %v; want Default()", p, err)
	}
}

func TestLocate(t *testing.T) {
	dir := t.TempDir()
	xdg := filepath.Join(dir, "xdg")
	home := filepath.Join(dir, "home")
	write := func(p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("version: 1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sysExists := exists(SystemPath)
	fallback, fallbackSrc := "", FromBuiltin
	if sysExists {
		fallback, fallbackSrc = SystemPath, FromSystem
	}
	check := func(flag, xdgDir, homeDir, wantPath, wantSrc string) {
		t.Helper()
		p, src := Locate(flag, xdgDir, homeDir)
		if p != wantPath || src != wantSrc {
			t.Errorf("Locate(%q, %q, %q) = %q, %q; want %q, %q", flag, xdgDir, homeDir, p, src, wantPath, wantSrc)
		}
	}
	check("/given.yaml", xdg, home, "/given.yaml", FromFlag)
	check("", xdg, home, fallback, fallbackSrc)
	homeFile := filepath.Join(home, ".config", "sandboxed", "policy.yaml")
	write(homeFile)
	check("", "", home, homeFile, FromUser)
	check("", "relative/xdg", home, homeFile, FromUser)
	check("", xdg, home, fallback, fallbackSrc) // XDG set: ~/.config is not looked at
	xdgFile := filepath.Join(xdg, "sandboxed", "policy.yaml")
	write(xdgFile)
	check("", xdg, home, xdgFile, FromUser)
	check("/given.yaml", xdg, home, "/given.yaml", FromFlag)
}

// Sizes and durations in a policy are read by the same grammar as a tool's
// (internal/units): 512MB is 512MiB, "1000" is a second, 1w is seven days.
func TestPolicySizesAndDurationsAreToolGrammar(t *testing.T) {
	load := func(mem, timeout string) (*Policy, error) {
		return Parse([]byte("limits:\n  memory:\n    max: "+mem+"\n  timeout:\n    max: "+timeout+"\n"), "p.yaml")
	}
	for _, c := range []struct {
		mem     string
		memWant Size
		tmo     string
		tmoWant Duration
	}{
		{"512MB", 512 * mib, "90s", Duration(90 * time.Second)},
		{"512MiB", 512 * mib, `"1000"`, Duration(time.Second)},
		{"2GB", 2 * gib, "1000", Duration(time.Second)},
		{"1.5GiB", 3 * gib / 2, "1w", Duration(7 * 24 * time.Hour)},
		{"64K", 64 * kib, "1h30m", Duration(90 * time.Minute)},
		{"1048576", mib, "30d", Duration(30 * 24 * time.Hour)},
		{"0", 0, "0", 0},
	} {
		p, err := load(c.mem, c.tmo)
		if err != nil {
			t.Errorf("memory %s, timeout %s: %v", c.mem, c.tmo, err)
			continue
		}
		if p.Limits.Memory.Max != c.memWant || p.Limits.Timeout.Max != c.tmoWant {
			t.Errorf("memory %s, timeout %s = %d, %v; want %d, %v", c.mem, c.tmo,
				p.Limits.Memory.Max, time.Duration(p.Limits.Timeout.Max), c.memWant, time.Duration(c.tmoWant))
		}
	}
	for _, c := range [][2]string{{"x", "1m"}, {"-1", "1m"}, {"1XB", "1m"}, {"1e300GiB", "1m"}, {"[1]", "1m"},
		{"1MB", "soon"}, {"1MB", "-5m"}, {"1MB", "xd"}, {"1MB", "-1d"}, {"1MB", "{a: 1}"}} {
		_, err := load(c[0], c[1])
		var le *LoadError
		if !errors.As(err, &le) || le.Line == 0 || !strings.Contains(le.Msg, "write ") {
			t.Errorf("memory %s, timeout %s: err = %v, want a located error that says how to write it", c[0], c[1], err)
		}
	}
	if got := Size(512 * mib).String(); got != "512MiB" {
		t.Errorf("Size.String = %q", got)
	}
	if got := Duration(30 * 24 * time.Hour).String(); got != "30d" {
		t.Errorf("Duration.String = %q", got)
	}
}

// limits.cpus takes whole and decimal numbers; limits.tmpfs sizes as
// limits.memory does; a default above its cap is brought down to it.
func TestParseCPUAndTmpfsLimits(t *testing.T) {
	tests := []struct {
		yaml  string
		cpus  CPULimit
		tmpfs SizeLimit
	}{
		{"memory: {max: 8GiB}", CPULimit{}, SizeLimit{Default: DefaultTmpfsBytes, Max: gib}},
		{"cpus: {default: 0.5, max: 2}", CPULimit{Default: 0.5, Max: 2}, SizeLimit{Default: DefaultTmpfsBytes, Max: gib}},
		{"cpus: {max: 1024}\n  tmpfs: {default: 16MB, max: 0}", CPULimit{Max: 1024}, SizeLimit{Default: 16 * mib}},
		{"cpus: {default: 4, max: 1.5}\n  tmpfs: {max: 32MiB}", CPULimit{Default: 1.5, Max: 1.5}, SizeLimit{Default: 32 * mib, Max: 32 * mib}},
		{"cpus: {default: .25}\n  tmpfs: {default: 1.5GiB}", CPULimit{Default: 0.25}, SizeLimit{Default: gib, Max: gib}},
	}
	for _, tt := range tests {
		p, err := Parse([]byte("limits:\n  "+tt.yaml+"\n"), "p.yaml")
		if err != nil {
			t.Errorf("%q: %v", tt.yaml, err)
			continue
		}
		if p.Limits.CPUs != tt.cpus || p.Limits.Tmpfs != tt.tmpfs {
			t.Errorf("%q: cpus %+v tmpfs %+v, want %+v %+v", tt.yaml, p.Limits.CPUs, p.Limits.Tmpfs, tt.cpus, tt.tmpfs)
		}
	}
}

// A check made after decoding is reported at its key's line, or at the
// nearest parent the file writes.
func TestKeyLine(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("version: 1\nlimits:\n  memory:\n    max: 1GiB\nsources:\n  - scope: any\n  - scope: local\n    isolation:\n      allowed: [process]\n"), &doc); err != nil {
		t.Fatal(err)
	}
	for msg, want := range map[string]int{
		"limits.memory.max must be 0 (no cap) or above": 4,
		"limits.memory.default must be above 0":         3,
		"limits.pids.default must be above 0":           2,
		"sources[1].isolation.allowed: bad":             9,
		"sources[7].isolation: bad":                     5,
		"undo.keep: write a duration above zero":        0,
		"a message that names no key":                   0,
	} {
		if got := keyLine(doc.Content[0], msg); got != want {
			t.Errorf("keyLine(%q) = %d, want %d", msg, got, want)
		}
	}
}
