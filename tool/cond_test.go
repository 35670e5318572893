package tool

import (
	"errors"
	"testing"
)

func TestConditionEval(t *testing.T) {
	vals := map[string]string{
		"build.exit-code": "0",
		"test.exit-code":  "3",
		"build.output":    `x == x" || "1`,
		"NAME":            "Ada",
		"EMPTY":           "",
		"paren.output":    ") || (1",
	}
	lookup := func(r string) string { return vals[r] }
	tests := []struct {
		cond string
		want bool
	}{
		{"{build.exit-code} == 0", true},
		{"{build.exit-code} != 0", false},
		{"{test.exit-code} == 0", false},
		{"{test.exit-code} > 2 && {test.exit-code} <= 3", true},
		{"{test.exit-code} >= 4 || {build.exit-code} == 0", true},
		{"!({build.exit-code} == 0)", false},
		{"! {test.exit-code} == 0", true},
		{"{NAME} == \"Ada\"", true},
		{"{NAME} == 'Ada'", true},
		{"\"{NAME}\" == \"Ada\"", true},
		{"\"x{NAME}y\" == xAday", true},
		{"{NAME} < \"Bob\"", true},
		{"10 > 9", true},     // numbers compare as numbers
		{"\"10\" > 9", true}, // quoted numbers too
		{"abc < abd", true},
		{"{EMPTY}", false},
		{"{NAME}", true},
		{"{missing.exit-code} == 0", false}, // a step that did not run
		{"{missing.exit-code} != 0", true},
		{"true", true},
		{"false", false},
		{"0", false},
		{"!false", true},
		// Values never change the expression.
		{"{build.output} == x", false},
		{"{build.output} == \"x == x\\\" || \\\"1\"", true},
		{"{paren.output}", true},
		{"({paren.output} == 1)", false},
		{"(1 == 1) == true", true},
		{"((({build.exit-code} == 0)))", true},
		{"{build.exit-code} == 0 && ({test.exit-code} == 3 || false)", true},
	}
	for _, tt := range tests {
		c, err := ParseCondition(tt.cond)
		if err != nil {
			t.Errorf("%s: %v", tt.cond, err)
			continue
		}
		if got := c.Eval(lookup); got != tt.want {
			t.Errorf("%s = %v, want %v", tt.cond, got, tt.want)
		}
	}
}

func TestConditionErrors(t *testing.T) {
	for _, cond := range []string{
		"", "   ", "==", "{a.exit-code} ==", "1 == 2 == 3", "(1 == 1", "1 == 1)", "a & b", "a | b",
		"a = b", "\"open", "&& 1", "1 &&", "!", "()", "1 2",
	} {
		if _, err := ParseCondition(cond); !errors.Is(err, ErrCondition) {
			t.Errorf("%q: err %v, want ErrCondition", cond, err)
		}
	}
}

func TestConditionRefs(t *testing.T) {
	c, err := ParseCondition(`{a.exit-code} == 0 && "{B}" != {a.exit-code}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Refs(); len(got) != 2 || got[0] != "a.exit-code" || got[1] != "B" {
		t.Errorf("refs %v", got)
	}
}

func TestBoundStepEvalCondition(t *testing.T) {
	d := &Definition{Name: "t", Description: "d",
		Parameters: []Parameter{{Name: "MODE", Type: TypeString, Default: `fast" || "1`, HasDefault: true}},
		Steps: []Step{
			{Name: "build", Exec: &Exec{Kind: ExecBash, Command: "true"}},
			{Name: "test", Exec: &Exec{Kind: ExecBash, Command: "true"}, RunCondition: `{build.exit-code} == 0 && {MODE} != fast`},
		}}
	b, err := Bind(d, Input{}, BindEnv{Workspace: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	s := &b.Steps[1]
	if refs := s.ConditionRefs(); len(refs) != 1 || refs[0] != "build" {
		t.Errorf("refs %v", refs)
	}
	ok, err := s.EvalCondition(map[string]StepOutput{"build": {ExitCode: 0}})
	if err != nil || !ok {
		t.Errorf("got %v %v, want true (a parameter's quotes are its value)", ok, err)
	}
	ok, _ = s.EvalCondition(map[string]StepOutput{"build": {ExitCode: 1}})
	if ok {
		t.Error("build failed: want false")
	}
	ok, _ = s.EvalCondition(map[string]StepOutput{})
	if ok {
		t.Error("build did not run: want false")
	}
	if ok, err := b.Steps[0].EvalCondition(nil); !ok || err != nil {
		t.Errorf("no condition: %v %v", ok, err)
	}
}

func FuzzCondition(f *testing.F) {
	for _, s := range []string{"{a.exit-code} == 0", "!(x || y) && 'q' <= \"r\"", "((((", "\"\\", "{x}{y}z == 1"} {
		f.Add(s, "val")
	}
	f.Fuzz(func(t *testing.T, cond, val string) {
		c, err := ParseCondition(cond)
		if err != nil {
			return
		}
		c.Eval(func(string) string { return val })
	})
}
