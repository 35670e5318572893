package tool

import (
	"fmt"
	"strings"
)

// Syntax is the language a template is written in. It decides how the
// template is scanned for quoting contexts and how a substituted value is
// escaped so that it always stays one literal piece of the surrounding word.
type Syntax int

const (
	// SyntaxPlain is text that no shell parses: permissions, environment
	// values, working directories, stdin. Values are inserted verbatim.
	SyntaxPlain Syntax = iota
	// SyntaxSh is a POSIX shell script (/bin/sh -c, dash). $'...' is not
	// recognised, since dash does not have it.
	SyntaxSh
	// SyntaxBash is a bash script: POSIX plus $'...'.
	SyntaxBash
	// SyntaxPwsh is a PowerShell script.
	SyntaxPwsh
	// SyntaxArgv is a `run:` command: split into words with shell-like
	// quoting, executed directly without a shell. Values never split words.
	SyntaxArgv
	// SyntaxPython is a Python program (python3 -c); see subst_python.go.
	SyntaxPython
)

// String returns the syntax name used in error messages.
func (s Syntax) String() string {
	switch s {
	case SyntaxPlain:
		return "plain"
	case SyntaxSh:
		return "sh"
	case SyntaxBash:
		return "bash"
	case SyntaxPwsh:
		return "pwsh"
	case SyntaxArgv:
		return "run"
	case SyntaxPython:
		return "python"
	}
	return fmt.Sprintf("syntax(%d)", int(s))
}

// MarshalText writes the syntax name, so JSON shows "bash", not a number.
func (s Syntax) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// qctx is the quoting context a placeholder sits in.
type qctx int

const (
	ctxPlain         qctx = iota // no shell: verbatim
	ctxBare                      // unquoted shell word
	ctxSingle                    // inside '...'
	ctxDouble                    // inside "..."
	ctxDollarSingle              // inside $'...' (bash)
	ctxComment                   // inside a # comment
	ctxHeredoc                   // here-document body, unquoted delimiter
	ctxHeredocQuoted             // here-document body, quoted delimiter
	ctxArith                     // inside $(( )) or (( ))
	ctxUnsupported               // a context we refuse (backticks, ${...}, here-strings)
	ctxPwshBare                  // PowerShell bare argument
	ctxPwshSingle                // PowerShell '...'
	ctxPwshDouble                // PowerShell "..."
	ctxPwshComment               // PowerShell # comment
	ctxArgv                      // a word of a `run:` command
)

var ctxNames = map[qctx]string{
	ctxPlain: "plain text", ctxBare: "a bare shell word", ctxSingle: "single quotes",
	ctxDouble: "double quotes", ctxDollarSingle: "$'...' quotes", ctxComment: "a comment",
	ctxHeredoc: "a here-document", ctxHeredocQuoted: "a quoted here-document",
	ctxArith: "an arithmetic expression", ctxUnsupported: "an unsupported context",
	ctxPwshBare: "a bare PowerShell argument", ctxPwshSingle: "PowerShell single quotes",
	ctxPwshDouble: "PowerShell double quotes", ctxPwshComment: "a PowerShell comment",
	ctxArgv: "a run: word",
}

func (c qctx) String() string { return ctxNames[c] }

// piece is one part of a parsed template: literal template text, or a
// reference ({NAME}, {step.output}) with the quoting context it sits in.
type piece struct {
	lit string // literal text, or the reference as written when ref != ""
	ref string // reference name without braces; "" for literal text
	ctx qctx
	why string // ctxUnsupported: the reason

	// Here-document bodies: the delimiter, and whether <<- strips tabs.
	delim     string
	stripTabs bool

	// inTest: inside [[ ]], whose arithmetic operators evaluate operands
	// as expressions (a[$(cmd)] runs cmd).
	inTest bool
}

// argWord is one word of a SyntaxArgv template.
type argWord struct {
	pieces []piece
	quoted bool // the word had quotes, so it survives even when empty
}

// Template is a command or text parsed once into literal pieces and
// references, each reference annotated with its quoting context. Rendering
// walks the pieces once, so a substituted value is never scanned again: a
// parameter whose value looks like "{fetch.output}" stays literal.
//
// A Template is immutable after ParseTemplate and safe for concurrent use.
type Template struct {
	src    string
	syntax Syntax
	pieces []piece   // all syntaxes but SyntaxArgv
	words  []argWord // SyntaxArgv
}

// isRef reports whether name has the shape of a reference between braces:
// a parameter or built-in name, or a step reference
// NAME.output|error|exit-code.
func isRef(name string) bool {
	ident, field, dotted := strings.Cut(name, ".")
	return isNameIdent(ident) && (!dotted || field == "output" || field == "error" || field == "exit-code")
}

// ParseTemplate parses text written in syntax. known reports which names
// between braces are references (declared parameters, built-ins, step
// references); any other {…} — jq objects, awk programs, unknown names —
// stays literal, as does ${VAR}. A nil known accepts every well-formed name.
func ParseTemplate(text string, syntax Syntax, known func(name string) bool) *Template {
	if known == nil {
		known = func(string) bool { return true }
	}
	t := &Template{src: text, syntax: syntax}
	switch syntax {
	case SyntaxSh, SyntaxBash:
		s := &shScanner{src: text, bash: syntax == SyntaxBash, known: known}
		t.pieces = s.scan()
	case SyntaxPwsh:
		s := &pwshScanner{src: text, known: known}
		t.pieces = s.scan()
	case SyntaxArgv:
		t.words = splitArgv(text, known)
	case SyntaxPython:
		t.pieces = scanPython(text, known)
	default:
		t.pieces = scanPlain(text, known)
	}
	return t
}

// Source returns the text the template was parsed from.
func (t *Template) Source() string { return t.src }

// Syntax returns the template's syntax.
func (t *Template) Syntax() Syntax { return t.syntax }

// Refs returns the references in the template, in order of appearance,
// without duplicates.
func (t *Template) Refs() []string {
	var out []string
	seen := map[string]bool{}
	add := func(ps []piece) {
		for _, p := range ps {
			if p.ref != "" && !seen[p.ref] {
				seen[p.ref] = true
				out = append(out, p.ref)
			}
		}
	}
	add(t.pieces)
	for _, w := range t.words {
		add(w.pieces)
	}
	return out
}

// matchRef reports whether src[i:] starts a reference: "{NAME}" not
// preceded by '$', with NAME accepted by known. It returns the name and
// the index just past the closing brace.
func matchRef(src string, i int, known func(string) bool) (string, int, bool) {
	if src[i] != '{' || (i > 0 && src[i-1] == '$') {
		return "", 0, false
	}
	end := strings.IndexByte(src[i+1:], '}')
	if end < 0 || end > 80 {
		return "", 0, false
	}
	name := src[i+1 : i+1+end]
	if !isRef(name) || !known(name) {
		return "", 0, false
	}
	return name, i + end + 2, true
}

// scanPlain finds references in text no shell parses.
func scanPlain(src string, known func(string) bool) []piece {
	var ps []piece
	lit := 0
	for i := 0; i < len(src); {
		if name, next, ok := matchRef(src, i, known); ok {
			if lit < i {
				ps = append(ps, piece{lit: src[lit:i]})
			}
			ps = append(ps, piece{lit: src[i:next], ref: name, ctx: ctxPlain})
			i, lit = next, next
			continue
		}
		i++
	}
	if lit < len(src) {
		ps = append(ps, piece{lit: src[lit:]})
	}
	return ps
}

// ---- POSIX sh / bash -------------------------------------------------------

type fkind int

const (
	fBare         fkind = iota // top level, or inside $( ), <( ), >( )
	fSingle                    // '...'
	fDouble                    // "..."
	fDollarSingle              // $'...'
	fBacktick                  // `...`
	fBrace                     // ${...}
	fArith                     // $(( )) or (( ))
	fComment                   // # to end of line
	fHeredoc                   // here-document body
)

type frame struct {
	kind      fkind
	sub       bool // fBare: closed by ')'
	depth     int  // parentheses (fBare sub, fArith) or braces (fBrace)
	bracket   bool // fArith: the old $[ ] form, closed by ']'
	caseDepth int  // fBare: open `case` keywords, whose patterns end in ')'
	test      int  // fBare: open [[ ]] conditionals

	// fHeredoc
	delim     string
	stripTabs bool
	quoted    bool
}

type heredocSpec struct {
	delim     string
	stripTabs bool
	quoted    bool
}

// shScanner tracks the quoting state of a POSIX sh or bash script well
// enough to know, at every reference, which context it is in. It is not a
// full parser; where the state is doubtful (inside backticks or ${...}) the
// context is ctxUnsupported and substitution refuses, failing closed.
type shScanner struct {
	src     string
	bash    bool
	known   func(string) bool
	stack   []frame
	pending []heredocSpec
	out     []piece
	lit     int // start of pending literal text
}

func (s *shScanner) top() *frame  { return &s.stack[len(s.stack)-1] }
func (s *shScanner) push(f frame) { s.stack = append(s.stack, f) }
func (s *shScanner) pop() {
	if len(s.stack) > 1 {
		s.stack = s.stack[:len(s.stack)-1]
	}
}

func (s *shScanner) flush(i int) {
	if s.lit < i {
		s.out = append(s.out, piece{lit: s.src[s.lit:i]})
	}
	s.lit = i
}

// context returns the quoting context of a reference at the current state.
func (s *shScanner) context() (qctx, string) {
	for _, f := range s.stack {
		switch f.kind {
		case fBacktick:
			return ctxUnsupported, "inside `...` command substitution (use $(...) instead)"
		case fBrace:
			return ctxUnsupported, "inside ${...} parameter expansion"
		}
	}
	f := s.top()
	switch f.kind {
	case fSingle:
		return ctxSingle, ""
	case fDouble:
		return ctxDouble, ""
	case fDollarSingle:
		return ctxDollarSingle, ""
	case fArith:
		return ctxArith, ""
	case fComment:
		return ctxComment, ""
	case fHeredoc:
		if f.quoted {
			return ctxHeredocQuoted, ""
		}
		return ctxHeredoc, ""
	}
	return ctxBare, ""
}

func isWordBoundary(c byte) bool {
	switch c {
	case ' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>':
		return true
	}
	return false
}

func isWordChar(c byte) bool {
	return c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// inTest reports whether the innermost command context is inside [[ ]].
func (s *shScanner) inTest() bool {
	for j := len(s.stack) - 1; j >= 0; j-- {
		if s.stack[j].kind == fBare {
			return s.stack[j].test > 0
		}
	}
	return false
}

// atWordStart reports whether position i begins a new shell word.
func (s *shScanner) atWordStart(i int) bool {
	return i == 0 || (isWordBoundary(s.src[i-1]) && !escapedAt(s.src, i-1, '\\'))
}

// escapedAt reports whether src[i] is escaped by an odd run of esc
// characters before it (an escaped blank or ';' does not end a word).
func escapedAt(src string, i int, esc byte) bool {
	n := 0
	for j := i - 1; j >= 0 && src[j] == esc; j-- {
		n++
	}
	return n%2 == 1
}

// keywordAt reports whether the keyword kw starts at i as a whole word.
func (s *shScanner) keywordAt(i int, kw string) bool {
	if !s.atWordStart(i) || !strings.HasPrefix(s.src[i:], kw) {
		return false
	}
	j := i + len(kw)
	return j == len(s.src) || !isWordChar(s.src[j])
}

// scan splits the command into literal text and references, each
// reference with the shell context it stands in. One step reads from i
// in the innermost frame and returns where the next step starts.
func (s *shScanner) scan() []piece {
	s.stack = []frame{{kind: fBare}}
	i := 0
	for i < len(s.src) {
		if next, ok := s.ref(i); ok {
			i = next
			continue
		}
		i = s.step(s.top(), i)
	}
	s.flush(len(s.src))
	return s.out
}

// ref records the parameter reference that starts at i, if one does.
func (s *shScanner) ref(i int) (next int, ok bool) {
	if s.src[i] != '{' {
		return i, false
	}
	name, next, ok := matchRef(s.src, i, s.known)
	if !ok {
		return i, false
	}
	f := s.top()
	s.flush(i)
	ctx, why := s.context()
	p := piece{lit: s.src[i:next], ref: name, ctx: ctx, why: why}
	if f.kind == fHeredoc {
		p.delim, p.stripTabs = f.delim, f.stripTabs
	}
	p.inTest = s.inTest()
	s.out = append(s.out, p)
	s.lit = next
	return next, true
}

// step reads src from i in frame f.
func (s *shScanner) step(f *frame, i int) int {
	c := s.src[i]
	switch f.kind {
	case fSingle:
		if c == '\'' {
			s.pop()
		}
		return i + 1
	case fDollarSingle, fBacktick:
		closer := byte('\'')
		if f.kind == fBacktick {
			closer = '`'
		}
		switch c {
		case '\\':
			return i + 2
		case closer:
			s.pop()
		}
		return i + 1
	case fComment:
		if c == '\n' {
			s.pop() // the newline itself belongs to the enclosing frame
			return i
		}
		return i + 1
	case fBrace:
		return s.braceStep(f, i)
	case fArith:
		return s.arithStep(f, i)
	case fDouble:
		switch c {
		case '\\':
			return i + 2
		case '"':
			s.pop()
			return i + 1
		}
		return s.dollar(i)
	case fHeredoc:
		switch {
		case c == '\n':
			return s.heredocLineStart(i + 1)
		case f.quoted:
			return i + 1
		case c == '\\':
			return i + 2
		}
		return s.dollar(i)
	default: // fBare
		return s.bare(i)
	}
}

// escapeOrQuote handles what means the same bare and inside ${ }: a
// backslash escapes the next byte, and a quote opens a quoted frame. ok
// is false for any other byte.
func (s *shScanner) escapeOrQuote(i int) (next int, ok bool) {
	switch s.src[i] {
	case '\\':
		return i + 2, true
	case '\'':
		s.push(frame{kind: fSingle})
		return i + 1, true
	case '"':
		s.push(frame{kind: fDouble})
		return i + 1, true
	}
	return 0, false
}

// braceStep reads src from i inside ${ }.
func (s *shScanner) braceStep(f *frame, i int) int {
	if next, ok := s.escapeOrQuote(i); ok {
		return next
	}
	switch s.src[i] {
	case '{':
		f.depth++
		return i + 1
	case '}':
		if f.depth == 0 {
			s.pop()
		} else {
			f.depth--
		}
		return i + 1
	}
	return s.dollar(i)
}

// arithStep reads src from i inside $(( )) or $[ ].
func (s *shScanner) arithStep(f *frame, i int) int {
	src, c := s.src, s.src[i]
	switch {
	case f.bracket && c == '[':
		f.depth++
		return i + 1
	case f.bracket && c == ']':
		if f.depth == 0 {
			s.pop()
		} else {
			f.depth--
		}
		return i + 1
	case f.bracket:
		return s.dollar(i)
	case c == '(':
		f.depth++
		return i + 1
	case c == ')':
		if f.depth == 0 && i+1 < len(src) && src[i+1] == ')' {
			s.pop()
			return i + 2
		}
		if f.depth > 0 {
			f.depth--
		}
		return i + 1
	}
	return s.dollar(i)
}

// dollar handles the expansions that open a frame in bare, double-quoted,
// arithmetic, brace and here-document contexts: $( $(( ${ and `.
// It returns the next index.
func (s *shScanner) dollar(i int) int {
	src := s.src
	c := src[i]
	if c == '`' {
		s.push(frame{kind: fBacktick})
		return i + 1
	}
	if c != '$' || i+1 >= len(src) {
		return i + 1
	}
	switch src[i+1] {
	case '$':
		return i + 2 // $$, the shell's process id
	case '(':
		if i+2 < len(src) && src[i+2] == '(' {
			s.push(frame{kind: fArith})
			return i + 3
		}
		s.push(frame{kind: fBare, sub: true})
		return i + 2
	case '{':
		s.push(frame{kind: fBrace})
		return i + 2
	case '[':
		s.push(frame{kind: fArith, bracket: true})
		return i + 2
	}
	return i + 1
}

func (s *shScanner) bare(i int) int {
	src := s.src
	f := s.top()
	c := src[i]
	if next, ok := s.escapeOrQuote(i); ok {
		return next
	}
	switch c {
	case '$':
		if i+1 < len(src) {
			switch src[i+1] {
			case '\'':
				if s.bash {
					s.push(frame{kind: fDollarSingle})
					return i + 2
				}
			case '"':
				if s.bash {
					s.push(frame{kind: fDouble})
					return i + 2
				}
			}
		}
		return s.dollar(i)
	case '`':
		return s.dollar(i)
	case '#':
		if s.atWordStart(i) {
			s.push(frame{kind: fComment})
		}
		return i + 1
	case '<', '>':
		if i+1 < len(src) && src[i+1] == '(' {
			s.push(frame{kind: fBare, sub: true})
			return i + 2
		}
		if c == '<' && strings.HasPrefix(src[i:], "<<") {
			if strings.HasPrefix(src[i:], "<<<") {
				return i + 3
			}
			return s.heredocOp(i)
		}
		return i + 1
	case '(':
		if s.atWordStart(i) && i+1 < len(src) && src[i+1] == '(' {
			s.push(frame{kind: fArith})
			return i + 2
		}
		f.depth++
		return i + 1
	case ')':
		switch {
		case f.depth > 0:
			f.depth--
		case f.caseDepth > 0:
			// a case pattern terminator
		case f.sub:
			s.pop()
		}
		return i + 1
	case '\n':
		if len(s.pending) > 0 {
			return s.heredocLineStart(i + 1)
		}
		return i + 1
	case '[':
		if s.atWordStart(i) && strings.HasPrefix(src[i:], "[[") && (i+2 == len(src) || src[i+2] == ' ' || src[i+2] == '\t') {
			f.test++
			return i + 2
		}
	case ']':
		if f.test > 0 && strings.HasPrefix(src[i:], "]]") && (i+2 == len(src) || isWordBoundary(src[i+2])) {
			f.test--
			return i + 2
		}
	case 'c':
		if s.keywordAt(i, "case") {
			f.caseDepth++
			return i + 4
		}
	case 'e':
		if s.keywordAt(i, "esac") && f.caseDepth > 0 {
			f.caseDepth--
			return i + 4
		}
	}
	return i + 1
}

// heredocOp parses "<<[-] WORD" at i and queues the here-document. The
// delimiter word is left as literal text (a reference inside it is never
// substituted, so the body's end is fixed by the template alone).
func (s *shScanner) heredocOp(i int) int {
	src := s.src
	j := i + 2
	h := heredocSpec{}
	if j < len(src) && src[j] == '-' {
		h.stripTabs = true
		j++
	}
	for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
		j++
	}
	var b strings.Builder
	for j < len(src) {
		c := src[j]
		if c == '\'' || c == '"' {
			h.quoted = true
			end := strings.IndexByte(src[j+1:], c)
			if end < 0 {
				b.WriteString(src[j+1:])
				j = len(src)
				break
			}
			b.WriteString(src[j+1 : j+1+end])
			j += end + 2
			continue
		}
		if c == '\\' && j+1 < len(src) {
			h.quoted = true
			b.WriteByte(src[j+1])
			j += 2
			continue
		}
		if isWordBoundary(c) {
			break
		}
		b.WriteByte(c)
		j++
	}
	h.delim = b.String()
	if h.delim != "" {
		s.pending = append(s.pending, h)
	}
	// The delimiter text is plain literal; references in it are not matched
	// because the scan resumes after it.
	return j
}

// heredocLineStart is called at the start of a line while a here-document
// is pending or open. It closes bodies whose delimiter line is at i and
// opens the next pending one. It returns the next index to scan.
func (s *shScanner) heredocLineStart(i int) int {
	for {
		if f := s.top(); f.kind == fHeredoc {
			line, next := logicalLine(s.src, i, !f.quoted, f.stripTabs)
			if line != f.delim {
				return i
			}
			s.pop()
			i = next
			if len(s.pending) == 0 {
				return i
			}
		}
		if len(s.pending) == 0 {
			return i
		}
		h := s.pending[0]
		s.pending = s.pending[1:]
		s.push(frame{kind: fHeredoc, delim: h.delim, stripTabs: h.stripTabs, quoted: h.quoted})
	}
}

// logicalLine returns the here-document line starting at i as bash
// compares it with the delimiter, and the index after it. In the body of
// an unquoted here-document (join) a backslash-newline joins the next line
// first, so "E\<newline>OF" ends a body delimited by EOF; with <<- leading
// tabs of each line are dropped.
func logicalLine(src string, i int, join, stripTabs bool) (string, int) {
	var b strings.Builder
	for {
		line, next := lineAt(src, i)
		if stripTabs {
			line = strings.TrimLeft(line, "\t")
		}
		if join && next > i && next <= len(src) && strings.HasSuffix(line, "\\") && !escapedAt(line, len(line)-1, '\\') &&
			next-1 < len(src) && src[next-1] == '\n' {
			b.WriteString(line[:len(line)-1])
			i = next
			continue
		}
		b.WriteString(line)
		return b.String(), next
	}
}

// lineAt returns the line starting at i (without its newline) and the
// index after its newline.
func lineAt(src string, i int) (string, int) {
	if i >= len(src) {
		return "", len(src)
	}
	end := strings.IndexByte(src[i:], '\n')
	if end < 0 {
		return src[i:], len(src)
	}
	return src[i : i+end], i + end + 1
}

// ---- PowerShell ------------------------------------------------------------

func isPwshSingleQuote(r rune) bool {
	return r == '\'' || r == '\u2018' || r == '\u2019' || r == '\u201a' || r == '\u201b'
}

func isPwshDoubleQuote(r rune) bool {
	return r == '"' || r == '\u201c' || r == '\u201d' || r == '\u201e'
}

type pframe struct {
	kind  int // 0 bare, 1 single, 2 double, 3 comment, 4 block comment, 5 here-string
	sub   bool
	depth int
}

// pwshScanner tracks PowerShell quoting: '...' (with doubled quotes),
// "..." (with ` escapes and $( ) subexpressions), comments and
// here-strings. References inside here-strings are refused.
type pwshScanner struct {
	src   string
	known func(string) bool
	stack []pframe
	out   []piece
	lit   int
}

func (s *pwshScanner) scan() []piece {
	s.stack = []pframe{{}}
	src := s.src
	i := 0
	for i < len(src) {
		f := &s.stack[len(s.stack)-1]
		if src[i] == '{' {
			if name, next, ok := matchRef(src, i, s.known); ok {
				if s.lit < i {
					s.out = append(s.out, piece{lit: src[s.lit:i]})
				}
				p := piece{lit: src[i:next], ref: name}
				switch f.kind {
				case 1:
					p.ctx = ctxPwshSingle
				case 2:
					p.ctx = ctxPwshDouble
				case 3, 4:
					p.ctx = ctxPwshComment
				case 5:
					p.ctx, p.why = ctxUnsupported, "inside a PowerShell here-string"
				default:
					p.ctx = ctxPwshBare
				}
				s.out = append(s.out, p)
				i, s.lit = next, next
				continue
			}
		}
		r, size := decodeRune(src[i:])
		switch f.kind {
		case 1: // '...'
			if isPwshSingleQuote(r) {
				if r2, size2 := decodeRune(src[i+size:]); isPwshSingleQuote(r2) {
					i += size + size2
					continue
				}
				s.stack = s.stack[:len(s.stack)-1]
			}
			i += size
		case 2: // "..."
			switch {
			case r == '`':
				_, size2 := decodeRune(src[i+size:])
				i += size + size2
				continue
			case isPwshDoubleQuote(r):
				if r2, size2 := decodeRune(src[i+size:]); isPwshDoubleQuote(r2) {
					i += size + size2
					continue
				}
				s.stack = s.stack[:len(s.stack)-1]
			case r == '$' && strings.HasPrefix(src[i+1:], "("):
				s.stack = append(s.stack, pframe{sub: true})
				i += 2
				continue
			}
			i += size
		case 3: // # comment
			if r == '\n' {
				s.stack = s.stack[:len(s.stack)-1]
				continue
			}
			i += size
		case 4: // <# #>
			if strings.HasPrefix(src[i:], "#>") {
				s.stack = s.stack[:len(s.stack)-1]
				i += 2
				continue
			}
			i += size
		case 5: // here-string, ends at a line starting with '@ or "@
			if r == '\n' && (strings.HasPrefix(src[i+1:], "'@") || strings.HasPrefix(src[i+1:], "\"@")) {
				s.stack = s.stack[:len(s.stack)-1]
				i += 3
				continue
			}
			i += size
		default:
			switch {
			case r == '`':
				_, size2 := decodeRune(src[i+size:])
				i += size + size2
				continue
			case r == '@' && (strings.HasPrefix(src[i+1:], "'\n") || strings.HasPrefix(src[i+1:], "\"\n") ||
				strings.HasPrefix(src[i+1:], "'\r\n") || strings.HasPrefix(src[i+1:], "\"\r\n")):
				s.stack = append(s.stack, pframe{kind: 5})
				i += 2
				continue
			case isPwshSingleQuote(r):
				s.stack = append(s.stack, pframe{kind: 1})
			case isPwshDoubleQuote(r):
				s.stack = append(s.stack, pframe{kind: 2})
			case r == '<' && strings.HasPrefix(src[i+1:], "#"):
				s.stack = append(s.stack, pframe{kind: 4})
				i += 2
				continue
			case r == '#' && (i == 0 || (isWordBoundary(src[i-1]) && !escapedAt(src, i-1, '`'))):
				s.stack = append(s.stack, pframe{kind: 3})
			case r == '$' && strings.HasPrefix(src[i+1:], "("):
				s.stack = append(s.stack, pframe{sub: true})
				i += 2
				continue
			case r == '(':
				f.depth++
			case r == ')':
				if f.depth > 0 {
					f.depth--
				} else if f.sub {
					s.stack = s.stack[:len(s.stack)-1]
				}
			}
			i += size
		}
	}
	if s.lit < len(src) {
		s.out = append(s.out, piece{lit: src[s.lit:]})
	}
	return s.out
}

// ---- run: (argv) -----------------------------------------------------------

// splitArgv splits a `run:` template into words: blanks separate words,
// '...' is literal, "..." is literal except that \ escapes \ " $ and `,
// and a backslash outside quotes takes the next character literally.
// References are substituted into the word they appear in, never split.
func splitArgv(src string, known func(string) bool) []argWord {
	var words []argWord
	var cur argWord
	var lit strings.Builder
	inWord := false
	flushLit := func() {
		if lit.Len() > 0 {
			cur.pieces = append(cur.pieces, piece{lit: lit.String()})
			lit.Reset()
		}
	}
	endWord := func() {
		if inWord {
			flushLit()
			words = append(words, cur)
		}
		cur = argWord{}
		inWord = false
	}
	quote := byte(0)
	for i := 0; i < len(src); {
		c := src[i]
		if c == '{' {
			if name, next, ok := matchRef(src, i, known); ok {
				flushLit()
				cur.pieces = append(cur.pieces, piece{lit: src[i:next], ref: name, ctx: ctxArgv})
				inWord = true
				i = next
				continue
			}
		}
		switch quote {
		case '\'':
			if c == '\'' {
				quote = 0
			} else {
				lit.WriteByte(c)
			}
			i++
			continue
		case '"':
			switch {
			case c == '"':
				quote = 0
			case c == '\\' && i+1 < len(src) && strings.IndexByte("\\\"$`", src[i+1]) >= 0:
				lit.WriteByte(src[i+1])
				i++
			default:
				lit.WriteByte(c)
			}
			i++
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			endWord()
		case '\'', '"':
			quote = c
			cur.quoted = true
			inWord = true
		case '\\':
			inWord = true
			if i+1 < len(src) {
				if src[i+1] != '\n' {
					lit.WriteByte(src[i+1])
				}
				i++
			}
		default:
			inWord = true
			lit.WriteByte(c)
		}
		i++
	}
	endWord()
	return words
}
