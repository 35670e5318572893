// Package safetext makes text that others chose (paths, file contents, a
// tool's output) safe to show on a terminal: control characters, C1
// controls and invalid UTF-8 become visible escapes, so the text cannot
// move the cursor, clear the screen or forge a prompt.
package safetext

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Append appends p to dst with every control character but newline and
// tab, every C1 control and every invalid byte written as an escape
// (\x1b, \u009b, \xff).
func Append(dst, p []byte) []byte {
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			dst = fmt.Appendf(dst, `\x%02x`, p[i])
		case r == '\n' || r == '\t':
			dst = append(dst, p[i])
		case r < 0x20 || r == 0x7f:
			dst = fmt.Appendf(dst, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f, unicode.Is(unicode.Cf, r), r == 0x2028, r == 0x2029:
			// C1 controls, and the format characters (bidi overrides and
			// isolates, zero-width spaces and joiners, the BOM) and line
			// separators that reorder or hide what a terminal shows.
			dst = fmt.Appendf(dst, `\u%04x`, r)
		default:
			dst = append(dst, p[i:i+size]...)
		}
		i += size
	}
	return dst
}

// Line is s made safe as one line: newlines and tabs are escaped too.
func Line(s string) string {
	out := Append(nil, []byte(s))
	b := make([]byte, 0, len(out))
	for _, c := range out {
		switch c {
		case '\n':
			b = append(b, `\x0a`...)
		case '\t':
			b = append(b, `\x09`...)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}
