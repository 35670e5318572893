package pathglob

import (
	"strings"
	"unicode/utf8"
)

// Within reports whether the absolute path p is dir or lies under it;
// "/" holds every absolute path. It is the one path-containment test of
// sandboxed: both are clean paths, and no glob is read.
func Within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// Meta are the characters that make a pattern a glob; every other
// character is literal.
const Meta = "*?"

// HasMeta reports whether pattern holds a glob character, i.e. whether it
// can match anything but itself.
func HasMeta(pattern string) bool { return strings.ContainsAny(pattern, Meta) }

// Pattern is a compiled path glob. Matching takes time at most
// proportional to the pattern's length times the name's, whatever the
// pattern, and works on bytes: names need not be valid UTF-8.
type Pattern struct {
	raw  string
	toks []token
}

type tokenKind uint8

const (
	tokLit   tokenKind = iota // the bytes of lit
	tokOne                    // ?: one character other than '/'
	tokStar                   // *: any characters other than '/'
	tokAny                    // ** not a whole element: any characters
	tokElems                  // **/ at an element's start: zero or more whole elements
	tokUnder                  // a trailing /** or a tree pattern: the end, or '/' and anything
)

type token struct {
	kind tokenKind
	lit  string
}

// Compile compiles pattern for exact matches and, with tree set, for
// matches of the path or anything under it. With tree set, a pattern
// ending in "/" names the same directory as without the slash: a rule
// that protects what is under a directory must also match the directory,
// because a grant of the directory exposes everything under it. Every
// pattern compiles.
func Compile(pattern string, tree bool) *Pattern {
	raw := pattern
	if tree {
		if t := strings.TrimRight(pattern, "/"); t != "" {
			pattern = t
		}
	}
	var toks []token
	lit := func(s string) {
		if n := len(toks); n > 0 && toks[n-1].kind == tokLit {
			toks[n-1].lit += s
			return
		}
		toks = append(toks, token{kind: tokLit, lit: s})
	}
	s := pattern
	for i := 0; i < len(s); i++ {
		atStart := i == 0 || s[i-1] == '/'
		switch {
		case atStart && strings.HasPrefix(s[i:], "**/"):
			toks = append(toks, token{kind: tokElems})
			i += 2
		case i > 0 && s[i-1] == '/' && s[i:] == "**":
			// "a/**": a itself and everything under it. Take the slash
			// already written back into the token.
			last := &toks[len(toks)-1]
			last.lit = strings.TrimSuffix(last.lit, "/")
			if last.lit == "" {
				toks = toks[:len(toks)-1]
			}
			toks = append(toks, token{kind: tokUnder})
			i++
		case strings.HasPrefix(s[i:], "**"):
			toks = append(toks, token{kind: tokAny})
			i++
		case s[i] == '*':
			toks = append(toks, token{kind: tokStar})
		case s[i] == '?':
			toks = append(toks, token{kind: tokOne})
		default:
			lit(s[i : i+1])
		}
	}
	if tree && (len(toks) == 0 || toks[len(toks)-1].kind != tokUnder) {
		if strings.HasSuffix(s, "/") {
			toks = append(toks, token{kind: tokAny}) // only "/": every absolute path
		} else {
			toks = append(toks, token{kind: tokUnder})
		}
	}
	return &Pattern{raw: raw, toks: toks}
}

// String returns the pattern as written.
func (p *Pattern) String() string { return p.raw }

// Match reports whether name matches the pattern (and, for a pattern
// compiled with tree, whether name is under a match).
func (p *Pattern) Match(name string) bool {
	m := matcher{toks: p.toks, name: name}
	if p.stars() > 1 {
		m.failed = make([]bool, (len(p.toks)+1)*(len(name)+1))
	}
	return m.at(0, 0)
}

func (p *Pattern) stars() int {
	n := 0
	for _, t := range p.toks {
		if t.kind == tokStar || t.kind == tokAny || t.kind == tokElems {
			n++
		}
	}
	return n
}

// matcher matches tokens against a name by backtracking; failed
// remembers the (token, offset) pairs already tried and failed, which
// bounds the work when a pattern has several stars.
type matcher struct {
	toks   []token
	name   string
	failed []bool
}

func (m *matcher) at(ti, ni int) bool {
	if m.failed != nil {
		k := ti*(len(m.name)+1) + ni
		if m.failed[k] {
			return false
		}
		if m.step(ti, ni) {
			return true
		}
		m.failed[k] = true
		return false
	}
	return m.step(ti, ni)
}

func (m *matcher) step(ti, ni int) bool {
	name := m.name
	if ti == len(m.toks) {
		return ni == len(name)
	}
	t := m.toks[ti]
	switch t.kind {
	case tokLit:
		return strings.HasPrefix(name[ni:], t.lit) && m.at(ti+1, ni+len(t.lit))
	case tokOne:
		if ni == len(name) || name[ni] == '/' {
			return false
		}
		_, w := utf8.DecodeRuneInString(name[ni:])
		return m.at(ti+1, ni+w)
	case tokStar, tokAny:
		for j := ni; ; {
			if m.at(ti+1, j) {
				return true
			}
			if j == len(name) || t.kind == tokStar && name[j] == '/' {
				return false
			}
			_, w := utf8.DecodeRuneInString(name[j:])
			j += w
		}
	case tokElems:
		if m.at(ti+1, ni) {
			return true
		}
		for j := ni; j < len(name); j++ {
			if name[j] == '/' && m.at(ti+1, j+1) {
				return true
			}
		}
		return false
	case tokUnder:
		// Always the last token.
		return ni == len(name) || name[ni] == '/'
	}
	return false
}

// Match reports whether name matches pattern exactly (see the package's
// grammar).
func Match(pattern, name string) bool { return Compile(pattern, false).Match(name) }
