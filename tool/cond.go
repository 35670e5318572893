package tool

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Run conditions are small boolean expressions, evaluated by sandboxed and
// never by a shell:
//
//	expr    = or
//	or      = and { "||" and }
//	and     = unary { "&&" unary }
//	unary   = "!" unary | "(" or ")" | compare
//	compare = operand [ ("==" | "!=" | "<" | "<=" | ">" | ">=") operand ]
//	operand = one or more adjacent parts: a bare word, a quoted string
//	          ("..." with \" and \\ escapes, or '...'), or a reference {NAME}
//
// Quoting: the expression is parsed from the template as written, before
// any value is known. A reference ({PARAM}, {step.output}, {step.exit-code})
// is a value bound into the operand it sits in, never text that is lexed, so
// an output containing `==`, `)` or a quote cannot change the expression.
// Inside a quoted string a reference adds its value to the string.
//
// Comparison: when both sides read as numbers they compare as numbers,
// otherwise as strings (byte order). An operand on its own is true unless
// it is empty, "0" or "false" (any case).

// ErrCondition is a run-condition that does not parse or cannot be evaluated.
var ErrCondition = errors.New("invalid run-condition")

// maxCondDepth bounds nesting so a hostile condition cannot exhaust the stack.
const maxCondDepth = 64

// Condition is a parsed run-condition.
type Condition struct {
	src  string
	root condNode
	refs []string
}

// condPart is one part of an operand: literal text or a reference.
type condPart struct {
	lit string
	ref string
}

type condNode interface {
	eval(lookup func(string) string) (value string, isBool, b bool)
}

type (
	condOperand struct{ parts []condPart }
	condNot     struct{ x condNode }
	condAnd     struct{ l, r condNode }
	condOr      struct{ l, r condNode }
	condCompare struct {
		op   string
		l, r condNode
	}
)

func (o condOperand) text(lookup func(string) string) string {
	var b strings.Builder
	for _, p := range o.parts {
		if p.ref != "" {
			b.WriteString(lookup(p.ref))
		} else {
			b.WriteString(p.lit)
		}
	}
	return b.String()
}

func (o condOperand) eval(lookup func(string) string) (string, bool, bool) {
	return o.text(lookup), false, false
}

func truthy(n condNode, lookup func(string) string) bool {
	v, isBool, b := n.eval(lookup)
	if isBool {
		return b
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false":
		return false
	}
	return true
}

func (n condNot) eval(lookup func(string) string) (string, bool, bool) {
	return "", true, !truthy(n.x, lookup)
}

func (n condAnd) eval(lookup func(string) string) (string, bool, bool) {
	return "", true, truthy(n.l, lookup) && truthy(n.r, lookup)
}

func (n condOr) eval(lookup func(string) string) (string, bool, bool) {
	return "", true, truthy(n.l, lookup) || truthy(n.r, lookup)
}

func (n condCompare) eval(lookup func(string) string) (string, bool, bool) {
	l, r := valueOf(n.l, lookup), valueOf(n.r, lookup)
	c := 0
	lf, lerr := strconv.ParseFloat(strings.TrimSpace(l), 64)
	rf, rerr := strconv.ParseFloat(strings.TrimSpace(r), 64)
	if lerr == nil && rerr == nil && strings.TrimSpace(l) != "" && strings.TrimSpace(r) != "" {
		switch {
		case lf < rf:
			c = -1
		case lf > rf:
			c = 1
		}
	} else {
		c = strings.Compare(l, r)
	}
	switch n.op {
	case "==":
		return "", true, c == 0
	case "!=":
		return "", true, c != 0
	case "<":
		return "", true, c < 0
	case "<=":
		return "", true, c <= 0
	case ">":
		return "", true, c > 0
	default: // ">="
		return "", true, c >= 0
	}
}

// valueOf is the text of a node for comparison; a boolean sub-expression
// compares as "true" or "false".
func valueOf(n condNode, lookup func(string) string) string {
	v, isBool, b := n.eval(lookup)
	if isBool {
		return strconv.FormatBool(b)
	}
	return v
}

// ParseCondition parses a run-condition as written in a definition; names
// between braces that look like references ({NAME}, {step.exit-code}) are
// references.
func ParseCondition(text string) (*Condition, error) {
	return parseConditionPieces(text, scanPlain(text, func(string) bool { return true }))
}

func parseConditionPieces(src string, pieces []piece) (*Condition, error) {
	toks, err := lexCondition(pieces)
	if err != nil {
		return nil, fmt.Errorf("parse run-condition %q: %v: %w", src, err, ErrCondition)
	}
	p := &condParser{toks: toks}
	if len(toks) == 0 {
		return nil, fmt.Errorf("parse run-condition %q: it is empty: %w", src, ErrCondition)
	}
	root, err := p.or(0)
	if err == nil && p.i < len(p.toks) {
		err = fmt.Errorf("unexpected %s", p.toks[p.i].describe())
	}
	if err != nil {
		return nil, fmt.Errorf("parse run-condition %q: %v: %w", src, err, ErrCondition)
	}
	c := &Condition{src: src, root: root}
	seen := map[string]bool{}
	for _, t := range toks {
		for _, part := range t.parts {
			if part.ref != "" && !seen[part.ref] {
				seen[part.ref] = true
				c.refs = append(c.refs, part.ref)
			}
		}
	}
	return c, nil
}

// String returns the condition as written.
func (c *Condition) String() string { return c.src }

// Refs returns the references the condition uses, in order of appearance.
func (c *Condition) Refs() []string { return append([]string(nil), c.refs...) }

// Eval evaluates the condition; lookup returns the value of a reference
// (the empty string for one without a value).
func (c *Condition) Eval(lookup func(ref string) string) bool {
	return truthy(c.root, lookup)
}

// condition parses the step's run-condition from its template, so that
// values are bound as literals (see the grammar above).
func (s *BoundStep) condition() (*Condition, error) {
	if s.condTmpl == nil {
		if strings.TrimSpace(s.RunCondition) == "" {
			return nil, nil
		}
		return ParseCondition(s.RunCondition)
	}
	if strings.TrimSpace(s.condTmpl.src) == "" {
		return nil, nil
	}
	return parseConditionPieces(s.condTmpl.src, s.condTmpl.pieces)
}

// ConditionRefs returns the steps the run-condition reads results of.
func (s *BoundStep) ConditionRefs() []string {
	c, err := s.condition()
	if err != nil || c == nil {
		return nil
	}
	var out []string
	for _, r := range c.refs {
		if step, _, ok := strings.Cut(r, "."); ok {
			out = append(out, step)
		}
	}
	return out
}

// EvalCondition reports whether the step should run: true when it has no
// run-condition. Parameters and step results are bound as literal values
// (never re-parsed). A step that did not run reads as an empty output and
// an empty exit code, so `{x.exit-code} == 0` is false for a skipped x.
func (s *BoundStep) EvalCondition(outputs map[string]StepOutput) (bool, error) {
	c, err := s.condition()
	if err != nil || c == nil {
		return c == nil && err == nil, err
	}
	var res resolveFunc
	if s.b != nil {
		res = s.b.resolver(outputs, false, false)
	}
	var lookupErr error
	ok := c.Eval(func(ref string) string {
		if res == nil {
			return ""
		}
		if step, _, isStep := strings.Cut(ref, "."); isStep {
			if _, ran := outputs[step]; !ran {
				return ""
			}
		}
		text, _, found, err := res(ref)
		if err != nil && lookupErr == nil {
			lookupErr = err
		}
		if !found {
			return ""
		}
		return text
	})
	if lookupErr != nil {
		return false, fmt.Errorf("evaluate run-condition of step %s: %w", s.Name, lookupErr)
	}
	return ok, nil
}

// ---- lexer ------------------------------------------------------------------

type condTok struct {
	op    string     // operator or parenthesis; "" for an operand
	parts []condPart // operand parts
}

func (t condTok) describe() string {
	if t.op != "" {
		return fmt.Sprintf("%q", t.op)
	}
	return "operand"
}

func isCondSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isCondOpStart(c byte) bool {
	return c == '(' || c == ')' || c == '!' || c == '&' || c == '|' || c == '=' || c == '<' || c == '>'
}

// lexCondition turns template pieces into tokens. References always become
// operand parts; only literal template text is lexed.
func lexCondition(pieces []piece) ([]condTok, error) {
	var toks []condTok
	var cur *condTok // operand being built (adjacent parts join)
	flush := func() {
		if cur != nil {
			toks = append(toks, *cur)
			cur = nil
		}
	}
	addPart := func(p condPart) {
		if cur == nil {
			cur = &condTok{}
		}
		cur.parts = append(cur.parts, p)
	}
	var quote byte // open quote, carried across pieces
	for _, pc := range pieces {
		if pc.ref != "" {
			addPart(condPart{ref: pc.ref})
			continue
		}
		s := pc.lit
		for i := 0; i < len(s); {
			c := s[i]
			if quote != 0 {
				switch {
				case c == quote:
					quote = 0
					i++
				case c == '\\' && quote == '"' && i+1 < len(s):
					addPart(condPart{lit: s[i+1 : i+2]})
					i += 2
				default:
					j := i
					for j < len(s) && s[j] != quote && !(s[j] == '\\' && quote == '"') {
						j++
					}
					if j == i { // a lone backslash at the end of the piece
						j = i + 1
					}
					addPart(condPart{lit: s[i:j]})
					i = j
				}
				continue
			}
			switch {
			case isCondSpace(c):
				flush()
				i++
			case c == '"' || c == '\'':
				quote = c
				if cur == nil {
					cur = &condTok{}
				}
				cur.parts = append(cur.parts, condPart{}) // an empty string is still an operand
				i++
			case isCondOpStart(c):
				flush()
				op := string(c)
				if i+1 < len(s) {
					two := s[i : i+2]
					switch two {
					case "&&", "||", "==", "!=", "<=", ">=":
						op = two
					}
				}
				switch op {
				case "&", "|", "=":
					return nil, fmt.Errorf("unknown operator %q (use &&, || or ==)", op)
				}
				toks = append(toks, condTok{op: op})
				i += len(op)
			default:
				j := i
				for j < len(s) && !isCondSpace(s[j]) && !isCondOpStart(s[j]) && s[j] != '"' && s[j] != '\'' {
					j++
				}
				addPart(condPart{lit: s[i:j]})
				i = j
			}
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	flush()
	return toks, nil
}

// ---- parser -----------------------------------------------------------------

type condParser struct {
	toks []condTok
	i    int
}

func (p *condParser) peek() string {
	if p.i < len(p.toks) {
		if p.toks[p.i].op == "" {
			return "operand"
		}
		return p.toks[p.i].op
	}
	return ""
}

func (p *condParser) or(depth int) (condNode, error) {
	return p.chain(depth, "||", p.and, func(l, r condNode) condNode { return condOr{l, r} })
}

func (p *condParser) and(depth int) (condNode, error) {
	return p.chain(depth, "&&", p.unary, func(l, r condNode) condNode { return condAnd{l, r} })
}

// chain parses operands of next joined by op, left-associative.
func (p *condParser) chain(depth int, op string, next func(int) (condNode, error), join func(l, r condNode) condNode) (condNode, error) {
	l, err := next(depth)
	if err != nil {
		return nil, err
	}
	for p.peek() == op {
		p.i++
		r, err := next(depth)
		if err != nil {
			return nil, err
		}
		l = join(l, r)
	}
	return l, nil
}

func (p *condParser) unary(depth int) (condNode, error) {
	if depth > maxCondDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxCondDepth)
	}
	switch p.peek() {
	case "!":
		p.i++
		x, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return condNot{x}, nil
	case "(":
		x, err := p.paren(depth)
		if err != nil {
			return nil, err
		}
		return p.compareRest(x, depth)
	}
	return p.compare(depth)
}

// paren parses "( expression )" at the current token, which is "(".
func (p *condParser) paren(depth int) (condNode, error) {
	p.i++
	x, err := p.or(depth + 1)
	if err != nil {
		return nil, err
	}
	if p.peek() != ")" {
		return nil, errors.New("missing )")
	}
	p.i++
	return x, nil
}

func isCompareOp(op string) bool {
	switch op {
	case "==", "!=", "<", "<=", ">", ">=":
		return true
	}
	return false
}

func (p *condParser) compare(depth int) (condNode, error) {
	switch p.peek() {
	case "operand":
		l := condOperand{parts: p.toks[p.i].parts}
		p.i++
		return p.compareRest(l, depth)
	case "":
		return nil, errors.New("unexpected end; an operand is missing")
	}
	return nil, fmt.Errorf("unexpected %q where an operand belongs", p.peek())
}

func (p *condParser) compareRest(l condNode, depth int) (condNode, error) {
	op := p.peek()
	if !isCompareOp(op) {
		return l, nil
	}
	p.i++
	var r condNode
	switch p.peek() {
	case "operand":
		r = condOperand{parts: p.toks[p.i].parts}
		p.i++
	case "(":
		x, err := p.paren(depth)
		if err != nil {
			return nil, err
		}
		r = x
	case "":
		return nil, fmt.Errorf("unexpected end after %q", op)
	default:
		return nil, fmt.Errorf("unexpected %q after %q", p.peek(), op)
	}
	if isCompareOp(p.peek()) {
		return nil, fmt.Errorf("comparisons do not chain (%s … %s); use && between them", op, p.peek())
	}
	return condCompare{op: op, l: l, r: r}, nil
}
