package tool

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// parseErr parses src as t.yaml and asserts it fails with a located
// *LoadError holding every wanted "LINE:COL: message" (a prefix of the
// diagnostic's text after the file name).
func parseErr(t *testing.T, src string, want ...string) *LoadError {
	t.Helper()
	def, err := Parse([]byte(src), "t.yaml")
	if err == nil {
		t.Fatalf("parsed, want errors %q; got %+v", want, def)
	}
	le := checkLocated(t, "t.yaml", err)
	text := le.Error()
	for _, w := range want {
		if !strings.Contains(text, "t.yaml:"+w) {
			t.Errorf("missing %q in:\n%s", "t.yaml:"+w, text)
		}
	}
	return le
}

func parseOK(t *testing.T, src string) *Definition {
	t.Helper()
	def, err := Parse([]byte(src), "t.yaml")
	if err != nil {
		t.Fatalf("want it to parse, got:\n%v", err)
	}
	return def
}

// Each case breaks one rule; want holds LINE:COL: message prefixes.
var ruleCases = []struct {
	name string
	src  string
	want []string
}{
	{"unknown key with nearest hint", "name: t\ndescripton: d\nbash: echo\n",
		[]string{"2:1: unknown key descripton in the tool definition (hint: did you mean description?)", "1:1: missing description"}},
	{"unknown nested key", "name: t\ndescription: d\nbash: echo\nsecurity:\n  isolaton: process\n",
		[]string{"5:3: unknown key isolaton in security (hint: did you mean isolation?)"}},
	{"draft key uses", "description: d\nbash: echo\nuses:\n  tool: x\n",
		[]string{"3:1: unknown key uses in the tool definition (hint: uses: is from a draft"}},
	{"wrong type bool", "description: d\nbash: echo\ninteractive: maybe\n",
		[]string{"3:14: interactive must be true or false, got a string"}},
	{"wrong type list", "description: d\nbash: echo\ntags: read\n",
		[]string{"3:7: tags must be a list of strings, got a string (hint: write a list, e.g. [read])"}},
	{"wrong type mapping", "description: d\nbash: echo\nsecurity: strict\n",
		[]string{"3:11: security must be a mapping of keys, got a string"}},
	{"wrong type command", "description: d\nbash: [echo]\n",
		[]string{"2:7: bash must be a string, got a list"}},
	{"missing description", "name: t\nbash: echo\n",
		[]string{"1:1: missing description"}},
	{"empty description", "name: t\ndescription: \"\"\nbash: echo\n",
		[]string{"2:14: description is empty"}},
	{"parameter without description", "description: d\nbash: echo {A}\nparameters:\n  A:\n    type: string\n",
		[]string{"4:3: parameter A has no description"}},
	{"two execution keys", "description: d\nbash: echo\ncmd: echo\n",
		[]string{"3:1: cmd and bash (line 2) are both set: a tool runs one way"}},
	{"exec key and steps", "description: d\nrun: echo\nsteps:\n  - name: a\n    bash: echo\n",
		[]string{"3:1: steps and run (line 2) are both set"}},
	{"no execution key", "name: t\ndescription: d\n",
		[]string{"1:1: no command to run"}},
	{"alias without base-tool", "description: d\ntype: alias\n",
		[]string{"1:1: an alias needs base-tool"}},
	{"alias with command", "description: d\ntype: alias\nbase-tool: x\nbash: echo\n",
		[]string{"4:1: an alias cannot have bash"}},
	{"base-tool without alias", "description: d\nbash: echo\nbase-tool: x\n",
		[]string{"3:1: base-tool is only for aliases"}},
	{"unknown tool type", "description: d\nbash: echo\ntype: macro\n",
		[]string{"3:7: unknown tool type \"macro\""}},
	{"shell without script", "description: d\nbash: echo\nshell: zsh\n",
		[]string{"3:1: shell without script"}},
	{"step shell without script", "description: d\nsteps:\n  - name: a\n    bash: echo\n    shell: zsh\n",
		[]string{"5:5: shell without script"}},
	{"step without name", "description: d\nsteps:\n  - bash: echo\n",
		[]string{"3:5: step 1 has no name"}},
	{"duplicate step name", "description: d\nsteps:\n  - name: a\n    bash: echo\n  - name: a\n    bash: echo\n",
		[]string{"5:11: duplicate step name a (hint: the first a is at line 3"}},
	{"invalid step name", "description: d\nsteps:\n  - name: a b\n    bash: echo\n",
		[]string{"3:11: step name \"a b\" is not valid"}},
	{"step with nothing to run", "description: d\nsteps:\n  - name: a\n    parallel: true\n",
		[]string{"3:5: step a has nothing to run"}},
	{"step with command and use-tool", "description: d\nsteps:\n  - name: a\n    bash: echo\n    use-tool: other\n",
		[]string{"5:5: step a has both bash and use-tool"}},
	{"step with two commands", "description: d\nsteps:\n  - name: a\n    bash: echo\n    pwsh: echo\n",
		[]string{"5:5: step a has both bash (line 4) and pwsh"}},
	{"with without use-tool", "description: d\nsteps:\n  - name: a\n    bash: echo\n    with:\n      X: y\n",
		[]string{"5:5: step a has with: but no use-tool"}},
	{"wait-for unknown step", "description: d\nsteps:\n  - name: build\n    bash: echo\n  - name: b\n    bash: echo\n    wait-for: [biuld]\n",
		[]string{"7:16: step b waits for biuld, but there is no step biuld (hint: did you mean build?)"}},
	{"wait-for itself", "description: d\nsteps:\n  - name: a\n    bash: echo\n    wait-for: [a]\n",
		[]string{"5:16: step a waits for itself"}},
	{"wait-for cycle", "description: d\nsteps:\n  - name: a\n    bash: echo\n    wait-for: [c]\n  - name: b\n    bash: echo\n    wait-for: [a]\n  - name: c\n    bash: echo\n    wait-for: [b]\n",
		[]string{"8:16: wait-for cycle: a → c → b → a"}},
	{"run-condition unknown step", "description: d\nsteps:\n  - name: a\n    bash: echo\n  - name: b\n    bash: echo\n    run-condition: \"{x.exit-code} == 0\"\n",
		[]string{"7:21: run-condition of step b refers to {x.exit-code}, but there is no step x"}},
	{"step ref in input, env, with, fallback", "description: d\nsteps:\n  - name: a\n    bash: echo\n    input: \"{nope.output}\"\n    environment:\n      V: \"{nope.error}\"\n    error-handling:\n      fallback: echo {nope.output}\n  - name: b\n    use-tool: t\n    with:\n      X: \"{nope.output}\"\n",
		[]string{"5:13: input of step a refers to {nope.output}, but there is no step nope",
			"7:11: environment.V of step a refers to {nope.error}",
			"9:22: fallback of step a refers to {nope.output}",
			"13:11: with.X of step b refers to {nope.output}"}},
	{"step ref in a command", "description: d\nsteps:\n  - name: a\n    bash: |\n      echo one\n      echo {gone.output}\n",
		[]string{"6:12: bash command of step a refers to {gone.output}, but there is no step gone"}},
	{"step ref to its own result", "description: d\nsteps:\n  - name: a\n    bash: echo {a.output}\n",
		[]string{"4:16: bash command of step a refers to its own result {a.output}"}},
	{"step ref to a later step", "description: d\nsteps:\n  - name: a\n    bash: echo {b.output}\n  - name: b\n    bash: echo\n",
		[]string{"4:16: bash command of step a refers to {b.output}, but step b comes later"}},
	{"step ref outside steps", "description: d\nsteps:\n  - name: a\n    bash: echo\ninput: \"{a.output}\"\n",
		[]string{"5:9: input refers to {a.output} outside the steps"}},
	{"step ref with unknown result", "description: d\nsteps:\n  - name: a\n    bash: echo\n  - name: b\n    bash: echo {a.stdout}\n",
		[]string{"6:16: bash command of step b refers to {a.stdout}: a step has no result \"stdout\""}},
	{"step named like a parameter reference", "description: d\nsteps:\n  - name: a\n    bash: echo\n  - name: b\n    bash: echo {a}\n",
		[]string{"6:16: bash command of step b refers to {a}, which names a step, not a parameter (hint: use {a.output}"}},
	{"step ref in a default", "description: d\nsteps:\n  - name: a\n    bash: echo {P}\nparameters:\n  P:\n    description: p\n    default: \"{a.output}\"\n",
		[]string{"8:15: default of parameter P refers to {a.output}: a parameter default cannot use step results"}},
	{"undeclared reference in command", "description: d\nbash: echo {NAME} ${HOME} $USER\nparameters:\n  NAMES:\n    description: n\n",
		[]string{"2:12: bash command refers to {NAME}, which is not a declared parameter (hint: did you mean NAMES?)"}},
	{"undeclared reference in default", "description: d\nbash: echo {A}\nparameters:\n  A:\n    description: a\n    default: \"./x/{B}\"\n",
		[]string{"6:19: default of parameter A refers to {B}, which is not a declared parameter"}},
	{"DESCRIPTION outside description-template", "description: d\nbash: echo {DESCRIPTION}\n",
		[]string{"2:12: bash command refers to {DESCRIPTION}, which is available only in description-template"}},
	{"default cycle", "description: d\nbash: echo {A} {B}\nparameters:\n  A:\n    description: a\n    default: \"./x/{B}\"\n  B:\n    description: b\n    default: \"{A}\"\n",
		[]string{"9:15: parameter defaults refer to each other in a cycle: A → B → A"}},
	{"default self cycle", "description: d\nbash: echo {A}\nparameters:\n  A:\n    description: a\n    default: \"x{A}\"\n",
		[]string{"6:16: parameter defaults refer to each other in a cycle: A → A"}},
	{"unknown parameter type", "description: d\nbash: echo {A}\nparameters:\n  A:\n    type: text\n    description: a\n",
		[]string{"5:11: unknown type \"text\" for parameter A"}},
	{"invalid parameter name", "description: d\nbash: echo\nparameters:\n  A B:\n    description: a\n",
		[]string{"4:3: parameter name \"A B\" is not valid"}},
	{"invalid isolation", "description: d\nbash: echo\nsecurity:\n  isolation: vm\n",
		[]string{"4:14: unknown isolation \"vm\" (hint: isolation is one of none, process, container)"}},
	{"invalid execution-privilege", "description: d\nbash: echo\nsecurity:\n  execution-privilege: root\n",
		[]string{"4:24: unknown execution-privilege \"root\""}},
	{"invalid output mode", "description: d\nsteps:\n  - name: a\n    bash: echo\n    output:\n      mode: file\n",
		[]string{"6:13: unknown output mode \"file\" (hint: output.mode is buffer or stream)"}},
	{"invalid dependency scope", "description: d\nbash: echo\ndependencies:\n  - tool: x\n    scope: team\n",
		[]string{"5:12: unknown dependency scope \"team\""}},
	{"invalid regex", "description: d\nbash: echo {A}\nparameters:\n  A:\n    description: a\n    validation:\n      pattern: \"^(?=x)\"\n",
		[]string{"7:16: invalid regex in parameter A validation pattern"}},
	{"minimum greater than maximum", "description: d\nbash: echo {N}\nparameters:\n  N:\n    type: number\n    description: n\n    validation:\n      minimum: 10\n      maximum: 1\n",
		[]string{"8:16: parameter N validation minimum 10 is greater than maximum 1"}},
	{"minLength greater than maxLength", "description: d\nbash: echo {N}\nparameters:\n  N:\n    description: n\n    validation:\n      minLength: 5\n      maxLength: 2\n",
		[]string{"7:18: parameter N validation minLength 5 is greater than maxLength 2"}},
	{"default of wrong type", "description: d\nbash: echo {N} {B}\nparameters:\n  N:\n    type: number\n    description: n\n    default: ten\n  B:\n    type: boolean\n    description: b\n    default: 1\n",
		[]string{"7:14: default of parameter N must be a number for a number parameter, got a string",
			"11:14: default of parameter B must be true or false for a boolean parameter, got a number (1)"}},
	{"enum value of wrong type", "description: d\nbash: echo {N}\nparameters:\n  N:\n    type: number\n    description: n\n    validation:\n      enum: [1, two]\n",
		[]string{"8:17: parameter N validation enum value two is not a number"}},
	{"bad size", "description: d\nbash: echo\nresources:\n  max-memory: 512XB\n",
		[]string{"4:15: resources.max-memory: parse size \"512XB\": unknown unit \"XB\""}},
	{"bad buffer-limit", "description: d\nsteps:\n  - name: a\n    bash: echo\n    output:\n      buffer-limit: lots\n",
		[]string{"6:21: output.buffer-limit: parse size \"lots\""}},
	{"bad duration", "description: d\nbash: echo\ntimeout: 10 minutes\n",
		[]string{"3:10: timeout: parse duration \"10 minutes\""}},
	{"bad retry delay", "description: d\nsteps:\n  - name: a\n    bash: echo\n    error-handling:\n      retry:\n        attempts: 0\n        delay: soon\n",
		[]string{"7:19: retry.attempts must be at least 1", "8:16: retry.delay: parse duration \"soon\""}},
	{"zero timeout", "description: d\nbash: echo\ntimeout: 0\n",
		[]string{"3:10: timeout must be greater than zero"}},
	{"bad permission", "description: d\nbash: echo\nsecurity:\n  required-permissions:\n    - \"filesystem:exec:/bin\"\n    - \"network:localhost:http\"\n",
		[]string{"5:7: permission \"filesystem:exec:/bin\": unknown kind", "6:7: permission \"network:localhost:http\""}},
	{"undeclared parameter in permission", "description: d\nbash: echo\nsecurity:\n  required-permissions:\n    - \"filesystem:write:{OUT}\"\n",
		[]string{"5:25: permission refers to {OUT}, which is not a declared parameter"}},
	{"sensitive parameter not declared", "description: d\nbash: echo\nsecurity:\n  logging:\n    enabled: true\n    sensitive-parameters: [TOKEN]\n",
		[]string{"6:28: sensitive parameter TOKEN is not a declared parameter"}},
	{"test sets undeclared parameter", "description: d\nbash: echo\ntests:\n  - name: t1\n    parameters:\n      X: 1\n",
		[]string{"6:7: test at line 4 sets X, which is not a declared parameter"}},
	{"exposed-as bad function name", "description: d\nbash: echo\nsandboxed:\n  exposed-as:\n    name: a b\n",
		[]string{"5:11: sandboxed.exposed-as.name \"a b\" is not a function name"}},
	{"exposed-as undeclared parameter", "description: d\nbash: echo {A}\nparameters:\n  A: {type: boolean, description: a}\nsandboxed:\n  exposed-as:\n    parameters:\n      B: -B\n",
		[]string{"8:7: exposed-as names B, which is not a declared parameter"}},
	{"exposed-as two parameters one name", "description: d\nbash: echo {A} {B}\nparameters:\n  A: {description: a}\n  B: {description: b}\nsandboxed:\n  exposed-as:\n    parameters:\n      A: -x\n      B: -x\n",
		[]string{"10:10: parameters A and B are both exposed as \"-x\""}},
	{"exposed-as another parameter's name", "description: d\nbash: echo {A} {B}\nparameters:\n  A: {description: a}\n  B: {description: b}\nsandboxed:\n  exposed-as:\n    parameters:\n      A: B\n",
		[]string{"9:10: parameter A is exposed as \"B\", the name of parameter B"}},
	{"exposed-as control character", "description: d\nbash: echo {A}\nparameters:\n  A: {description: a}\nsandboxed:\n  exposed-as:\n    parameters:\n      A: \"a\\tb\"\n",
		[]string{"8:10: exposed parameter name \"a\\tb\" is not valid"}},
	{"test without name", "description: d\nbash: echo\ntests:\n  - expected:\n      exit-code: 0\n",
		[]string{"4:5: test case has no name"}},
	{"duplicate test name", "description: d\nbash: echo\ntests:\n  - name: t1\n  - name: t1\n",
		[]string{"5:11: duplicate test name t1"}},
	{"commands as a list", "description: d\ncommands:\n  - platforms: [linux]\n    bash: echo\n",
		[]string{"3:3: commands must be a mapping with default: and platforms:, got a list"}},
	{"commands unknown platform", "description: d\ncommands:\n  default: echo\n  platforms:\n    plan9: echo\n",
		[]string{"5:5: unknown key plan9 in commands.platforms"}},
	{"unknown platform", "description: d\nbash: echo\nplatforms: [linux, beos]\n",
		[]string{"3:20: unknown platform \"beos\""}},
	{"duplicate key", "description: d\nbash: echo\ndescription: e\n",
		[]string{"3:1: duplicate key description in the tool definition (hint: the first description is at line 1; keep one)"}},
	{"yaml syntax error", "description: d\nbash: echo a: b\n",
		[]string{"2:13: invalid YAML: mapping values are not allowed in this context"}},
	{"yaml alias", "description: &d hello\nbash: *d\n",
		[]string{"2:7: YAML alias *d is not supported"}},
	{"two documents", "description: d\nbash: echo\n---\ndescription: e\n",
		[]string{"3:1: file holds more than one YAML document"}},
	{"empty file", "\n\n", []string{"1:1: file is empty"}},
	{"not a mapping", "- a\n- b\n", []string{"1:1: a tool definition must be a mapping of keys, got a list"}},
	{"invalid tool name", "name: \"my tool\"\ndescription: d\nbash: echo\n",
		[]string{"1:7: tool name \"my tool\" is not valid"}},
	{"environment variables at the top of environment", "description: d\nbash: echo\nenvironment:\n  DEBUG: 1\n",
		[]string{"4:3: unknown key DEBUG in environment (hint: environment variables go under environment.variables"}},
	{"bad environment variable name", "description: d\nbash: echo\nenvironment:\n  variables:\n    1X: a\n",
		[]string{"5:5: \"1X\" is not an environment variable name"}},
	{"sandboxed section", "description: d\nbash: echo\nsandboxed:\n  pids-limit: 0\n  cpus: -1\n  tmpfs-size: big\n  network: on\n",
		[]string{"4:15: sandboxed.pids-limit must be at least 1", "5:9: sandboxed.cpus must be at least 0.01",
			"6:15: sandboxed.tmpfs-size: parse size \"big\"", "7:3: unknown key network in sandboxed"}},
	{"custom validation", "description: d\nbash: echo {A}\nparameters:\n  A:\n    description: a\n    validation:\n      custom: \"value.length > 2\"\n",
		[]string{"7:7: unknown key custom in parameter A validation (hint: not part of the format"}},
	{"output-matches regex", "description: d\nbash: echo\ntests:\n  - name: t\n    expected:\n      output-matches: \"(\"\n",
		[]string{"6:23: invalid regex in output-matches"}},
}

func TestParseRules(t *testing.T) {
	for _, c := range ruleCases {
		t.Run(c.name, func(t *testing.T) {
			parseErr(t, c.src, c.want...)
		})
	}
}

func TestParseReportsEveryError(t *testing.T) {
	src := "name: t\n" + // 1
		"descripton: d\n" + // 2 unknown key
		"bash: echo {X}\n" + // 3 undeclared
		"cmd: echo\n" + // 4 second exec key
		"timeout: forever\n" + // 5 bad duration
		"security:\n" + // 6
		"  isolation: vm\n" + // 7 bad enum
		"parameters:\n" + // 8
		"  A:\n" + // 9 no description
		"    type: number\n" + // 10
		"    default: x\n" // 11 bad default
	le := parseErr(t, src,
		"1:1: missing description",
		"2:1: unknown key descripton",
		"3:12: bash command refers to {X}",
		"4:1: cmd and bash (line 3) are both set",
		"5:10: timeout: parse duration",
		"7:14: unknown isolation \"vm\"",
		"9:3: parameter A has no description",
		"11:14: default of parameter A must be a number",
	)
	if len(le.Diags) != 8 {
		t.Errorf("got %d diagnostics, want 8:\n%v", len(le.Diags), le)
	}
	// Sorted by position.
	for i := 1; i < len(le.Diags); i++ {
		a, b := le.Diags[i-1].Pos, le.Diags[i].Pos
		if a.Line > b.Line || a.Line == b.Line && a.Col > b.Col {
			t.Errorf("diagnostics out of order: %v before %v", a, b)
		}
	}
}

func TestLoadErrorFormat(t *testing.T) {
	err := newLoadError("f.yaml", []Diagnostic{
		{Pos: Pos{File: "f.yaml", Line: 3, Col: 2}, Msg: "second"},
		{Pos: Pos{File: "f.yaml", Line: 1, Col: 5}, Msg: "first", Hint: "fix it"},
		{Pos: Pos{File: "f.yaml", Line: 1, Col: 5}, Msg: "first", Hint: "fix it"},
	})
	want := "f.yaml:1:5: first (hint: fix it)\nf.yaml:3:2: second"
	if err.Error() != want {
		t.Errorf("got %q, want %q", err.Error(), want)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Error("LoadError does not unwrap to ErrInvalid")
	}
	if newLoadError("f", nil) != nil {
		t.Error("no diagnostics must be no error")
	}
}

// Braces that are not references: shell, jq, awk, brace expansion, JSON.
func TestNotReferences(t *testing.T) {
	src := `description: d
bash: |
  echo "${HOME}" $USER {} { .x } {a,b}
  jq '{a: .b, c: .[0]}' | awk '{print $1}'
  echo '{"k": 1}' {value ? '' : '-i'} {1}
`
	def := parseOK(t, src)
	if def.Exec == nil || def.Exec.Kind != ExecBash {
		t.Fatalf("exec = %+v", def.Exec)
	}
}

func TestReferencesAllowed(t *testing.T) {
	src := `description: d
steps:
  - name: fetch
    bash: echo {URL} {TOOL_NAME} {WORKSPACE} {TEMP}
  - name: use
    bash: echo '{fetch.output}'
    run-condition: "{fetch.exit-code} == 0"
    error-handling:
      fallback: echo {use.error} {fetch.error}
  - name: early
    bash: echo {late.output}
    wait-for: [late]
  - name: late
    bash: echo
parameters:
  URL:
    description: u
    default: "{OTHER}/x"
  OTHER:
    description: o
    default: "{WORKSPACE}"
function-calling:
  schema-generation:
    description-template: "Tool {TOOL_NAME}: {DESCRIPTION}"
security:
  required-permissions:
    - "filesystem:read:{OTHER}"
    - "filesystem:write:{TEMP}/out"
`
	parseOK(t, src)
}

func TestScanRefs(t *testing.T) {
	got := scanRefs("a {B} ${C} {d.output} {e.exit-code} {f.g} {h i} {J-K_1}")
	want := []refSpan{
		{Off: 2, End: 5, Name: "B"},
		{Off: 11, End: 21, Name: "d", Prop: "output"},
		{Off: 22, End: 35, Name: "e", Prop: "exit-code"},
		{Off: 36, End: 41, Name: "f", Prop: "g"},
		{Off: 48, End: 55, Name: "J-K_1"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("ref %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParseDefaultsAndPositions(t *testing.T) {
	src := `description: d
steps:
  - name: a
    bash: echo {P}
parameters:
  P:
    description: p
    default: 3
security:
  required-permissions:
    - "env:HOME"
    - "network:external:example.com:443"
`
	def, err := Parse([]byte(src), "/x/my-tool.yml")
	if err != nil {
		t.Fatal(err)
	}
	if def.Name != "my-tool" {
		t.Errorf("name from file = %q, want my-tool", def.Name)
	}
	if def.Security.Isolation != IsolationProcess || def.Security.ExecutionPrivilege != PrivilegeSameAsUser {
		t.Errorf("security defaults = %+v", def.Security)
	}
	p := def.Parameters[0]
	if p.Type != TypeString || p.Default != "3" || !p.HasDefault || !p.Escapes() {
		t.Errorf("parameter = %+v", p)
	}
	want := map[string]Pos{"P": {File: "/x/my-tool.yml", Line: 6, Col: 3}}
	if def.Pos.Parameters["P"] != want["P"] {
		t.Errorf("param pos = %+v", def.Pos.Parameters)
	}
	if got := def.Pos.Steps["a"]; got.Line != 3 || got.Col != 5 {
		t.Errorf("step pos = %+v", got)
	}
	if len(def.Pos.Permissions) != 2 || def.Pos.Permissions[1].Line != 12 || def.Pos.Permissions[1].Col != 7 {
		t.Errorf("permission pos = %+v", def.Pos.Permissions)
	}
	if def.Pos.Name != (Pos{File: "/x/my-tool.yml", Line: 1, Col: 1}) {
		t.Errorf("name pos = %+v", def.Pos.Name)
	}
}

func TestParseShapes(t *testing.T) {
	src := `name: shapes
description: d
script: |
  print("hi {WHO}")
shell: python3
parameters:
  WHO:
    type: string
    description: w
    security:
      escape-shell: false
  N:
    type: number
    description: n
    default: 2.5
    validation:
      enum: [1, 2.5]
  ITEMS:
    type: array
    description: i
    default: [a, b]
    validation:
      minItems: 1
      uniqueItems: true
  CFG:
    type: object
    description: c
    default: {k: v}
    validation:
      required: [k]
      properties:
        k:
          type: string
          pattern: "^[a-z]+$"
resources:
  timeout: 5m
  max-memory: 1.5GB
  cleanup:
    - delete-temp-files: true
    - final-command: rm -rf {TEMP}/x
    - final-command: echo done
security:
  auditing:
    enabled: true
    retention-period: 30d
tests:
  setup: mkdir -p data
  cleanup: ["rm -rf data"]
  environment:
    CYCOD_TEST_MODE: true
  cases:
    - name: one
      parameters: {WHO: me}
      expected:
        exit-code: 0
        output-contains: hi
        output-not-contains: [error, fail]
        file-contains:
          data/a.txt: [x, y]
    - name: two
      expected:
        file-contains:
          - path: data/b.txt
            text: z
        error: false
sandboxed:
  image: sandboxed-runner:latest
  runtime: runsc
  pids-limit: 64
  cpus: 0.5
  tmpfs-size: 512m
`
	def := parseOK(t, src)
	if def.Exec.Kind != ExecScript || def.Exec.Shell != "python3" {
		t.Errorf("exec = %+v", def.Exec)
	}
	if e := def.Parameters[0].EscapeShell; e == nil || *e {
		t.Errorf("escape-shell = %v", e)
	}
	if def.Parameters[1].Default != 2.5 {
		t.Errorf("number default = %#v", def.Parameters[1].Default)
	}
	if r := def.Resources; r.Timeout != 5*time.Minute || r.MaxMemory != 3<<29 ||
		!r.Cleanup.DeleteTempFiles || len(r.Cleanup.FinalCommands) != 2 {
		t.Errorf("resources = %+v %+v", r, r.Cleanup)
	}
	if def.Security.Auditing.RetentionPeriod != 30*24*time.Hour {
		t.Errorf("retention = %v", def.Security.Auditing.RetentionPeriod)
	}
	ts := def.Tests
	if len(ts.Setup) != 1 || ts.Environment["CYCOD_TEST_MODE"] != "true" || len(ts.Cases) != 2 {
		t.Fatalf("tests = %+v", ts)
	}
	e := ts.Cases[0].Expected
	if *e.ExitCode != 0 || e.OutputContains[0] != "hi" || len(e.OutputNotContains) != 2 ||
		len(e.FileContains) != 2 || e.FileContains[1] != (FileContains{"data/a.txt", "y"}) {
		t.Errorf("expected = %+v", e)
	}
	if fc := ts.Cases[1].Expected.FileContains; len(fc) != 1 || fc[0] != (FileContains{"data/b.txt", "z"}) {
		t.Errorf("file-contains list = %+v", fc)
	}
	want := SandboxedExt{Image: "sandboxed-runner:latest", Runtime: "runsc", PidsLimit: 64, CPUs: 0.5, TmpfsSize: 512 << 20}
	if !reflect.DeepEqual(*def.Sandboxed, want) {
		t.Errorf("sandboxed = %+v", def.Sandboxed)
	}
	checkRoundTrip(t, "shapes", def)
}

func TestCompatAliases(t *testing.T) {
	def := parseOK(t, "description: d\npython: print(1)\n")
	if def.Exec.Kind != ExecScript || def.Exec.Shell != "python3" || def.Exec.Command != "print(1)" {
		t.Errorf("python alias = %+v", def.Exec)
	}
	def = parseOK(t, "description: d\ncommands:\n  default: ls\n  linux: ls -la\n  windows: dir\n")
	if def.Commands.Platforms["linux"] != "ls -la" || def.Commands.Platforms["windows"] != "dir" {
		t.Errorf("flat platform commands = %+v", def.Commands)
	}
	parseErr(t, "description: d\ncommands:\n  linux: a\n  platforms:\n    linux: b\n", "5:5: command for linux is given twice")
}

func TestParseCommentsOnly(t *testing.T) {
	parseErr(t, "# nothing here\n", "1:1: file holds only comments")
}

func TestTooManyErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString("description: d\nbash: echo")
	for i := 0; i < 150; i++ {
		b.WriteString(" {U" + strings.Repeat("x", i) + "}")
	}
	le := parseErr(t, b.String()+"\n")
	if len(le.Diags) != maxDiags+1 || !strings.HasPrefix(le.Diags[maxDiags].Msg, "too many errors") {
		t.Errorf("got %d diagnostics, last %+v", len(le.Diags), le.Diags[len(le.Diags)-1])
	}
}

// YAML integers are milliseconds for every duration key.
func TestYAMLDurationsAreMilliseconds(t *testing.T) {
	def := parseOK(t, `description: d
steps:
  - name: a
    bash: echo
    timeout: 1500
    error-handling:
      retry:
        attempts: 2
        delay: 250
timeout: 10000
resources:
  timeout: "2m"
interactive-options:
  timeout: 30000
  default-response: y
`)
	if def.Timeout != 10*time.Second || def.Resources.Timeout != 2*time.Minute ||
		def.InteractiveOptions.Timeout != 30*time.Second || def.Steps[0].Timeout != 1500*time.Millisecond ||
		def.Steps[0].ErrorHandling.Retry.Delay != 250*time.Millisecond {
		t.Errorf("durations: %v %v %v %v %v", def.Timeout, def.Resources.Timeout, def.InteractiveOptions.Timeout,
			def.Steps[0].Timeout, def.Steps[0].ErrorHandling.Retry.Delay)
	}
}
