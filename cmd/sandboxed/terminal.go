package main

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// terminalSafe returns a writer that passes text to w with every control
// character but newline and tab written out as an escape (\x1b, \u009b),
// and every byte that is not UTF-8 too. Text a definition, a script or an
// agent wrote (descriptions, paths, reasons) goes to a terminal through
// it, so that it cannot conceal, erase or rewrite what sandboxed prints
// around it: a security review or an approval prompt shows what it says.
func terminalSafe(w io.Writer) io.Writer { return safeWriter{w} }

type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			out = fmt.Appendf(out, `\x%02x`, p[i])
		case r == '\n' || r == '\t':
			out = append(out, p[i])
		case r < 0x20 || r == 0x7f:
			out = fmt.Appendf(out, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f:
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, p[i:i+size]...)
		}
		i += size
	}
	if _, err := s.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
