package tool

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Sentinel errors of package tool. Test with errors.Is.
var (
	// ErrInvalid: a definition file is not a valid tool definition. The
	// error is a *LoadError listing every problem with its position.
	ErrInvalid = errors.New("invalid tool definition")
	// ErrNotFound: no tool of that name in the scopes searched, or no such file.
	ErrNotFound = errors.New("tool not found")
	// ErrConflict: two definitions in one scope claim the same name.
	ErrConflict = errors.New("tool name conflict")
	// ErrExists: a write would replace an existing file without overwrite.
	ErrExists = errors.New("file already exists")
)

// Diagnostic is one problem found in a definition file, with where it is
// and, when there is one, how to fix it.
type Diagnostic struct {
	Pos  Pos
	Msg  string
	Hint string
}

// String renders the diagnostic as FILE:LINE:COL: message (hint: ...).
func (d Diagnostic) String() string {
	var b strings.Builder
	file := d.Pos.File
	if file == "" {
		file = "<input>"
	}
	fmt.Fprintf(&b, "%s:%d:%d: %s", file, d.Pos.Line, d.Pos.Col, d.Msg)
	if d.Hint != "" {
		fmt.Fprintf(&b, " (hint: %s)", d.Hint)
	}
	return b.String()
}

// LoadError is every problem found in one definition file. Diags is sorted
// by position and never empty.
type LoadError struct {
	File  string
	Diags []Diagnostic
}

// Error prints one line per diagnostic.
func (e *LoadError) Error() string {
	lines := make([]string, len(e.Diags))
	for i, d := range e.Diags {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *LoadError) Unwrap() error { return ErrInvalid }

// newLoadError sorts and de-duplicates diags; it returns nil when there are none.
func newLoadError(file string, diags []Diagnostic) error {
	if len(diags) == 0 {
		return nil
	}
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Pos, diags[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	var out []Diagnostic
	for _, d := range diags {
		if len(out) > 0 && d == out[len(out)-1] {
			continue
		}
		out = append(out, d)
	}
	return &LoadError{File: file, Diags: out}
}
