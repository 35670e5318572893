package tool

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestTypedValue(t *testing.T) {
	for _, tc := range []struct {
		typ  ParamType
		in   string
		want any
		bad  bool
	}{
		{TypeString, "3", "3", false},
		{TypeNumber, "3", 3.0, false},
		{TypeNumber, "{OTHER}", "{OTHER}", false},
		{TypeNumber, "three", nil, true},
		{TypeBoolean, "true", true, false},
		{TypeBoolean, "maybe", nil, true},
		{TypeArray, `["a", "b"]`, []any{"a", "b"}, false},
		{TypeArray, "{LIST}", "{LIST}", false},
		{TypeArray, "a", nil, true},
		{TypeObject, `{"k": 1}`, map[string]any{"k": 1}, false},
		{TypeObject, "[1]", nil, true},
	} {
		got, err := typedValue(tc.typ, tc.in)
		if (err != nil) != tc.bad || !tc.bad && fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("typedValue(%s, %q) = %#v, %v; want %#v (error %v)", tc.typ, tc.in, got, err, tc.want, tc.bad)
		}
	}
}

// ParseAddArgs builds the model itself; the CLI only writes it. Malformed
// arguments match ErrBadArgs, and help is ErrAddHelp.
func TestParseAddArgs(t *testing.T) {
	req, err := ParseAddArgs([]string{"greet", "--description", "say hi", "--bash", "echo hi {WHO}",
		"--parameter", "WHO", "who to greet", "default=world", "--timeout", "5s", "--scope", "user", "--dry-run"})
	if err != nil {
		t.Fatal(err)
	}
	d := req.Def
	if d.Name != "greet" || d.Exec == nil || d.Exec.Command != "echo hi {WHO}" || len(d.Parameters) != 1 ||
		d.Parameters[0].Default != "world" || d.Timeout.String() != "5s" || req.Scope != "user" || !req.DryRun || req.Overwrite {
		t.Errorf("request = %+v, def = %+v", req, d)
	}
	if _, err := ParseAddArgs([]string{"x", "--description", "d", "--nope"}); !errors.Is(err, ErrBadArgs) {
		t.Errorf("unknown flag: %v, want ErrBadArgs", err)
	}
	if _, err := ParseAddArgs([]string{"--help"}); !errors.Is(err, ErrAddHelp) {
		t.Errorf("--help: %v, want ErrAddHelp", err)
	}
	if len(AddFlags()) < 60 {
		t.Errorf("AddFlags lists %d flags", len(AddFlags()))
	}
}

// TestAddCommandKinds: tool add takes every command kind the loader does,
// and a --parameter without a description says so where the options are.
func TestAddCommandKinds(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--python", "print('{X}')"}, "script: print('{X}')\nshell: python3\n"},
		{[]string{"--commands", "default=echo {X}", "--commands", "windows=echo %X%"}, "commands:\n  default: echo {X}\n  platforms:\n    windows: echo %X%\n"},
		{[]string{"--step", "s", "--python", "print(1)"}, "    script: print(1)\n    shell: python3\n"},
	} {
		args := append([]string{"t", "--description", "d", "--parameter", "X", "x"}, tc.args...)
		req, err := ParseAddArgs(args)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		out, err := Marshal(req.Def, "yaml")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(out, "t.yaml"); err != nil {
			t.Errorf("%v: does not load: %v\n%s", tc.args, err, out)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: got\n%s\nwant %q", tc.args, out, tc.want)
		}
	}
	_, err := ParseAddArgs([]string{"t", "--description", "d", "--bash", "echo {X}", "--parameter", "X", "type=number", "required=true"})
	if !errors.Is(err, ErrBadArgs) || !strings.Contains(err.Error(), `--parameter X needs a description before its options: --parameter X "what the value means" type=number required=true`) {
		t.Errorf("missing description: %v", err)
	}
	if _, err := ParseAddArgs([]string{"t", "--description", "d", "--bash", "x", "--commands", "default=y"}); !errors.Is(err, ErrBadArgs) {
		t.Errorf("two commands: %v", err)
	}
}
