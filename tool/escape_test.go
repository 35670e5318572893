package tool

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// injectionPayloads are values an attacker (or a confused model) might send.
var injectionPayloads = []string{
	"plain",
	"$(id)",
	"`id`",
	"; id",
	"| id",
	"&& id",
	"|| id &",
	"a\nid\nb",
	"line\r\nbreak",
	"it's",
	`say "hi"`,
	`'`,
	`"`,
	`''`,
	`\`,
	`\\`,
	`\'`,
	`'\''`,
	`a\nb`,
	"*",
	"[a-z]*?",
	"~",
	"~root",
	"~/x",
	"$HOME",
	"${HOME}",
	"$'\\x41'",
	"-rf",
	"--help",
	" leading and trailing ",
	"a  b\tc",
	"!",
	"!!",
	"#not a comment",
	"{X}",
	"{a.output}",
	"%s%n",
	"héllo ‘quoted’ “double” \u2028",
	"EOF",
	"<<EOF",
	"$((1+1))",
	")",
	"esac",
	"\x01\x7f",
}

// bindCmd binds a one-parameter tool whose command is cmd.
func bindCmd(t *testing.T, kind ExecKind, shell, cmd string, value any) (*Bound, error) {
	t.Helper()
	d := &Definition{
		Name: "t", Description: "test",
		Exec:       &Exec{Kind: kind, Command: cmd, Shell: shell},
		Parameters: []Parameter{{Name: "X", Type: TypeString, Description: "x"}},
	}
	in := Input{}
	if value != nil {
		in["X"] = value
	}
	return Bind(d, in, BindEnv{Workspace: "/w"})
}

// runWords runs argv and splits its stdout on NUL: the words printf got.
func runWords(t *testing.T, argv []string) []string {
	t.Helper()
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		var ee *exec.ExitError
		msg := ""
		if errors.As(err, &ee) {
			msg = string(ee.Stderr)
		}
		t.Fatalf("run %q: %v %s", argv, err, msg)
	}
	s := string(out)
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\x00"), "\x00")
}

func equalWords(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestInjectionRealShell proves, by running bash and dash, that every
// payload placed bare, inside '...', inside "..." (and $'...' for bash)
// comes out as exactly one literal word equal to the input.
func TestInjectionRealShell(t *testing.T) {
	type ctxCase struct {
		name string
		kind ExecKind
		sh   string
		tmpl string
		want func(v string) []string
	}
	one := func(pre, post string) func(string) []string {
		return func(v string) []string { return []string{pre + v + post} }
	}
	bareWant := func(v string) []string {
		if v == "" {
			return []string{"A", "Z"}
		}
		return []string{"A", v, "Z"}
	}
	ctxs := []ctxCase{
		{"bash bare", ExecBash, "", `printf '%s\0' A {X} Z`, bareWant},
		{"bash bare in word", ExecBash, "", `printf '%s\0' pre{X}post`, one("pre", "post")},
		{"bash single", ExecBash, "", `printf '%s\0' 'a {X} b'`, one("a ", " b")},
		{"bash double", ExecBash, "", `printf '%s\0' "a {X} b"`, one("a ", " b")},
		{"bash dollar-single", ExecBash, "", `printf '%s\0' $'a {X} b'`, one("a ", " b")},
		{"bash double with $()", ExecBash, "", `printf '%s\0' "$(printf '%s' "<{X}>")"`, one("<", ">")},
		{"bash bare in $()", ExecBash, "", `printf '%s\0' "$(printf '%s' {X}/)"`, one("", "/")},
		{"bash after comment", ExecBash, "", "printf '%s\\0' a # {X}\nprintf '%s\\0' A {X} Z", func(v string) []string {
			return append([]string{"a"}, bareWant(v)...)
		}},
		{"bash after escaped blank", ExecBash, "", `printf '%s\0' A\ #{X} Z`, func(v string) []string {
			return []string{"A #" + v, "Z"}
		}},
		{"bash case in $()", ExecBash, "", `printf '%s\0' "$(case x in x) printf '%s' {X}. ;; esac)"`, one("", ".")},
		{"sh bare", ExecScript, "", `printf '%s\0' A {X} Z`, bareWant},
		{"sh single", ExecScript, "sh", `printf '%s\0' 'a{X}b'`, one("a", "b")},
		{"sh double", ExecScript, "", `printf '%s\0' "a{X}b"`, one("a", "b")},
		{"sh dollar then single", ExecScript, "", `printf '%s\0' $'a{X}b'`, one("$a", "b")},
		{"script bash", ExecScript, "bash", `printf '%s\0' A {X} Z "{X}" '{X}'`, func(v string) []string {
			return append(bareWant(v), v, v)
		}},
	}
	for _, c := range ctxs {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range append(injectionPayloads, "") {
				b, err := bindCmd(t, c.kind, c.sh, c.tmpl, v)
				if err != nil {
					t.Fatalf("bind %q: %v", v, err)
				}
				got := runWords(t, b.Steps[0].Argv)
				if want := c.want(v); !equalWords(got, want) {
					t.Errorf("value %q\nscript: %s\ngot  %q\nwant %q", v, b.Steps[0].Command, got, want)
				}
			}
		})
	}
}

func TestHeredoc(t *testing.T) {
	for _, quoted := range []bool{false, true} {
		delim := "EOF"
		if quoted {
			delim = "'EOF'"
		}
		tmpl := "cat <<" + delim + "\n[{X}]\nEOF\nprintf after"
		for _, v := range injectionPayloads {
			b, err := bindCmd(t, ExecBash, "", tmpl, v)
			if strings.ContainsAny(v, "\r\n") {
				if !errors.Is(err, ErrUnsafeValue) {
					t.Errorf("quoted=%v %q: want ErrUnsafeValue, got %v", quoted, v, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("bind %q: %v", v, err)
			}
			out, err := exec.Command(b.Steps[0].Argv[0], b.Steps[0].Argv[1:]...).Output()
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if want := "[" + v + "]\nafter"; string(out) != want {
				t.Errorf("quoted=%v value %q: got %q want %q", quoted, v, out, want)
			}
		}
	}
	// A value that would make its line equal the delimiter is refused.
	_, err := bindCmd(t, ExecBash, "", "cat <<EOF\n{X}\nEOF\n", "EOF")
	if !errors.Is(err, ErrUnsafeValue) {
		t.Errorf("delimiter line: want ErrUnsafeValue, got %v", err)
	}
	// bash joins backslash-newlines before it compares a line with the
	// delimiter: a value completing "E\<newline>OF" is refused too.
	for _, c := range []struct{ tmpl, v string }{
		{"cat <<EOF\n{X}\\\nOF\necho INJECTED\nEOF\n", "E"},
		{"cat <<EOF\nE\\\n{X}\necho INJECTED\nEOF\n", "OF"},
		{"cat <<EOF\n\\\n{X}\necho INJECTED\nEOF\n", "EOF"},
	} {
		if _, err := bindCmd(t, ExecBash, "", c.tmpl, c.v); !errors.Is(err, ErrUnsafeValue) {
			t.Errorf("%q with %q: want ErrUnsafeValue, got %v", c.tmpl, c.v, err)
		}
		b, err := bindCmd(t, ExecBash, "", c.tmpl, "x")
		if err != nil {
			t.Fatal(err)
		}
		out, _ := exec.Command(b.Steps[0].Argv[0], b.Steps[0].Argv[1:]...).CombinedOutput()
		if strings.Contains(string(out), "INJECTED\n") && !strings.Contains(string(out), "echo INJECTED") {
			t.Errorf("%q: here-document ended early: %q", c.tmpl, out)
		}
	}
	_, err = bindCmd(t, ExecBash, "", "cat <<-EOF\n\tE{X}\nEOF\n", "OF")
	if !errors.Is(err, ErrUnsafeValue) {
		t.Errorf("tab-stripped delimiter line: want ErrUnsafeValue, got %v", err)
	}
}

func TestUnsafeContexts(t *testing.T) {
	cases := []struct {
		name, tmpl, value string
		want              error
	}{
		{"NUL bare", `echo {X}`, "a\x00b", ErrUnsafeValue},
		{"NUL single", `echo '{X}'`, "a\x00b", ErrUnsafeValue},
		{"backticks", "echo `echo {X}`", "x", ErrUnsafeContext},
		{"brace expansion", `echo ${HOME:-{X}}`, "x", ErrUnsafeContext},
		{"arith non-integer", `echo $(( {X} + 1 ))`, "1; id", ErrUnsafeValue},
		{"arith command", `(( {X} > 1 )) && echo y`, "a[$(id)]", ErrUnsafeValue},
		{"old arith", `echo $[ {X} + 1 ]`, "a[$(id)]", ErrUnsafeValue},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := bindCmd(t, ExecBash, "", c.tmpl, c.value)
			if !errors.Is(err, c.want) {
				t.Fatalf("want %v, got %v", c.want, err)
			}
		})
	}
	b, err := bindCmd(t, ExecBash, "", `echo $(( {X} + 1 ))`, "41")
	if err != nil {
		t.Fatal(err)
	}
	if got := runWords(t, []string{"/bin/bash", "-c", strings.Replace(b.Steps[0].Argv[2], "echo", "printf '%s\\0'", 1)}); !equalWords(got, []string{"42"}) {
		t.Errorf("arith: got %q", got)
	}
}

func TestNotSubstituted(t *testing.T) {
	cases := []struct{ tmpl, want string }{
		{`echo ${X} $X`, `echo ${X} $X`},
		{`jq '{a: .b}' | awk '{print $1}'`, `jq '{a: .b}' | awk '{print $1}'`},
		{`echo {UNKNOWN} {X}`, `echo {UNKNOWN} 'v'`},
		{`echo {TOOL_NAME} {WORKSPACE}`, `echo 't' '/w'`},
		{`echo {nostep.output}`, `echo {nostep.output}`},
	}
	for _, c := range cases {
		b, err := bindCmd(t, ExecBash, "", c.tmpl, "v")
		if err != nil {
			t.Fatal(err)
		}
		if b.Steps[0].Command != c.want {
			t.Errorf("%s: got %s want %s", c.tmpl, b.Steps[0].Command, c.want)
		}
	}
}

func TestEscapeShellFalse(t *testing.T) {
	d := &Definition{
		Name: "t", Description: "d", Exec: &Exec{Kind: ExecBash, Command: "ls {FLAGS} {DIR}"},
		Parameters: []Parameter{
			{Name: "FLAGS", Type: TypeString, EscapeShell: new(bool)},
			{Name: "DIR", Type: TypeString},
		},
	}
	b, err := Bind(d, Input{"FLAGS": "-l -a", "DIR": "my dir"}, BindEnv{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b.Steps[0].Command, `ls -l -a 'my dir'`; got != want {
		t.Errorf("got %s want %s", got, want)
	}
	if _, err := Bind(d, Input{"FLAGS": "a\x00"}, BindEnv{}); !errors.Is(err, ErrUnsafeValue) {
		t.Errorf("NUL with escape off: want ErrUnsafeValue, got %v", err)
	}
}

func TestRunArgv(t *testing.T) {
	cases := []struct {
		tmpl  string
		value string
		want  []string
	}{
		{`printf %s\0 {X}`, "a b; $(id)", []string{"printf", `%s0`, "a b; $(id)"}},
		{`printf '%s\0' {X}`, "", []string{"printf", `%s\0`}},
		{`printf '%s\0' "{X}"`, "", []string{"printf", `%s\0`, ""}},
		{`echo pre{X}post 'it''s' "q\"x\\y$"`, "'\"", []string{"echo", `pre'"post`, "its", `q"x\y$`}},
		{"echo   a\tb\n{X}", "x\ny", []string{"echo", "a", "b", "x\ny"}},
	}
	for _, c := range cases {
		b, err := bindCmd(t, ExecRun, "", c.tmpl, c.value)
		if err != nil {
			t.Fatal(err)
		}
		if !equalWords(b.Steps[0].Argv, c.want) {
			t.Errorf("%q with %q: got %q want %q", c.tmpl, c.value, b.Steps[0].Argv, c.want)
		}
	}
	// Real execution: each payload is exactly one argument.
	for _, v := range injectionPayloads {
		b, err := bindCmd(t, ExecRun, "", `printf %s\0 {X}`, v)
		if err != nil {
			t.Fatal(err)
		}
		argv := b.Steps[0].Argv
		argv[1] = "%s\\0"
		if got := runWords(t, argv); !equalWords(got, []string{v}) {
			t.Errorf("run %q: got %q", v, got)
		}
	}
	if _, err := bindCmd(t, ExecRun, "", `echo {X}`, "a\x00"); !errors.Is(err, ErrUnsafeValue) {
		t.Errorf("NUL in run: want ErrUnsafeValue, got %v", err)
	}
}

func TestPwshEscaping(t *testing.T) {
	cases := []struct{ tmpl, value, want string }{
		{`Write-Output {X}`, "it's $(x) `n", "Write-Output 'it''s $(x) `n'"},
		{`Write-Output '{X}'`, "a‘b’c", "Write-Output 'a‘‘b’’c'"},
		{`Write-Output "{X}"`, "$env:HOME `\"“", "Write-Output \"`$env:HOME ```\"`“\""},
		{`Write-Output {X} # {X}`, "a\nb", "Write-Output 'a\nb' # a b"},
		{`Write-Output "$(Join-Path {X} a) {X}"`, "x'", `Write-Output "$(Join-Path 'x''' a) x'"`},
	}
	for _, c := range cases {
		b, err := bindCmd(t, ExecPwsh, "", c.tmpl, c.value)
		if err != nil {
			t.Fatal(err)
		}
		if b.Steps[0].Command != c.want {
			t.Errorf("%s with %q:\ngot  %s\nwant %s", c.tmpl, c.value, b.Steps[0].Command, c.want)
		}
		if b.Steps[0].Argv[0] != "pwsh" {
			t.Errorf("argv: %q", b.Steps[0].Argv)
		}
	}
	if _, err := bindCmd(t, ExecPwsh, "", "Write-Output @{X}", "\nx"); !errors.Is(err, ErrUnsafeContext) {
		t.Errorf("after @: want ErrUnsafeContext, got %v", err)
	}
	if _, err := bindCmd(t, ExecPwsh, "", "$s = @'\n{X}\n'@", "x"); !errors.Is(err, ErrUnsafeContext) {
		t.Errorf("here-string: want ErrUnsafeContext, got %v", err)
	}
}

// TestVariableNameBoundary: a value right after $NAME never extends the
// variable's name.
func TestVariableNameBoundary(t *testing.T) {
	for _, v := range []string{"bc", "_x", "9", "-x", "a b"} {
		b, err := bindCmd(t, ExecBash, "", `A=1; printf '%s\0' "$A{X}" "\$A{X}" "$1{X}" $A{X}`, v)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"1" + v, "$A" + v, v, "1" + v}
		if got := runWords(t, b.Steps[0].Argv); !equalWords(got, want) {
			t.Errorf("value %q: script %s: got %q want %q", v, b.Steps[0].Command, got, want)
		}
	}
	if _, err := bindCmd(t, ExecBash, "", "cat <<EOF\n$A{X}\nEOF", "bc"); !errors.Is(err, ErrUnsafeValue) {
		t.Errorf("here-document: want ErrUnsafeValue, got %v", err)
	}
	if _, err := bindCmd(t, ExecBash, "", "cat <<EOF\n$A{X}\nEOF", "-bc"); err != nil {
		t.Errorf("here-document, no merge: %v", err)
	}
	if _, err := bindCmd(t, ExecBash, "", "echo $(( A{X} ))", "12"); !errors.Is(err, ErrUnsafeValue) {
		t.Errorf("arithmetic: want ErrUnsafeValue, got %v", err)
	}
	b, err := bindCmd(t, ExecPwsh, "", `Write-Output "$A{X}"`, ":x")
	if err != nil || b.Steps[0].Command != `Write-Output "$A$():x"` {
		t.Errorf("pwsh: %v %q", err, b.Steps[0].Command)
	}
}

// TestTestArithmetic: inside [[ ]] a quoted a[$(cmd)] would still run cmd
// through arithmetic evaluation; such values are refused, and the refusal
// is shown to be needed by running bash.
func TestTestArithmetic(t *testing.T) {
	tmpl := `if [[ {X} -eq 1 ]]; then echo one; fi`
	out, _ := exec.Command("/bin/bash", "-c", `x='a[$(echo INJECTED >&2)]'; [[ $x -eq 1 ]]`).CombinedOutput()
	if !strings.Contains(string(out), "INJECTED") {
		t.Logf("this bash does not evaluate subscripts in [[ -eq ]]: %q", out)
	}
	for _, v := range []string{"a[$(id)]", "x[`id`]", "a[ $HOME ]"} {
		if _, err := bindCmd(t, ExecBash, "", tmpl, v); !errors.Is(err, ErrUnsafeValue) {
			t.Errorf("%q: want ErrUnsafeValue, got %v", v, err)
		}
	}
	for _, v := range []string{"1", "[x]", "$HOME", "a[1]"} {
		if _, err := bindCmd(t, ExecBash, "", tmpl, v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	// Outside [[ ]] the same value is just a literal word.
	if _, err := bindCmd(t, ExecBash, "", `[[ -n x ]] && echo {X}`, "a[$(id)]"); err != nil {
		t.Errorf("after ]]: %v", err)
	}
}

// TestDollarSingleOpenEscape: an escape left open before the value in
// $'...' never takes the value's characters.
func TestDollarSingleOpenEscape(t *testing.T) {
	for _, pre := range []string{`\x4`, `\u00`, `\U0000004`, `\cA`, `\1`, `\\`, `\\x4`} {
		tmpl := `printf '%s\0' $'` + pre + `{X}'`
		want, err := exec.Command("/bin/bash", "-c", `printf '%s' $'`+pre+`'`).Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"1", "41", "ff", "x"} {
			b, err := bindCmd(t, ExecBash, "", tmpl, v)
			if err != nil {
				t.Fatal(err)
			}
			if got := runWords(t, b.Steps[0].Argv); !equalWords(got, []string{string(want) + v}) {
				t.Errorf("%s with %q: script %s: got %q want %q", tmpl, v, b.Steps[0].Command, got, string(want)+v)
			}
		}
	}
}
