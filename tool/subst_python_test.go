package tool

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

// pyPayloads are values that would break out of a naive substitution.
var pyPayloads = []string{
	"", "plain", "it's", `say "hi"`, `back\slash`, `trailing\`, "two\nlines", "cr\rlf\r\n",
	"'''", `"""`, `\'`, `\"`, `');import os;os.system('id');('`, `"+__import__('os').system('id')+"`,
	"tab\tand\x01ctl\x7f", "ünïcødé ✓ \u2028 \u0085", "{X}", "{FILE_PATH}", `\N{BULLET}`, `\x41\u0041`,
	"# not a comment", "a\\\nb",
}

// pyContexts render a value in each quoting of a Python program that
// writes it back unchanged to stdout (bytes, for a bytes literal).
var pyContexts = []struct {
	name, tmpl string
}{
	{"single", "import sys; sys.stdout.write('{V}')"},
	{"double", `import sys; sys.stdout.write("{V}")`},
	{"triple single", "import sys; sys.stdout.write('''{V}''')"},
	{"triple double", `import sys; sys.stdout.write("""{V}""")`},
	{"unicode prefix", "import sys; sys.stdout.write(u'{V}')"},
	{"bytes", "import sys; sys.stdout.flush(); sys.stdout.buffer.write(b'{V}')"},
	{"in a comparison", "import sys\nif '{V}' == '{V}':\n    sys.stdout.write(\"{V}\")"},
	{"comment", "import sys\n# {V}\nsys.stdout.write('{V}')"},
}

func bindPython(t testing.TB, tmpl, v string) (*Bound, error) {
	t.Helper()
	d := &Definition{Name: "t", Description: "d", Exec: &Exec{Kind: ExecScript, Shell: "python3", Command: tmpl},
		Parameters: []Parameter{{Name: "V", Type: TypeString}, {Name: "N", Type: TypeNumber}}}
	return Bind(d, Input{"V": v}, BindEnv{})
}

// TestPythonQuotingRuns runs every payload in every quoting through the
// host's python3: each comes back exactly as given.
func TestPythonQuotingRuns(t *testing.T) {
	testenv.NeedCommand(t, "python3")
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		py = "/usr/bin/python3" // the one a sandbox runs, and no version-manager shim
	}
	for _, c := range pyContexts {
		for _, v := range pyPayloads {
			b, err := bindPython(t, c.tmpl, v)
			if err != nil {
				t.Errorf("%s %q: %v", c.name, v, err)
				continue
			}
			argv := b.Steps[0].Argv
			out, err := exec.Command(py, argv[1:]...).CombinedOutput()
			if err != nil {
				t.Errorf("%s %q: %v\n%s\n%s", c.name, v, err, out, argv[2])
				continue
			}
			if string(out) != v {
				t.Errorf("%s: got %q, want %q\n%s", c.name, out, v, argv[2])
			}
		}
	}
	// A number stands bare in code; analyze-data's data.head({NUM_ROWS}).
	d := &Definition{Name: "t", Description: "d", Exec: &Exec{Kind: ExecScript, Shell: "python3", Command: "print(repr({N}), {B}, -{N}, 2**{N})"},
		Parameters: []Parameter{{Name: "N", Type: TypeNumber}, {Name: "B", Type: TypeBoolean}}}
	for in, want := range map[string]string{"5": "5 True -5 32\n", "-2": "-2 True 2 0.25\n", "1.5": "1.5 True -1.5 2.8284271247461903\n"} {
		b, err := Bind(d, Input{"N": Text(in), "B": Text("yes")}, BindEnv{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(py, b.Steps[0].Argv[1:]...).CombinedOutput()
		if err != nil || string(out) != want {
			t.Errorf("N=%s: %q %v, want %q (%s)", in, out, err, want, b.Steps[0].Argv[2])
		}
	}
}

func TestPythonQuotingRefuses(t *testing.T) {
	for _, c := range []struct {
		name, tmpl, v string
		want          error
	}{
		{"string bare in code", "print({V})", "__import__('os')", ErrUnsafeValue},
		{"number text with leading zero bare", "print({V})", "007", ErrUnsafeValue},
		{"NUL", "print('{V}')", "a\x00b", ErrUnsafeValue},
		{"invalid UTF-8", "print('{V}')", "a\xffb", ErrUnsafeValue},
		{"f-string", "print(f'{V}')", "x", ErrUnsafeContext},
		{"raw string", `print(r"{V}")`, "x", ErrUnsafeContext},
		{"raw bytes", `print(Rb'{V}')`, "x", ErrUnsafeContext},
	} {
		_, err := bindPython(t, c.tmpl, c.v)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	// Empty text in an f-string is still refused at load: validate
	// says it before any run.
	_, err := Parse([]byte("description: d\npython: |\n  print(f\"{V}\")\nparameters:\n  V: {description: v}\n"), "t.yaml")
	if err == nil || !strings.Contains(err.Error(), "t.yaml:3:11: python command: {V} is inside a Python f-string, where braces are Python expressions, where no value can be quoted safely") ||
		!strings.Contains(err.Error(), "environment.variables") {
		t.Errorf("f-string at load: %v", err)
	}
}

// TestQuotingRefusedAtLoad: a reference that no value could be
// substituted for is a located load error, in every command kind.
func TestQuotingRefusedAtLoad(t *testing.T) {
	for _, c := range []struct {
		name, yaml, want string
	}{
		{"backticks", "bash: echo `cat {V}`\n", "2:17: bash command: {V} is inside `...` command substitution"},
		{"parameter expansion", "bash: echo ${X:-{V}}\n", "2:17: bash command: {V} is inside ${...} parameter expansion"},
		{"node", "script: console.log('{V}')\nshell: node\n", "2:22: script command: {V} stands in a node script, whose quoting sandboxed does not do"},
		{"raw python in a step", "steps:\n  - name: s\n    python: print(r'{V}')\n", "4:21: python command of step s: {V} is inside a Python raw string"},
		{"fallback", "steps:\n  - name: s\n    bash: 'true'\n    error-handling:\n      fallback: echo `{V}`\n", "6:23: fallback of step s: {V} is inside `...`"},
		{"commands", "commands:\n  default: echo `{V}`\n", "3:18: commands.default command: {V} is inside `...`"},
		{"commands for windows are not sh", "commands:\n  platforms:\n    windows: echo `{V}`\n    linux: echo `{V}`\n", "5:18: commands.linux command: {V} is inside `...`"},
	} {
		src := "description: d\n" + c.yaml + "parameters:\n  V: {description: v}\n"
		_, err := Parse([]byte(src), "t.yaml")
		if err == nil || !strings.Contains(err.Error(), "t.yaml:"+c.want) {
			t.Errorf("%s: err = %v, want %s", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "commands.windows") {
			t.Errorf("%s: a Windows command is checked as sh: %v", c.name, err)
		}
		// Not escaped: the value is the author's to check.
		raw := strings.Replace(src, "{description: v}", "{description: v, validation: {pattern: '^[a-z]+$'}, security: {escape-shell: false}}", 1)
		if _, err := Parse([]byte(raw), "t.yaml"); err != nil {
			t.Errorf("%s unescaped: %v", c.name, err)
		}
	}
}

// FuzzPythonQuoting: in every quoting, the substituted text decodes (by
// Python's escape rules) to the value, and nothing ends the literal early.
func FuzzPythonQuoting(f *testing.F) {
	for _, v := range pyPayloads {
		for i := range pyFuzzContexts {
			f.Add(v, uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, v string, which uint8) {
		c := pyFuzzContexts[int(which)%len(pyFuzzContexts)]
		b, err := bindPython(t, c.open+"{V}"+c.close, v)
		valid := utf8.ValidString(v) && strings.IndexByte(v, 0) < 0
		if !valid {
			if !errors.Is(err, ErrUnsafeValue) {
				t.Fatalf("%s: %q not refused: %v", c.name, v, err)
			}
			return
		}
		if c.name == "bare" {
			if v == "" {
				return // nothing is substituted
			}
			if err != nil {
				if !errors.Is(err, ErrUnsafeValue) {
					t.Fatalf("bare %q: %v", v, err)
				}
				return
			}
			got := strings.TrimPrefix(b.Steps[0].Argv[2], c.open)
			if !pyBareRe().MatchString(got) {
				t.Fatalf("bare %q became %q", v, got)
			}
			return
		}
		if err != nil {
			t.Fatalf("%s: %q: %v", c.name, v, err)
		}
		got := b.Steps[0].Argv[2]
		if !strings.HasPrefix(got, c.open) || !strings.HasSuffix(got, c.close) {
			t.Fatalf("%s: %q", c.name, got)
		}
		body := got[len(c.open) : len(got)-len(c.close)]
		if c.name == "comment" {
			if strings.ContainsAny(body, "\r\n") {
				t.Fatalf("comment: %q ends the comment", body)
			}
			return
		}
		dec, err := pyDecode(body, c.quote, c.name == "bytes")
		if err != nil {
			t.Fatalf("%s: %q -> %q: %v", c.name, v, body, err)
		}
		if dec != v {
			t.Fatalf("%s: %q decodes to %q", c.name, v, dec)
		}
	})
}

var pyBareRe = lazyRegexp(`^\((-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?|True|False)\)$`)

var pyFuzzContexts = []struct{ name, open, close, quote string }{
	{"single", "'", "'", "'"},
	{"double", `"`, `"`, `"`},
	{"triple", "'''", "'''", "'''"},
	{"bytes", "b'", "'", "'"},
	{"comment", "# ", "", ""},
	{"bare", "x = ", "", ""},
}

// pyDecode reads the body of a Python string literal closed by quote, by
// Python's rules for the escapes escapePython writes; it fails on what
// would end the literal early, a line break in a one-line literal, or an
// escape it does not know (a backslash of the value left alone).
func pyDecode(body, quote string, bytesLit bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case strings.HasPrefix(body[i:], quote):
			return "", fmt.Errorf("unescaped %s at %d", quote, i)
		case len(quote) == 1 && (c == '\n' || c == '\r'):
			return "", fmt.Errorf("line break at %d", i)
		case bytesLit && c >= 0x80:
			return "", fmt.Errorf("non-ASCII byte at %d in a bytes literal", i)
		case c != '\\':
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(body) {
			return "", fmt.Errorf("backslash at the end")
		}
		i++
		switch body[i] {
		case '\\', '\'', '"':
			b.WriteByte(body[i])
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'x':
			if i+2 >= len(body)+0 && i+2 > len(body)-1 {
				return "", fmt.Errorf("short \\x at %d", i)
			}
			n, err := strconv.ParseUint(body[i+1:i+3], 16, 8)
			if err != nil {
				return "", err
			}
			if bytesLit {
				b.WriteByte(byte(n))
			} else {
				b.WriteRune(rune(n))
			}
			i += 2
		default:
			return "", fmt.Errorf("unknown escape \\%c at %d", body[i], i)
		}
	}
	return b.String(), nil
}
