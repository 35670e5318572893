package tool

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escaping rules, per quoting context. Each rule makes the value exactly
// one literal piece of the word it is placed in; an empty value adds
// nothing (so a bare `{FLAG}` whose value is empty disappears).
//
//	bare shell word     'v' with every ' written as '\''
//	inside '...'        every ' written as '\''  (close, escaped quote, reopen)
//	inside "..."        \ " $ ` preceded by a backslash; newlines are literal
//	inside $'...'       \ and ' preceded by a backslash (bash only)
//	here-document       \ $ ` preceded by a backslash (unquoted delimiter),
//	                    verbatim (quoted delimiter); a newline is refused and
//	                    a line that would equal the delimiter is refused
//	comment             line breaks and backslashes become spaces
//	$(( )) / (( ))      only an optionally signed integer is accepted
//	backticks, ${...}   refused: use $(...) or a plain word instead
//	PowerShell bare     'v' with every single-quote character doubled
//	PowerShell '...'    every single-quote character doubled
//	PowerShell "..."    ` $ and double-quote characters preceded by `
//	run: word           verbatim: the value is part of one argv element
//
// A NUL byte can be part of no argument, environment value or path, so a
// value containing one is refused everywhere but stdin.
//
// A value right after $NAME never extends the variable's name: in "..." an
// empty "" is put between them, in PowerShell "..." an empty $(), and in a
// here-document or $(( )) such a value is refused.
//
// Inside [[ ]], whose -eq/-lt/... operands are arithmetic, a value that
// looks like a subscript with an expansion (a[$(id)]) is refused.
//
// What escaping cannot do: it makes a value one literal word, but a command
// that evaluates its arguments as code still does so — eval, sh -c, let,
// declare -i, [[ X -eq Y ]] (whose operands are arithmetic, where a[$(cmd)]
// runs cmd), awk or jq programs built from a value. Such parameters need a
// validation pattern (e.g. ^[0-9]+$); the template scanner cannot know what
// a command does with its arguments.

var arithRe = lazyRegexp(`^[+-]?[0-9]+$`)

// openEscapeRe matches a $'...' escape that more characters could extend.
var openEscapeRe = lazyRegexp(`\\([0-7]{1,2}|x[0-9A-Fa-f]?|u[0-9A-Fa-f]{0,3}|U[0-9A-Fa-f]{0,7}|c)$`)

// arithSubscriptRe matches values that bash arithmetic would expand: a
// subscript holding $ or a backquote, as in a[$(id)].
var arithSubscriptRe = lazyRegexp("\\[[^\\]]*[$`]")

// escapeValue returns v made literal for ctx. name is used in errors.
func escapeValue(ctx qctx, why, name, v string) (string, error) {
	if strings.IndexByte(v, 0) >= 0 {
		return "", fmt.Errorf("substitute {%s}: value contains a NUL byte, which no command argument can hold: %w", name, ErrUnsafeValue)
	}
	if v == "" {
		return "", nil
	}
	switch ctx {
	case ctxBare:
		return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'", nil
	case ctxSingle:
		return strings.ReplaceAll(v, "'", `'\''`), nil
	case ctxDouble:
		return backslashEscape(v, "\\\"$`"), nil
	case ctxDollarSingle:
		return backslashEscape(v, `\'`), nil
	case ctxHeredoc, ctxHeredocQuoted:
		if strings.ContainsAny(v, "\n\r") {
			return "", fmt.Errorf("substitute {%s} into %s: the value contains a line break, which could end the here-document early; pass multi-line data through stdin (input:) or a file: %w", name, ctx, ErrUnsafeValue)
		}
		if ctx == ctxHeredoc {
			return backslashEscape(v, "\\$`"), nil
		}
		return v, nil
	case ctxComment:
		// A comment's text does no work; line breaks (and backslashes, which
		// some parsers take as continuing the line) become spaces.
		return strings.NewReplacer("\n", " ", "\r", " ", "\\", " ").Replace(v), nil
	case ctxArith:
		if !arithRe().MatchString(v) {
			return "", fmt.Errorf("substitute {%s} into %s: %q is not an integer; only integers may be placed in $(( )): %w", name, ctx, v, ErrUnsafeValue)
		}
		return v, nil
	case ctxUnsupported:
		return "", fmt.Errorf("substitute {%s}: the reference is %s, where its value cannot be quoted safely; move it out, or assign it to a variable first: %w", name, why, ErrUnsafeContext)
	case ctxPwshBare:
		return "'" + pwshDoubleSingleQuotes(v) + "'", nil
	case ctxPwshSingle:
		return pwshDoubleSingleQuotes(v), nil
	case ctxPwshDouble:
		var b strings.Builder
		for _, r := range v {
			if r == '`' || r == '$' || isPwshDoubleQuote(r) {
				b.WriteByte('`')
			}
			b.WriteRune(r)
		}
		return b.String(), nil
	case ctxPwshComment:
		return strings.NewReplacer("\n", " ", "\r", " ", "#>", "# >").Replace(v), nil
	case ctxPyString, ctxPyBytes, ctxPyComment, ctxPyBare:
		return escapePython(ctx, name, v)
	}
	// ctxPlain, ctxArgv: verbatim.
	return v, nil
}

// rawValue is what an unescaped (escape-shell: false) value becomes: the
// value itself, still refusing NUL, which would truncate the command.
func rawValue(name, v string) (string, error) {
	if strings.IndexByte(v, 0) >= 0 {
		return "", fmt.Errorf("substitute {%s}: value contains a NUL byte: %w", name, ErrUnsafeValue)
	}
	return v, nil
}

func backslashEscape(v, special string) string {
	var b strings.Builder
	b.Grow(len(v) + 8)
	for i := 0; i < len(v); i++ {
		if strings.IndexByte(special, v[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// pwshDoubleSingleQuotes doubles every character PowerShell treats as a
// single quote ( ' ‘ ’ ‚ ‛ ); the tokenizer reads a doubled one as the
// character itself.
func pwshDoubleSingleQuotes(v string) string {
	var b strings.Builder
	for _, r := range v {
		if isPwshSingleQuote(r) {
			b.WriteRune(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func decodeRune(s string) (rune, int) {
	if s == "" {
		return utf8.RuneError, 0
	}
	return utf8.DecodeRuneInString(s)
}

// ShellQuote returns v quoted as one literal POSIX shell word; the empty
// string becomes a pair of single quotes (substitution, unlike this, drops
// empty values). It is for display and for callers that build a command
// line themselves.
func ShellQuote(v string) string {
	if v == "" {
		return "''"
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// ShellWord returns v as one POSIX shell word for display, quoted only
// when the shell would read it otherwise (ShellQuote's quoting).
func ShellWord(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n*?[]'\"$`\\;&|<>(){}!#~") {
		return v
	}
	return ShellQuote(v)
}

// resolveFunc returns the text for a reference, whether it is escaped, and
// ok=false to leave the reference as written.
type resolveFunc func(ref string) (text string, escape bool, ok bool, err error)

// render substitutes references into a non-argv template.
func (t *Template) render(res resolveFunc) (string, error) {
	if t.syntax == SyntaxArgv {
		argv, err := t.renderArgv(res)
		if err != nil {
			return "", err
		}
		q := make([]string, len(argv))
		for i, a := range argv {
			q[i] = ShellQuote(a)
		}
		return strings.Join(q, " "), nil
	}
	type hdCheck struct {
		at        int
		delim     string
		stripTabs bool
		join      bool
	}
	var checks []hdCheck
	var b strings.Builder
	for _, p := range t.pieces {
		if p.ref == "" {
			b.WriteString(p.lit)
			continue
		}
		text, esc, ok, err := res(p.ref)
		if err != nil {
			return "", err
		}
		if !ok {
			b.WriteString(p.lit)
			continue
		}
		var out string
		if esc && p.inTest && arithSubscriptRe().MatchString(text) {
			return "", fmt.Errorf("substitute {%s}: the value looks like an array subscript with an expansion (%q); inside [[ ]] arithmetic operators would evaluate it and run the command: %w", p.ref, text, ErrUnsafeValue)
		}
		if esc {
			out, err = escapeValue(p.ctx, p.why, p.ref, text)
			if err == nil {
				out, err = separate(p, b.String(), out)
			}
		} else {
			out, err = rawValue(p.ref, text)
		}
		if err != nil {
			return "", err
		}
		if p.ctx == ctxHeredoc || p.ctx == ctxHeredocQuoted {
			checks = append(checks, hdCheck{at: b.Len(), delim: p.delim, stripTabs: p.stripTabs, join: p.ctx == ctxHeredoc})
		}
		b.WriteString(out)
	}
	s := b.String()
	for _, c := range checks {
		// The logical line holding the value: back to the first physical
		// line of a run joined by backslash-newlines.
		start := strings.LastIndexByte(s[:c.at], '\n') + 1
		for c.join && start > 0 {
			prev := strings.LastIndexByte(s[:start-1], '\n') + 1
			line := s[prev : start-1]
			if !strings.HasSuffix(line, "\\") || escapedAt(line, len(line)-1, '\\') {
				break
			}
			start = prev
		}
		line, _ := logicalLine(s, start, c.join, c.stripTabs)
		if line == c.delim {
			return "", fmt.Errorf("substitute into a here-document: a value makes a line equal to the delimiter %q, which would end the here-document early: %w", c.delim, ErrUnsafeValue)
		}
	}
	return s, nil
}

// renderArgv substitutes references into a `run:` template and returns
// the argv. A word made only of unquoted references whose values are empty
// is dropped, like an empty unquoted expansion in a shell.
func (t *Template) renderArgv(res resolveFunc) ([]string, error) {
	argv := make([]string, 0, len(t.words))
	for _, w := range t.words {
		var b strings.Builder
		for _, p := range w.pieces {
			if p.ref == "" {
				b.WriteString(p.lit)
				continue
			}
			text, _, ok, err := res(p.ref)
			if err != nil {
				return nil, err
			}
			if !ok {
				b.WriteString(p.lit)
				continue
			}
			if text, err = rawValue(p.ref, text); err != nil {
				return nil, err
			}
			b.WriteString(text)
		}
		for _, p := range w.pieces {
			if p.ref == "" && strings.IndexByte(p.lit, 0) >= 0 {
				return nil, fmt.Errorf("split run: command: a word contains a NUL byte: %w", ErrUnsafeValue)
			}
		}
		if b.Len() == 0 && !w.quoted {
			continue
		}
		argv = append(argv, b.String())
	}
	return argv, nil
}

// trailingVarName reports whether s ends with an unescaped $NAME (a shell
// or PowerShell variable whose name a following letter, digit or '_'
// would extend). For arithmetic (dollar=false) it reports a trailing
// identifier without '$'.
func trailingVarName(s string, dollar bool) bool {
	i := len(s)
	for i > 0 && isNameChar(s[i-1]) {
		i--
	}
	if i == len(s) {
		return false
	}
	if !dollar {
		c := s[i]
		return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
	}
	if i == 0 || s[i-1] != '$' {
		return false
	}
	c := s[i]
	if c >= '0' && c <= '9' {
		return false // $1 is one positional parameter; a digit after it is literal
	}
	bs := 0
	for j := i - 2; j >= 0 && s[j] == '\\'; j-- {
		bs++
	}
	return bs%2 == 0
}

func isNameChar(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// separate keeps an escaped value from merging with what precedes it: in
// "$NAME{X}" a value starting with a letter would extend the variable
// name. In double quotes an empty "" ends the name; in PowerShell double
// quotes an empty $() does; in a here-document or $(( )) nothing can, so
// the value is refused with a hint to write ${NAME}.
func separate(p piece, before, out string) (string, error) {
	if out == "" {
		return out, nil
	}
	first := out[0]
	switch p.ctx {
	case ctxDouble:
		if isNameChar(first) && trailingVarName(before, true) {
			return `""` + out, nil
		}
	case ctxDollarSingle:
		// An escape left open before the value (\0, \x4, \u12, \c) would
		// take the value's first characters; close and reopen the quotes.
		if loc := openEscapeRe().FindStringIndex(before); loc != nil {
			bs := 0
			for j := loc[0] - 1; j >= 0 && before[j] == '\\'; j-- {
				bs++
			}
			if bs%2 == 0 {
				return `'$'` + out, nil
			}
		}
	case ctxPwshBare:
		// @' opens a here-string or splat; keep a quoted value clear of it.
		if strings.HasSuffix(before, "@") {
			return "", fmt.Errorf("substitute {%s}: a PowerShell reference right after @ is not supported; put a space or quotes between them: %w", p.ref, ErrUnsafeContext)
		}
	case ctxPwshDouble:
		if (isNameChar(first) || first == ':') && trailingVarName(before, true) {
			return "$()" + out, nil
		}
	case ctxHeredoc:
		if isNameChar(first) && trailingVarName(before, true) {
			return "", fmt.Errorf("substitute {%s}: it follows a $NAME in a here-document and its value would extend the variable name; write ${NAME}{%s}: %w", p.ref, p.ref, ErrUnsafeValue)
		}
	case ctxArith:
		if isNameChar(first) && trailingVarName(before, false) {
			return "", fmt.Errorf("substitute {%s}: it follows a name in $(( )) and its value would extend that name; put an operator or a space between them: %w", p.ref, ErrUnsafeValue)
		}
	}
	return out, nil
}
