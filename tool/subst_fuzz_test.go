package tool

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// fuzzContexts are the template contexts FuzzSubstitute places a value in.
// Each renders a script that mvdan.cc/sh parses and expands; want gives the
// expected fields of every statement.
var fuzzContexts = []struct {
	name string
	kind ExecKind
	tmpl string
	lang syntax.LangVariant
	want func(v string) [][]string
}{
	{"bare", ExecBash, "printf %s A {X} Z", syntax.LangBash, func(v string) [][]string {
		if v == "" {
			return [][]string{{"printf", "%s", "A", "Z"}}
		}
		return [][]string{{"printf", "%s", "A", v, "Z"}}
	}},
	{"bare in word", ExecBash, "printf %s a{X}b", syntax.LangBash, func(v string) [][]string {
		return [][]string{{"printf", "%s", "a" + v + "b"}}
	}},
	{"single", ExecBash, "printf %s 'a {X} b'", syntax.LangBash, func(v string) [][]string {
		return [][]string{{"printf", "%s", "a " + v + " b"}}
	}},
	{"double", ExecBash, `printf %s "a {X} b"`, syntax.LangBash, func(v string) [][]string {
		return [][]string{{"printf", "%s", "a " + v + " b"}}
	}},
	{"dollar-single", ExecBash, `printf %s $'a {X} b'`, syntax.LangBash, func(v string) [][]string {
		return [][]string{{"printf", "%s", "a " + v + " b"}}
	}},
	{"posix mixed", ExecScript, `printf %s x{X} "{X}" '{X}'`, syntax.LangPOSIX, func(v string) [][]string {
		return [][]string{{"printf", "%s", "x" + v, v, v}}
	}},
	{"comment", ExecBash, "printf %s a # {X}\nprintf %s b", syntax.LangBash, func(v string) [][]string {
		return [][]string{{"printf", "%s", "a"}, {"printf", "%s", "b"}}
	}},
	{"after operators", ExecBash, "true && printf %s {X}; printf %s \"{X}\" | cat", syntax.LangBash, func(v string) [][]string {
		first := []string{"printf", "%s"}
		if v != "" {
			first = append(first, v)
		}
		return [][]string{{"true"}, first, {"printf", "%s", v}, {"cat"}}
	}},
}

// fuzzConfig expands without side effects, but so that any expansion that
// slipped through changes the result: $HOME and ~ expand to a marker,
// globs match a marker file, command substitution fails.
func fuzzConfig() *expand.Config {
	return &expand.Config{
		Env: expand.ListEnviron("HOME=/EXPANDED-HOME", "IFS= \t\n", "X=EXPANDED-X"),
		CmdSubst: func(io.Writer, *syntax.CmdSubst) error {
			return errors.New("command substitution ran")
		},
		ReadDir2: func(string) ([]fs.DirEntry, error) {
			return []fs.DirEntry{fakeDirEntry("GLOBBED")}, nil
		},
	}
}

type fakeDirEntry string

func (f fakeDirEntry) Name() string               { return string(f) }
func (f fakeDirEntry) IsDir() bool                { return false }
func (f fakeDirEntry) Type() fs.FileMode          { return 0 }
func (f fakeDirEntry) Info() (fs.FileInfo, error) { return nil, errors.New("no info") }

// shellFields parses script and returns the expanded fields of each
// simple command, in order.
func shellFields(script string, lang syntax.LangVariant) ([][]string, error) {
	f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(script), "")
	if err != nil {
		return nil, err
	}
	var out [][]string
	var ferr error
	cfg := fuzzConfig()
	syntax.Walk(f, func(n syntax.Node) bool {
		if ferr != nil {
			return false
		}
		if call, ok := n.(*syntax.CallExpr); ok {
			fields, err := expand.Fields(cfg, call.Args...)
			if err != nil {
				ferr = err
				return false
			}
			out = append(out, fields)
		}
		return true
	})
	return out, ferr
}

func FuzzSubstitute(f *testing.F) {
	for _, v := range append(injectionPayloads, "", "a\x00b", "EOF", "12", "-3") {
		for i := range fuzzContexts {
			f.Add(v, uint8(i))
		}
		f.Add(v, uint8(len(fuzzContexts)))   // here-document
		f.Add(v, uint8(len(fuzzContexts)+1)) // run: argv
		f.Add(v, uint8(len(fuzzContexts)+2)) // step output in '...'
		f.Add(v, uint8(len(fuzzContexts)+3)) // arithmetic
	}
	f.Fuzz(func(t *testing.T, v string, which uint8) {
		if !utf8.ValidString(v) {
			// The shells take bytes, but the parser used to check works
			// on text; invalid UTF-8 is covered by the real-shell test.
			v = strings.ToValidUTF8(v, "?")
		}
		hasNUL := strings.IndexByte(v, 0) >= 0
		n := len(fuzzContexts)
		switch idx := int(which) % (n + 4); {
		case idx < n:
			c := fuzzContexts[idx]
			b, err := bindCmd(t, c.kind, "", c.tmpl, v)
			if hasNUL {
				if !errors.Is(err, ErrUnsafeValue) {
					t.Fatalf("%s: NUL not refused: %v", c.name, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: bind %q: %v", c.name, v, err)
			}
			script := b.Steps[0].Argv[len(b.Steps[0].Argv)-1]
			got, err := shellFields(script, c.lang)
			if err != nil {
				t.Fatalf("%s: value %q: script %q: %v", c.name, v, script, err)
			}
			// The parser reads CRLF as LF (bash does not); CR handling is
			// covered by the real-shell test.
			if want := c.want(strings.ReplaceAll(v, "\r\n", "\n")); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: value %q\nscript %q\ngot  %q\nwant %q", c.name, v, script, got, want)
			}
		case idx == n:
			checkHeredoc(t, v)
		case idx == n+1:
			b, err := bindCmd(t, ExecRun, "", `printf "%s" {X}`, v)
			if hasNUL {
				if !errors.Is(err, ErrUnsafeValue) {
					t.Fatalf("run: NUL not refused: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"printf", "%s"}
			if v != "" {
				want = append(want, v)
			}
			if got := b.Steps[0].Argv; !reflect.DeepEqual(got, want) {
				t.Fatalf("run: got %q want %q", got, want)
			}
		case idx == n+2:
			script, err := substituteSteps(`printf %s '<{s.output}>'`, SyntaxBash, map[string]StepOutput{"s": {Output: v}})
			if hasNUL {
				if !errors.Is(err, ErrUnsafeValue) {
					t.Fatalf("step output: NUL not refused: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := shellFields(script, syntax.LangBash)
			want := [][]string{{"printf", "%s", "<" + strings.ReplaceAll(strings.TrimRight(v, "\n"), "\r\n", "\n") + ">"}}
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("step output %q: script %q: got %q want %q (%v)", v, script, got, want, err)
			}
		default:
			_, err := bindCmd(t, ExecBash, "", "echo $(( {X} + 1 ))", v)
			if arithRe().MatchString(v) || v == "" {
				if err != nil {
					t.Fatalf("arith %q: %v", v, err)
				}
			} else if !errors.Is(err, ErrUnsafeValue) {
				t.Fatalf("arith %q: not refused: %v", v, err)
			}
		}
	})
}

// checkHeredoc: in a here-document body a value is either refused (line
// breaks, NUL, a line equal to the delimiter) or comes out literally.
func checkHeredoc(t *testing.T, v string) {
	for _, quoted := range []bool{false, true} {
		delim := "EOF"
		if quoted {
			delim = "'EOF'"
		}
		b, err := bindCmd(t, ExecBash, "", "cat <<"+delim+"\n{X}\nEOF\n", v)
		if strings.ContainsAny(v, "\x00\n\r") || v == "EOF" {
			if !errors.Is(err, ErrUnsafeValue) {
				t.Fatalf("heredoc %q: not refused: %v", v, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("heredoc %q: %v", v, err)
		}
		script := b.Steps[0].Argv[2]
		f, err := syntax.NewParser().Parse(strings.NewReader(script), "")
		if err != nil {
			t.Fatalf("heredoc %q: parse %q: %v", v, script, err)
		}
		if len(f.Stmts) != 1 || len(f.Stmts[0].Redirs) != 1 {
			t.Fatalf("heredoc %q: script %q is not one command with one here-document", v, script)
		}
		hdoc := f.Stmts[0].Redirs[0].Hdoc
		got, err := expand.Document(fuzzConfig(), hdoc)
		if quoted {
			// The body of a quoted here-document is literal (the expander
			// would process backslashes in it, which bash does not).
			got = ""
			for _, p := range hdoc.Parts {
				got += p.(*syntax.Lit).Value
			}
		}
		if err != nil || got != v+"\n" {
			t.Fatalf("heredoc %q (quoted=%v): script %q: got %q, %v", v, quoted, script, got, err)
		}
	}
}

// FuzzBindArgs feeds arbitrary NAME=VALUE arguments and JSON documents to
// the parsers and Bind: nothing may panic or hang, and errors wrap a
// sentinel.
func FuzzBindArgs(f *testing.F) {
	f.Add("N=5", `{"S":"x","A":[1,2]}`)
	f.Add("B=yes", `{"O":{"k":"v"}}`)
	f.Add("A=a,b,a", `{"N":1e400}`)
	f.Add("S=", `{"S":null}`)
	f.Add("--param", `[]`)
	f.Fuzz(func(t *testing.T, arg, doc string) {
		one := 1.0
		d := &Definition{
			Name: "t", Description: "d",
			Exec: &Exec{Kind: ExecBash, Command: "echo {S} '{N}' \"{B}\" {A} {O}"},
			Parameters: []Parameter{
				{Name: "S", Type: TypeString, Validation: &Validation{Pattern: "^[a-z]*$"}, Transform: "value.toUpperCase()"},
				{Name: "N", Type: TypeNumber, Default: 3, HasDefault: true, Validation: &Validation{Minimum: &one}},
				{Name: "B", Type: TypeBoolean},
				{Name: "A", Type: TypeArray, Validation: &Validation{UniqueItems: true}},
				{Name: "O", Type: TypeObject},
			},
		}
		check := func(in Input, err error) {
			if err != nil {
				if !errors.Is(err, ErrBadArgs) {
					t.Fatalf("parse error without sentinel: %v", err)
				}
				return
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, err := Bind(d, in, BindEnv{})
				if err != nil && !errors.Is(err, ErrUnknownParam) && !errors.Is(err, ErrInvalidParam) &&
					!errors.Is(err, ErrUnsafeValue) && !errors.Is(err, ErrTransform) {
					t.Errorf("bind error without sentinel: %v", err)
				}
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Bind hangs")
			}
		}
		check(ParseArgs(strings.Fields(arg)))
		check(ParseParamsJSON([]byte(doc)))
	})
}

// fuzzMarker stands for a benign value when comparing scripts.
const fuzzMarker = "QZMARKERQZ"

// scriptFacts parses a bash script and returns what running it would see:
// the expanded fields of every simple command, redirect targets and
// here-document bodies, in order. ok is false when the script does not
// parse or expands something the checker cannot (command substitution).
func scriptFacts(script string) (facts []string, parsed bool, err error) {
	defer func() {
		// The expander panics on constructs it has no handler for
		// (process substitution); those scripts are beyond the checker.
		if r := recover(); r != nil {
			err = fmt.Errorf("expander: %v", r)
		}
	}()
	f, perr := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if perr != nil {
		return nil, false, perr
	}
	// A command substitution expands to a constant: the commands inside it
	// are checked by the walk below, which descends into it.
	newCfg := func() *expand.Config {
		c := fuzzConfig()
		c.CmdSubst = func(w io.Writer, _ *syntax.CmdSubst) error {
			_, err := io.WriteString(w, "CS")
			return err
		}
		// Globs in the template itself are legitimate and may match with
		// the value as literal text: globbing is off here (FuzzSubstitute
		// checks that values never glob).
		c.ReadDir2 = nil
		return c
	}
	cfg := newCfg()
	syntax.Walk(f, func(n syntax.Node) bool {
		if err != nil {
			return false
		}
		switch x := n.(type) {
		case *syntax.CallExpr:
			var fields []string
			fields, err = expand.Fields(cfg, x.Args...)
			facts = append(facts, "call:"+strings.Join(fields, "\x00"))
		case *syntax.Redirect:
			if x.Hdoc != nil {
				var doc string
				if heredocQuoted(x.Word) {
					// A quoted here-document is literal (the expander would
					// process backslashes in it, which bash does not).
					for _, p := range x.Hdoc.Parts {
						if lit, ok := p.(*syntax.Lit); ok {
							doc += lit.Value
						}
					}
				} else {
					doc, err = expand.Document(cfg, x.Hdoc)
				}
				facts = append(facts, "hdoc:"+doc)
			}
		}
		return true
	})
	return facts, true, err
}

// FuzzTemplate places a value in an arbitrary template and checks that
// the script's structure does not depend on the value: whatever the
// template, rendering it with the value and with a benign marker must give
// scripts that parse alike and expand alike, the value standing exactly
// where the marker stands.
func FuzzTemplate(f *testing.F) {
	templates := []string{
		"printf %s {X}", "echo '{X}' \"{X}\" $'{X}' a{X}b", "echo \"$(echo {X})\"",
		"cat <<EOF\n{X}\nEOF", "cat <<'EOF' | grep {X}\n{X}\nEOF\necho {X}",
		"echo a # {X}\necho {X}", "case {X} in a) echo {X};; esac",
		"x=$(case a in a) echo {X};; esac); echo \"$x\"", "f() { echo {X}; }; f",
		"arr=({X} b); echo \"${arr[@]}\"", "[ -d \"{X}/.git\" ] && echo '{X}'",
		"echo '{fetch.output}' | jq '{a: .b}' {X}", "for i in {X}; do echo \"$i\"; done",
		"echo ${HOME} {X} $HOME", "cd {X} && npm install", "echo \\'{X}\\'",
	}
	for _, tmpl := range templates {
		for _, v := range []string{"it's", `"; id; "`, "$(id)", "a b", "\n", "EOF", "\\", "`", "*"} {
			f.Add(tmpl, v)
		}
	}
	f.Fuzz(func(t *testing.T, tmpl, v string) {
		if !strings.Contains(tmpl, "{X}") || v == "" || len(tmpl) > 400 {
			return
		}
		if !utf8.ValidString(tmpl) || !utf8.ValidString(v) || strings.ContainsAny(tmpl+v, "\x00\r") {
			return // the parser's text handling differs from bash's bytes here
		}
		if strings.Contains(tmpl, fuzzMarker) || strings.Contains(v, fuzzMarker) {
			return
		}
		if strings.Contains(strings.ReplaceAll(tmpl, "<<<", ""), "<<") {
			// The parser reads here-documents unlike bash in corners
			// (backslashes in quoted bodies, partly quoted delimiters,
			// unterminated bodies); TestHeredoc and FuzzSubstitute check
			// here-documents against bash.
			return
		}
		for _, eg := range []string{"?(", "*(", "+(", "@(", "!("} {
			if strings.Contains(tmpl, eg) {
				return // the parser matches extglob parentheses without regard to quotes; bash does not
			}
		}
		benign, err := bindCmd(t, ExecBash, "", tmpl, fuzzMarker)
		if err != nil {
			return
		}
		want, parsed, err := scriptFacts(benign.Steps[0].Argv[2])
		if !parsed || err != nil {
			return // not a valid script, or beyond the checker
		}
		b, err := bindCmd(t, ExecBash, "", tmpl, v)
		if err != nil {
			if !errors.Is(err, ErrUnsafeValue) && !errors.Is(err, ErrUnsafeContext) {
				t.Fatalf("bind error without sentinel: %v", err)
			}
			return
		}
		script := b.Steps[0].Argv[2]
		got, parsed, err := scriptFacts(script)
		if !parsed {
			t.Fatalf("template %q value %q: script %q no longer parses (benign %q): %v", tmpl, v, script, benign.Steps[0].Argv[2], err)
		}
		if err != nil {
			t.Fatalf("template %q value %q: script %q: expansion: %v", tmpl, v, script, err)
		}
		for i := range want {
			want[i] = strings.ReplaceAll(want[i], fuzzMarker, v)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("template %q value %q\nscript %q\nbenign %q\ngot  %q\nwant %q", tmpl, v, script, benign.Steps[0].Argv[2], got, want)
		}
	})
}

// heredocQuoted reports whether a here-document delimiter word is quoted.
func heredocQuoted(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		lit, ok := p.(*syntax.Lit)
		if !ok || strings.Contains(lit.Value, "\\") {
			return true
		}
	}
	return false
}
