package main

import (
	"io"

	"github.com/sandboxed-dev/sandboxed/internal/safetext"
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
	out := safetext.Append(make([]byte, 0, len(p)), p)
	if _, err := s.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
