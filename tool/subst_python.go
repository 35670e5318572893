package tool

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ---- Python ----------------------------------------------------------------
//
// A `python:` body (and `script:` with shell python or python3) is run as
// `python3 -c BODY`. Its references are placed by the quoting they sit in,
// as a shell script's are:
//
//	'...', "...", '''...''', """..."""   a literal of that string: \ and
//	                                      both quotes backslash-escaped,
//	                                      line breaks and other control
//	                                      characters as \n, \r, \t, \xNN
//	b'...' (bytes)                        the same, and every byte of a
//	                                      character outside ASCII as \xNN
//	# comment                             line breaks become spaces
//	bare code                             only a number or true/false (as
//	                                      True/False), in parentheses:
//	                                      data.head({NUM_ROWS})
//	f'...' (f-strings), r'...' (raw)      refused: braces in an f-string
//	                                      are code, and a raw string cannot
//	                                      hold every quote
//
// A value that is not valid UTF-8 is refused: Python source is text.

// Python quoting contexts.
const (
	ctxPyString  qctx = iota + 100 // inside a string literal
	ctxPyBytes                     // inside a bytes literal
	ctxPyComment                   // inside a # comment
	ctxPyBare                      // in code
)

func init() {
	ctxNames[ctxPyString] = "a Python string literal"
	ctxNames[ctxPyBytes] = "a Python bytes literal"
	ctxNames[ctxPyComment] = "a Python comment"
	ctxNames[ctxPyBare] = "Python code"
}

// pyNumberRe is a number Python reads as a literal (JSON's grammar: no
// leading zeros, which Python refuses).
var pyNumberRe = lazyRegexp(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// scanPython finds the references of a Python program and the quoting
// each sits in.
func scanPython(src string, known func(string) bool) []piece {
	var out []piece
	lit := 0
	flush := func(i int) {
		if lit < i {
			out = append(out, piece{lit: src[lit:i]})
		}
		lit = i
	}
	ref := func(i int, ctx qctx, why string) (int, bool) {
		name, next, ok := matchRefPy(src, i, known)
		if !ok {
			return i, false
		}
		flush(i)
		out = append(out, piece{lit: src[i:next], ref: name, ctx: ctx, why: why})
		lit = next
		return next, true
	}
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '{':
			if next, ok := ref(i, ctxPyBare, ""); ok {
				i = next
				continue
			}
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				if next, ok := ref(i, ctxPyComment, ""); ok {
					i = next
					continue
				}
				i++
			}
		case c == '\'' || c == '"':
			// The string's prefix letters are just before it.
			j := i
			for j > 0 && j > i-2 && isPyPrefixChar(src[j-1]) {
				j--
			}
			if j > 0 && isPyIdentChar(src[j-1]) {
				j = i // part of a name: not a prefix
			}
			prefix := strings.ToLower(src[j:i])
			quote := string(c)
			if strings.HasPrefix(src[i:], strings.Repeat(quote, 3)) {
				quote = strings.Repeat(quote, 3)
			}
			ctx, why := ctxPyString, ""
			raw := strings.Contains(prefix, "r")
			switch {
			case strings.ContainsAny(prefix, "ft"):
				ctx, why = ctxUnsupported, "inside a Python f-string, where braces are Python expressions"
			case raw:
				ctx, why = ctxUnsupported, "inside a Python raw string, which cannot hold every quote and backslash"
			case strings.Contains(prefix, "b"):
				ctx = ctxPyBytes
			}
			i += len(quote)
			for i < len(src) {
				if strings.HasPrefix(src[i:], quote) {
					i += len(quote)
					break
				}
				if src[i] == '\\' && i+1 < len(src) && src[i+1] != '{' {
					i += 2
					continue
				}
				if src[i] == '\n' && len(quote) == 1 {
					break // an unterminated string: Python will say so
				}
				if next, ok := ref(i, ctx, why); ok {
					i = next
					continue
				}
				i++
			}
		default:
			i++
		}
	}
	flush(len(src))
	return out
}

// matchRefPy is matchRef without the shell's ${ exception: in Python a
// '$' before a brace is an ordinary character.
func matchRefPy(src string, i int, known func(string) bool) (string, int, bool) {
	if i > 0 && src[i-1] == '$' {
		name, next, ok := matchRef(src[i:], 0, known)
		return name, i + next, ok
	}
	return matchRef(src, i, known)
}

func isPyPrefixChar(c byte) bool {
	switch c {
	case 'r', 'R', 'b', 'B', 'u', 'U', 'f', 'F', 't', 'T':
		return true
	}
	return false
}

func isPyIdentChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// escapePython makes v literal in a Python context.
func escapePython(ctx qctx, name, v string) (string, error) {
	if !utf8.ValidString(v) {
		return "", fmt.Errorf("substitute {%s} into Python: the value is not valid UTF-8, which Python source cannot hold: %w", name, ErrUnsafeValue)
	}
	switch ctx {
	case ctxPyComment:
		// Python's tokenizer ends a line at \n and \r only.
		return strings.NewReplacer("\n", " ", "\r", " ").Replace(v), nil
	case ctxPyBare:
		// In parentheses, so the literal never joins the code around it
		// (x{N} is not the name x5, {N}0 is not 50).
		switch {
		case pyNumberRe().MatchString(v):
			return "(" + v + ")", nil
		case v == "true":
			return "(True)", nil
		case v == "false":
			return "(False)", nil
		}
		return "", fmt.Errorf("substitute {%s} into Python code: %q is not a number or true/false, the only values that may stand bare in code; put the reference inside quotes ('{%s}') to pass it as a string: %w", name, clip(v, 40), name, ErrUnsafeValue)
	}
	bytesLit := ctx == ctxPyBytes
	var b strings.Builder
	b.Grow(len(v) + 8)
	for _, r := range v {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\'':
			b.WriteString(`\'`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && bytesLit:
			var buf [4]byte
			n := utf8.EncodeRune(buf[:], r)
			for _, c := range buf[:n] {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), nil
}
