package tool

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTransformSpecExamples(t *testing.T) {
	cases := []struct {
		expr  string
		value any
		want  string
	}{
		{"value.toLowerCase()", "JohnDoe", "johndoe"},
		{"value.toUpperCase()", "abc", "ABC"},
		{"value.trim()", "  x  ", "x"},
		{`value.replace(/\s+/g, '-')`, "a  b c", "a-b-c"},
		{"value ? '' : '-i'", false, "-i"},
		{"value ? '' : '-i'", true, ""},
		{"value ? '-w' : ''", true, "-w"},
		{"value ? '-v' : ''", false, ""},
		{"value === 'auto' ? '' : '--format=' + value", "auto", ""},
		{"value === 'auto' ? '' : '--format=' + value", "json", "--format=json"},
		{"Math.max(1, Math.min(100, Math.floor(value)))", 10.0, "10"},
		{"Math.max(1, Math.min(100, Math.floor(value)))", 250.7, "100"},
		{"Math.max(1, Math.min(100, Math.floor(value)))", -3.0, "1"},
		{"Math.floor(value)", 2.9, "2"},
		{"Math.max(0, value)", -1.0, "0"},
		{"value * 1024", 1.5, "1536"},
		{"Number(value)", "42", "42"},
		{"String(value)", 3.0, "3"},
		{"Boolean(value)", "", "false"},
		{"value / 4", 1.0, "0.25"},
		{"null", "x", ""},
		{"undefined", "x", ""},
		{"value.map(function (x) { return x * 2 })", []any{1.0, 2.0}, "[2,4]"},
		{"({a: value})", "b", `{"a":"b"}`},
		{"value.k + '!' // comment", map[string]any{"k": "v"}, "v!"},
		{"typeof require + typeof console + typeof process + typeof ArrayBuffer", "", "undefinedundefinedundefinedundefined"},
	}
	for _, c := range cases {
		// A generous limit: these cases test results, not limits, and the
		// machine may be busy.
		got, err := EvalTransform(c.expr, c.value, TransformLimits{Timeout: 10 * time.Second})
		if err != nil {
			t.Errorf("%s (%v): %v", c.expr, c.value, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s (%v): got %q want %q", c.expr, c.value, got, c.want)
		}
	}
}

// TestTransformLimits: transforms that loop forever or allocate without
// bound are stopped within the limit with a clear error.
func TestTransformLimits(t *testing.T) {
	cases := []struct {
		name, expr, want string
	}{
		{"infinite loop", "(function () { while (true) {} })()", "exceeded 250ms"},
		{"doubling string", "(function () { var s = 'x'; while (true) s += s; })()", "exceeded"},
		{"huge fill", "new Array(1e9).fill(1)", "size limit"},
		{"huge repeat", "'x'.repeat(1e9)", "size limit"},
		{"amplifying join", "new Array(1e6).join('x'.repeat(1e6))", "size limit"},
		{"amplifying replace", "'x'.repeat(1e6).replace(/x/g, '$`')", "size limit"},
		{"map over sparse", "new Array(1e9).map(function (x) { return x })", "size limit"},
		{"typed array", "new Uint8Array(1e10)", "not defined"},
		{"recursion", "(function f() { return f() + 1 })()", "call stack"},
		{"backtracking regexp", `/(a+)+\1b/.test('a'.repeat(40) + 'c')`, ""},
		{"result too large", "'x'.repeat(2e6)", "more than the limit"},
		{"syntax error", "value.", "SyntaxError"},
		{"reference error", "lowercase", "not defined"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lim := TransformLimits{}
			if !strings.Contains(c.want, "exceeded") {
				// Let the guard under test fire, even on a busy machine,
				// before the time limit does.
				lim.Timeout = 5 * time.Second
			}
			start := time.Now()
			got, err := EvalTransform(c.expr, "v", lim)
			elapsed := time.Since(start)
			if c.name == "backtracking regexp" && err == nil {
				// regexp2's match timeout ends the match as "no match".
				if got != "false" {
					t.Errorf("got %q", got)
				}
			} else if !errors.Is(err, ErrTransform) {
				t.Fatalf("want ErrTransform, got %q, %v", got, err)
			} else if !strings.Contains(err.Error(), c.want) &&
				!(c.want == "size limit" && strings.Contains(err.Error(), "memory limit")) {
				// Which of the two guards fires first depends on the
				// machine's load; either stops the transform.
				t.Errorf("error %q does not say %q", err, c.want)
			}
			// Not a timing assertion: a generous bound that proves the
			// transform was stopped rather than left to run (a huge native
			// copy in flight can delay the stop past the limit).
			if elapsed > 10*time.Second {
				t.Errorf("took %v", elapsed)
			}
		})
	}
}

func TestTransformInBind(t *testing.T) {
	d := &Definition{
		Name: "t", Description: "d",
		Exec: &Exec{Kind: ExecBash, Command: "grep {CASE_SENSITIVE} {WHOLE_WORD} {LIMIT} {USER}"},
		Parameters: []Parameter{
			{Name: "CASE_SENSITIVE", Type: TypeBoolean, Default: false, HasDefault: true, Transform: "value ? '' : '-i'"},
			{Name: "WHOLE_WORD", Type: TypeBoolean, Default: false, HasDefault: true, Transform: "value ? '-w' : ''"},
			{Name: "LIMIT", Type: TypeNumber, Default: 10, HasDefault: true,
				Transform: "Math.max(1, Math.min(100, Math.floor(value)))", Format: "--limit={value}"},
			{Name: "USER", Type: TypeString, Transform: "value.toLowerCase()", Format: "--user={value}"},
		},
	}
	relaxed := BindEnv{Transform: TransformLimits{Timeout: 10 * time.Second}}
	b, err := Bind(d, Input{"LIMIT": "250.5"}, relaxed)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b.Steps[0].Command, "grep '-i'  '--limit=100' "; got != want {
		t.Errorf("got %q want %q", got, want)
	}
	b, err = Bind(d, Input{"CASE_SENSITIVE": "yes", "WHOLE_WORD": "1", "USER": "Bob"}, relaxed)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b.Steps[0].Command, "grep  '-w' '--limit=10' '--user=bob'"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
	p, _ := b.Param("LIMIT")
	if p.Value != 10.0 || p.Text != "--limit=10" || p.Source != SourceDefault {
		t.Errorf("LIMIT: %+v", p)
	}

	d.Parameters[3].Transform = "(function () { for (;;) {} })()"
	_, err = Bind(d, Input{"USER": "x"}, BindEnv{})
	if !errors.Is(err, ErrTransform) || !strings.Contains(err.Error(), "transform of USER: exceeded 250ms") {
		t.Errorf("want 'transform of USER: exceeded 250ms', got %v", err)
	}
}
