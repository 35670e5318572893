package tool

import (
	"errors"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

func fp(f float64) *float64 { return &f }
func ip(i int) *int         { return &i }

func oneParam(p Parameter) *Definition {
	return &Definition{
		Name: "t", Description: "d",
		Exec:       &Exec{Kind: ExecBash, Command: "echo {" + p.Name + "}"},
		Parameters: []Parameter{p},
	}
}

func TestBindTypesAndRules(t *testing.T) {
	cases := []struct {
		name  string
		p     Parameter
		in    any
		want  any // typed value; nil with ok=false means an ErrInvalidParam
		valid bool
	}{
		{"string", Parameter{Name: "P", Type: TypeString}, "x y", "x y", true},
		{"string from JSON number", Parameter{Name: "P", Type: TypeString}, 5.0, "5", true},
		{"string from array", Parameter{Name: "P", Type: TypeString}, []any{"a"}, nil, false},
		{"number", Parameter{Name: "P", Type: TypeNumber}, "3.5", 3.5, true},
		{"number exp", Parameter{Name: "P", Type: TypeNumber}, "1e3", 1000.0, true},
		{"number JSON", Parameter{Name: "P", Type: TypeNumber}, 7.0, 7.0, true},
		{"number junk", Parameter{Name: "P", Type: TypeNumber}, "12abc", nil, false},
		{"number hex", Parameter{Name: "P", Type: TypeNumber}, "0x10", nil, false},
		{"number NaN", Parameter{Name: "P", Type: TypeNumber}, "NaN", nil, false},
		{"number bool", Parameter{Name: "P", Type: TypeNumber}, true, nil, false},
		{"bool true", Parameter{Name: "P", Type: TypeBoolean}, "true", true, true},
		{"bool yes", Parameter{Name: "P", Type: TypeBoolean}, "YES", true, true},
		{"bool 1", Parameter{Name: "P", Type: TypeBoolean}, "1", true, true},
		{"bool no", Parameter{Name: "P", Type: TypeBoolean}, "no", false, true},
		{"bool 0", Parameter{Name: "P", Type: TypeBoolean}, "0", false, true},
		{"bool false", Parameter{Name: "P", Type: TypeBoolean}, "false", false, true},
		{"bool JSON", Parameter{Name: "P", Type: TypeBoolean}, false, false, true},
		{"bool junk", Parameter{Name: "P", Type: TypeBoolean}, "maybe", nil, false},
		{"array csv", Parameter{Name: "P", Type: TypeArray}, "a, b,c", []any{"a", "b", "c"}, true},
		{"array JSON text", Parameter{Name: "P", Type: TypeArray}, `[1,"x"]`, []any{1.0, "x"}, true},
		{"array JSON", Parameter{Name: "P", Type: TypeArray}, []any{"x"}, []any{"x"}, true},
		{"array bad JSON", Parameter{Name: "P", Type: TypeArray}, `[1,`, nil, false},
		{"array from number", Parameter{Name: "P", Type: TypeArray}, 1.0, nil, false},
		{"object text", Parameter{Name: "P", Type: TypeObject}, `{"a":1}`, map[string]any{"a": 1.0}, true},
		{"object JSON", Parameter{Name: "P", Type: TypeObject}, map[string]any{"a": "b"}, map[string]any{"a": "b"}, true},
		{"object junk", Parameter{Name: "P", Type: TypeObject}, "a=1", nil, false},

		{"minimum ok", Parameter{Name: "P", Type: TypeNumber, Validation: &Validation{Minimum: fp(1)}}, "1", 1.0, true},
		{"minimum", Parameter{Name: "P", Type: TypeNumber, Validation: &Validation{Minimum: fp(1)}}, "0.5", nil, false},
		{"maximum ok", Parameter{Name: "P", Type: TypeNumber, Validation: &Validation{Maximum: fp(100)}}, "100", 100.0, true},
		{"maximum", Parameter{Name: "P", Type: TypeNumber, Validation: &Validation{Maximum: fp(100)}}, "101", nil, false},
		{"pattern ok", Parameter{Name: "P", Type: TypeString, Validation: &Validation{Pattern: "^[a-z]+$"}}, "abc", "abc", true},
		{"pattern", Parameter{Name: "P", Type: TypeString, Validation: &Validation{Pattern: "^[a-z]+$"}}, "abc1", nil, false},
		{"pattern unanchored", Parameter{Name: "P", Type: TypeString, Validation: &Validation{Pattern: "[0-9]"}}, "a1b", "a1b", true},
		{"pattern spec dir", Parameter{Name: "P", Type: TypeString, Validation: &Validation{Pattern: `^[^<>:"\\|?*]+$`}}, "a|b", nil, false},
		{"minLength ok", Parameter{Name: "P", Type: TypeString, Validation: &Validation{MinLength: ip(3)}}, "héé", "héé", true},
		{"minLength", Parameter{Name: "P", Type: TypeString, Validation: &Validation{MinLength: ip(3)}}, "ab", nil, false},
		{"maxLength", Parameter{Name: "P", Type: TypeString, Validation: &Validation{MaxLength: ip(2)}}, "abc", nil, false},
		{"enum ok", Parameter{Name: "P", Type: TypeString, Validation: &Validation{Enum: []any{"option1", "option2"}}}, "option2", "option2", true},
		{"enum", Parameter{Name: "P", Type: TypeString, Validation: &Validation{Enum: []any{"option1", "option2"}}}, "option3", nil, false},
		{"enum yaml int", Parameter{Name: "P", Type: TypeString, Validation: &Validation{Enum: []any{1, 3}}}, "3", "3", true},
		{"enum number", Parameter{Name: "P", Type: TypeNumber, Validation: &Validation{Enum: []any{1, 3}}}, "2", nil, false},
		{"minItems ok", Parameter{Name: "P", Type: TypeArray, Validation: &Validation{MinItems: ip(1)}}, "a", []any{"a"}, true},
		{"minItems", Parameter{Name: "P", Type: TypeArray, Validation: &Validation{MinItems: ip(1)}}, "", nil, false},
		{"maxItems", Parameter{Name: "P", Type: TypeArray, Validation: &Validation{MaxItems: ip(2)}}, "a,b,c", nil, false},
		{"uniqueItems ok", Parameter{Name: "P", Type: TypeArray, Validation: &Validation{UniqueItems: true}}, "a,b", []any{"a", "b"}, true},
		{"uniqueItems", Parameter{Name: "P", Type: TypeArray, Validation: &Validation{UniqueItems: true}}, "a,b,a", nil, false},
		{"object required ok", Parameter{Name: "P", Type: TypeObject, Validation: &Validation{Required: []string{"prop1"}}}, `{"prop1":"x"}`, map[string]any{"prop1": "x"}, true},
		{"object required", Parameter{Name: "P", Type: TypeObject, Validation: &Validation{Required: []string{"prop1", "prop2"}}}, `{"prop1":"x"}`, nil, false},
		{"object property type", Parameter{Name: "P", Type: TypeObject, Validation: &Validation{Properties: map[string]*Validation{
			"prop1": {Type: TypeString, Pattern: "^[a-z]+$"}}}}, `{"prop1":1}`, nil, false},
		{"object property pattern", Parameter{Name: "P", Type: TypeObject, Validation: &Validation{Properties: map[string]*Validation{
			"prop1": {Type: TypeString, Pattern: "^[a-z]+$"}}}}, `{"prop1":"A"}`, nil, false},
		{"object property ok", Parameter{Name: "P", Type: TypeObject, Validation: &Validation{Properties: map[string]*Validation{
			"prop1": {Type: TypeString, Pattern: "^[a-z]+$"}}}}, `{"prop1":"a","other":2}`, map[string]any{"prop1": "a", "other": 2.0}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := Bind(oneParam(c.p), Input{"P": c.in}, BindEnv{})
			if !c.valid {
				if !errors.Is(err, ErrInvalidParam) {
					t.Fatalf("want ErrInvalidParam, got %v", err)
				}
				if !strings.Contains(err.Error(), "parameter P") {
					t.Errorf("error does not name the parameter: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Params[0].Value; !reflect.DeepEqual(got, c.want) {
				t.Errorf("value %#v, want %#v", got, c.want)
			}
		})
	}
}

func TestBindMissingAndUnknown(t *testing.T) {
	d := &Definition{
		Name: "t", Description: "d", Exec: &Exec{Kind: ExecBash, Command: "x"},
		Parameters: []Parameter{
			{Name: "OWNER", Type: TypeString, Required: true},
			{Name: "REPO", Type: TypeString, Required: true},
			{Name: "OPT", Type: TypeString},
			{Name: "N", Type: TypeNumber},
		},
	}
	_, err := Bind(d, Input{"N": "x"}, BindEnv{})
	if !errors.Is(err, ErrMissingParam) || !strings.Contains(err.Error(), "OWNER, REPO") {
		t.Errorf("missing: %v", err)
	}
	if !errors.Is(err, ErrInvalidParam) {
		t.Errorf("invalid N not reported with the missing ones: %v", err)
	}
	_, err = Bind(d, Input{"OWNR": "x"}, BindEnv{})
	if !errors.Is(err, ErrUnknownParam) || !strings.Contains(err.Error(), "did you mean OWNER?") ||
		!strings.Contains(err.Error(), "OWNER, REPO, OPT, N") {
		t.Errorf("unknown: %v", err)
	}
	b, err := Bind(d, Input{"OWNER": "o", "REPO": "r"}, BindEnv{})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := b.Param("OPT"); p.Source != SourceNone || p.Value != nil || p.Text != "" {
		t.Errorf("absent optional: %+v", p)
	}
}

func TestBindDefaults(t *testing.T) {
	d := &Definition{
		Name: "clone", Description: "d",
		Exec: &Exec{Kind: ExecBash, Command: "git clone https://github.com/{OWNER}/{REPO}.git {OUTPUT_DIR}"},
		Parameters: []Parameter{
			{Name: "OUTPUT_DIR", Type: TypeString, Default: "./checkout/{NAME}", HasDefault: true},
			{Name: "NAME", Type: TypeString, Default: "{REPO}-{TOOL_NAME}", HasDefault: true, Transform: "value.toLowerCase()"},
			{Name: "OWNER", Type: TypeString, Required: true},
			{Name: "REPO", Type: TypeString, Required: true, Format: "--repo={value}"},
			{Name: "COUNT", Type: TypeNumber, Default: 10, HasDefault: true},
			{Name: "LIST", Type: TypeArray, Default: "[]", HasDefault: true},
		},
		Security: Security{RequiredPermissions: []string{"filesystem:write:{OUTPUT_DIR}", "network:external:github.com"}},
	}
	b, err := Bind(d, Input{"OWNER": "me", "REPO": "VSCode"}, BindEnv{})
	if err != nil {
		t.Fatal(err)
	}
	want := "git clone https://github.com/'me'/'--repo=VSCode'.git './checkout/vscode-clone'"
	if got := b.Steps[0].Command; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := b.Permissions[0]; got != "filesystem:write:./checkout/vscode-clone" {
		t.Errorf("permission %q", got)
	}
	if p, _ := b.Param("COUNT"); p.Value != 10.0 || p.Text != "10" {
		t.Errorf("COUNT %+v", p)
	}
	if p, _ := b.Param("LIST"); !reflect.DeepEqual(p.Value, []any{}) {
		t.Errorf("LIST %+v", p)
	}
	// An explicit value wins over a default; its default is never evaluated.
	b, err = Bind(d, Input{"OWNER": "me", "REPO": "r", "OUTPUT_DIR": "/x"}, BindEnv{})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := b.Param("OUTPUT_DIR"); p.Text != "/x" || p.Source != SourceInput {
		t.Errorf("OUTPUT_DIR %+v", p)
	}
}

func TestBindDefaultCycle(t *testing.T) {
	d := &Definition{
		Name: "t", Description: "d", Exec: &Exec{Kind: ExecBash, Command: "echo {A}"},
		Parameters: []Parameter{
			{Name: "A", Type: TypeString, Default: "{B}/a", HasDefault: true},
			{Name: "B", Type: TypeString, Default: "{C}/b", HasDefault: true},
			{Name: "C", Type: TypeString, Default: "{A}/c", HasDefault: true},
			{Name: "SELF", Type: TypeString, Default: "x{SELF}", HasDefault: true},
		},
	}
	done := make(chan error, 1)
	go func() {
		_, err := Bind(d, Input{}, BindEnv{})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrDefaultCycle) || !strings.Contains(err.Error(), "A -> B -> C -> A") {
			t.Errorf("cycle: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Bind hangs on a default cycle")
	}
	// Breaking the cycle with a value works.
	d.Parameters = d.Parameters[:3]
	if _, err := Bind(d, Input{"C": "c"}, BindEnv{}); err != nil {
		t.Errorf("with C given: %v", err)
	}
	// A self reference is a cycle too.
	d2 := oneParam(Parameter{Name: "SELF", Type: TypeString, Default: "x{SELF}", HasDefault: true})
	if _, err := Bind(d2, Input{}, BindEnv{}); !errors.Is(err, ErrDefaultCycle) {
		t.Errorf("self: %v", err)
	}
}

func TestBindAlias(t *testing.T) {
	base := &Definition{
		Name: "search-code", Description: "Search",
		Commands: &PlatformCommands{Default: `grep -r "{PATTERN}" {DIRECTORY} --include="*.{FILE_TYPE}"`},
		Parameters: []Parameter{
			{Name: "PATTERN", Type: TypeString, Required: true},
			{Name: "DIRECTORY", Type: TypeString, Default: ".", HasDefault: true},
			{Name: "FILE_TYPE", Type: TypeString, Default: "*", HasDefault: true},
		},
	}
	alias := &Definition{Name: "search-js", Description: "Search JS", Type: "alias", BaseTool: "search-code",
		DefaultParameters: map[string]string{"FILE_TYPE": "js", "DIRECTORY": "./src"}}
	if _, err := Bind(alias, Input{}, BindEnv{}); !errors.Is(err, ErrUnsupportedExec) {
		t.Errorf("unmerged alias: %v", err)
	}
	m := MergeAlias(alias, base)
	b, err := Bind(m, Input{"PATTERN": "TODO"}, BindEnv{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b.Steps[0].Argv, []string{"/bin/sh", "-c", `grep -r "TODO" './src' --include="*.js"`}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q want %q", got, want)
	}
	if p, _ := b.Param("FILE_TYPE"); p.Source != SourceAliasDefault {
		t.Errorf("source %q", p.Source)
	}
	b, err = Bind(m, Input{"PATTERN": "x", "FILE_TYPE": "go"}, BindEnv{})
	if err != nil || !strings.Contains(b.Steps[0].Command, `"*.go"`) {
		t.Errorf("input over alias default: %v %v", err, b)
	}
}

func TestBindPlatforms(t *testing.T) {
	cmds := &PlatformCommands{
		Default:   "echo default",
		Platforms: map[string]string{"windows": "echo win", "unix": "echo unix", "macos": "echo mac"},
	}
	d := &Definition{Name: "t", Description: "d", Commands: cmds}
	b, err := Bind(d, nil, BindEnv{})
	if err != nil || b.Steps[0].Command != "echo unix" || b.Steps[0].Name != "main" {
		t.Errorf("linux → unix: %v %+v", err, b)
	}
	cmds.Platforms["linux"] = "echo linux"
	if b, _ := Bind(d, nil, BindEnv{}); b.Steps[0].Command != "echo linux" {
		t.Errorf("linux: %q", b.Steps[0].Command)
	}
	if b, _ := Bind(d, nil, BindEnv{Platform: "macos"}); b.Steps[0].Command != "echo mac" {
		t.Errorf("macos: %q", b.Steps[0].Command)
	}
	d.Commands = &PlatformCommands{Platforms: map[string]string{"windows": "dir"}}
	if _, err := Bind(d, nil, BindEnv{}); !errors.Is(err, ErrUnsupportedExec) {
		t.Errorf("windows only: %v", err)
	}
	d = &Definition{Name: "t", Description: "d", Exec: &Exec{Kind: ExecCmd, Command: "dir"}}
	if _, err := Bind(d, nil, BindEnv{}); !errors.Is(err, ErrUnsupportedExec) || !strings.Contains(err.Error(), "Windows CMD") {
		t.Errorf("cmd: %v", err)
	}
	d = &Definition{Name: "t", Description: "d", Exec: &Exec{Kind: ExecBash, Command: "x"}, Platforms: []string{"windows"}}
	if _, err := Bind(d, nil, BindEnv{}); !errors.Is(err, ErrUnsupportedExec) {
		t.Errorf("platforms [windows]: %v", err)
	}
}

func TestBindArgvKinds(t *testing.T) {
	cases := []struct {
		kind  ExecKind
		shell string
		want  []string
	}{
		{ExecBash, "", []string{"/bin/bash", "-c", "echo 'v'"}},
		{ExecScript, "", []string{"/bin/sh", "-c", "echo 'v'"}},
		{ExecScript, "bash", []string{"/bin/bash", "-c", "echo 'v'"}},
		{ExecScript, "/usr/bin/zsh", []string{"/usr/bin/zsh", "-c", "echo 'v'"}},
		{ExecPwsh, "", []string{"pwsh", "-NoLogo", "-NoProfile", "-NonInteractive", "-Command", "echo 'v'"}},
		{ExecRun, "", []string{"echo", "v"}},
	}
	for _, c := range cases {
		b, err := bindCmd(t, c.kind, c.shell, "echo {X}", "v")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(b.Steps[0].Argv, c.want) {
			t.Errorf("%s %s: got %q want %q", c.kind, c.shell, b.Steps[0].Argv, c.want)
		}
	}
	// Interpreters whose quoting we do not do refuse escaped values ...
	if _, err := bindCmd(t, ExecScript, "node", "console.log({X})", "v"); !errors.Is(err, ErrUnsupportedExec) {
		t.Errorf("node escaped: %v", err)
	}
	// ... and take unescaped ones verbatim.
	d := &Definition{Name: "t", Description: "d", Exec: &Exec{Kind: ExecScript, Shell: "node", Command: "console.log({N})"},
		Parameters: []Parameter{{Name: "N", Type: TypeNumber, EscapeShell: new(bool)}}}
	b, err := Bind(d, Input{"N": "3"}, BindEnv{})
	if err != nil || !reflect.DeepEqual(b.Steps[0].Argv, []string{"node", "-e", "console.log(3)"}) {
		t.Errorf("node unescaped: %v %v", err, b)
	}
	if _, err := bindCmd(t, ExecScript, "cmd", "dir", "v"); !errors.Is(err, ErrUnsupportedExec) {
		t.Errorf("script cmd: %v", err)
	}
}

// githubCommitStats is the spec's multi-step example.
func githubCommitStats() *Definition {
	return &Definition{
		Name: "github-commit-stats", Description: "Get statistics",
		Steps: []Step{
			{Name: "fetch-commits", Exec: &Exec{Kind: ExecBash, Command: `curl -s "https://api.github.com/repos/{OWNER}/{REPO}/commits?per_page=10"`},
				Output: &Output{Mode: OutputBuffer, BufferLimit: 5 << 20}},
			{Name: "count-authors", Exec: &Exec{Kind: ExecBash, Command: `echo '{fetch-commits.output}' | jq 'group_by(.commit.author.name) | map({author: .[0].commit.author.name, count: length})'`}},
			{Name: "show", Exec: &Exec{Kind: ExecBash, Command: `printf '%s\0' "{count-authors.output}" {count-authors.exit-code} {OWNER}`},
				RunCondition: "{count-authors.exit-code} == 0 && '{OWNER}' != ''", Input: "{fetch-commits.output}"},
		},
		Parameters: []Parameter{
			{Name: "OWNER", Type: TypeString, Required: true},
			{Name: "REPO", Type: TypeString, Required: true},
		},
		Security: Security{Logging: &Logging{SensitiveParameters: []string{"REPO"}}},
		Timeout:  15 * time.Second,
	}
}

func TestBindSteps(t *testing.T) {
	b, err := Bind(githubCommitStats(), Input{"OWNER": "{fetch-commits.output}", "REPO": "secret"}, BindEnv{})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Steps) != 3 || b.Steps[0].Timeout != 15*time.Second || b.Steps[0].Output.BufferLimit != 5<<20 {
		t.Fatalf("steps: %+v", b.Steps)
	}
	if refs := b.Steps[0].StepRefs(); len(refs) != 0 {
		t.Errorf("step 0 refs %v", refs)
	}
	if refs := b.Steps[1].StepRefs(); !reflect.DeepEqual(refs, []string{"fetch-commits.output"}) {
		t.Errorf("step 1 refs %v", refs)
	}
	if !strings.Contains(b.Steps[0].MaskedCommand, "/***/commits") || strings.Contains(b.Steps[0].MaskedCommand, "secret") {
		t.Errorf("masked command %s", b.Steps[0].MaskedCommand)
	}
	if m := b.Masked(); m["REPO"] != "***" || m["OWNER"] != "{fetch-commits.output}" {
		t.Errorf("Masked %v", m)
	}

	hostile := "it's \"quoted\" $(id) `id`\n{\"a\": 1}\n\n"
	outputs := map[string]StepOutput{"fetch-commits": {Output: hostile}}
	argv, cmd, err := b.Steps[1].Resolve(outputs)
	if err != nil {
		t.Fatal(err)
	}
	// Run the echo half for real: the output must come through unchanged.
	echo := strings.SplitN(cmd, " | jq", 2)[0]
	out, err := exec.Command("/bin/bash", "-c", echo).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimRight(hostile, "\n") + "\n"; string(out) != want {
		t.Errorf("echo got %q want %q (argv %q)", out, want, argv)
	}

	outputs["count-authors"] = StepOutput{Output: "x'y\n", ExitCode: 3}
	argv, _, err = b.Steps[2].Resolve(outputs)
	if err != nil {
		t.Fatal(err)
	}
	// The OWNER value that looks like a step reference stays literal.
	if got := runWords(t, argv); !reflect.DeepEqual(got, []string{"x'y", "3", "{fetch-commits.output}"}) {
		t.Errorf("step 2 words %q", got)
	}
	cond, err := b.Steps[2].resolveCondition(outputs)
	if err != nil || cond != "3 == 0 && '{fetch-commits.output}' != ''" {
		t.Errorf("condition %q %v", cond, err)
	}
	cond, _ = b.Steps[2].resolveCondition(map[string]StepOutput{})
	if cond != "{count-authors.exit-code} == 0 && '{fetch-commits.output}' != ''" {
		t.Errorf("condition without outputs %q", cond)
	}
	in, err := b.Steps[2].ResolveInput(outputs)
	if err != nil || in != strings.TrimRight(hostile, "\n") {
		t.Errorf("input %q %v", in, err)
	}
}

func TestBindEnvironmentAndDirs(t *testing.T) {
	d := &Definition{
		Name: "t", Description: "d",
		Steps: []Step{
			{Name: "a", Exec: &Exec{Kind: ExecBash, Command: "pwd"}, WorkingDirectory: "sub/{DIR}",
				Environment: map[string]string{"STEP": "{DIR}"}},
			{Name: "b", Exec: &Exec{Kind: ExecBash, Command: "pwd"}, WorkingDirectory: "/abs"},
			{Name: "c", UseTool: "other", With: map[string]string{"URL": "{DIR}", "WS": "{WORKSPACE}"}},
		},
		Parameters:       []Parameter{{Name: "DIR", Type: TypeString, Default: "my dir", HasDefault: true}},
		Environment:      &Environment{Variables: map[string]string{"PROXY": "http://{DIR}:1", "TOOL": "{TOOL_NAME}"}},
		WorkingDirectory: "~/projects/{DIR}",
	}
	b, err := Bind(d, Input{}, BindEnv{Home: "/home/u", Workspace: "/ws"})
	if err != nil {
		t.Fatal(err)
	}
	if b.WorkingDirectory != "/home/u/projects/my dir" {
		t.Errorf("wd %q", b.WorkingDirectory)
	}
	if b.Steps[0].Cwd != "/home/u/projects/my dir/sub/my dir" || b.Steps[1].Cwd != "/abs" {
		t.Errorf("cwd %q %q", b.Steps[0].Cwd, b.Steps[1].Cwd)
	}
	if b.Env["PROXY"] != "http://my dir:1" || b.Env["TOOL"] != "t" {
		t.Errorf("env %v", b.Env)
	}
	if b.Steps[0].Env["STEP"] != "my dir" || b.Steps[0].Env["PROXY"] != "http://my dir:1" {
		t.Errorf("step env %v", b.Steps[0].Env)
	}
	if b.Steps[2].UseTool != "other" || b.Steps[2].With["URL"] != "my dir" || b.Steps[2].With["WS"] != "/ws" || b.Steps[2].Argv != nil {
		t.Errorf("use-tool step %+v", b.Steps[2])
	}
	if _, err := Bind(d, Input{}, BindEnv{}); !errors.Is(err, ErrUnsupportedExec) {
		t.Errorf("~ without home: %v", err)
	}
	d.WorkingDirectory = "{WORKSPACE}"
	if _, err := Bind(d, Input{}, BindEnv{}); !errors.Is(err, ErrUnsupportedExec) || !strings.Contains(err.Error(), "{WORKSPACE}") {
		t.Errorf("workspace unset: %v", err)
	}
}

func TestBindFallback(t *testing.T) {
	d := &Definition{
		Name: "t", Description: "d",
		Steps: []Step{{Name: "a", Exec: &Exec{Kind: ExecBash, Command: "try {X}"},
			ErrorHandling: &ErrorHandling{Retry: &Retry{Attempts: 3, Delay: time.Second}, Fallback: "alt {X}"}}},
		Parameters: []Parameter{{Name: "X", Type: TypeString}},
	}
	b, err := Bind(d, Input{"X": "a b"}, BindEnv{})
	if err != nil {
		t.Fatal(err)
	}
	s := b.Steps[0]
	if s.Retry.Attempts != 3 || s.Fallback == nil || !reflect.DeepEqual(s.Fallback.Argv, []string{"/bin/bash", "-c", "alt 'a b'"}) {
		t.Errorf("fallback %+v", s.Fallback)
	}
}

func TestParseArgs(t *testing.T) {
	in, err := ParseArgs([]string{"A=1", "--param", "B=x=y", "--param=C=", "D=a b"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, Input{"A": Text("1"), "B": Text("x=y"), "C": Text(""), "D": Text("a b")}) {
		t.Errorf("got %v", in)
	}
	for _, bad := range [][]string{{"noequals"}, {"=v"}, {"--param"}, {"A=1", "A=2"}} {
		if _, err := ParseArgs(bad); !errors.Is(err, ErrBadArgs) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	in, err = ParseParamsJSON([]byte(`{"N": 10, "B": true, "L": [1, "a"], "O": {"k": 2.5}, "Z": null}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Input{"N": 10.0, "B": true, "L": []any{1.0, "a"}, "O": map[string]any{"k": 2.5}}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("got %#v", in)
	}
	for _, bad := range []string{`[1]`, `{"a":`, `null`, `{} {}`} {
		if _, err := ParseParamsJSON([]byte(bad)); !errors.Is(err, ErrBadArgs) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	m, err := Input{"A": "1"}.Merge(Input{"B": 2.0})
	if err != nil || len(m) != 2 {
		t.Errorf("merge %v %v", m, err)
	}
	if _, err := (Input{"A": "1"}).Merge(Input{"A": 2.0}); !errors.Is(err, ErrBadArgs) {
		t.Errorf("merge dup: %v", err)
	}
}

func TestSubstituteSteps(t *testing.T) {
	out := map[string]StepOutput{"s1": {Output: "a'b\n", ExitCode: 0}}
	got, err := substituteSteps(`echo '{s1.output}' {s1.exit-code} {s2.output} {PARAM}`, SyntaxBash, out)
	if err != nil || got != `echo 'a'\''b' '0' {s2.output} {PARAM}` {
		t.Errorf("got %q %v", got, err)
	}
	got, _ = substituteSteps(`{s1.output}`, SyntaxPlain, out)
	if got != "a'b" {
		t.Errorf("plain %q", got)
	}
	if s, ok := syntaxOf(ExecScript, "node"); ok || s != SyntaxPlain {
		t.Errorf("syntaxOf node")
	}
	if s, ok := syntaxOf(ExecScript, "python3"); !ok || s != SyntaxPython {
		t.Errorf("syntaxOf python3")
	}
	if s, ok := syntaxOf(ExecBash, ""); !ok || s != SyntaxBash {
		t.Errorf("syntaxOf bash")
	}
}
