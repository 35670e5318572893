package changeset

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/sandboxed-dev/sandboxed/internal/safetext"
)

// Diff bounds: a file above maxDiffBytes, or a pair whose line counts
// multiply above maxDiffCells, is summarised instead of diffed.
const (
	maxDiffBytes = 256 << 10
	maxDiffCells = 4 << 20
	diffContext  = 3
	// lineMark follows the op of every content line of a diff (hunks).
	lineMark = "|"
)

// ContentFunc reads the content of a change's file before (after=false)
// or after the change; nil content is no file.
type ContentFunc func(grant int, c Change, after bool) ([]byte, error)

// Render writes the record's change for a reviewer: per grant, a summary
// line per path (deletions first), then a diff of each changed file.
// Every path and line is made safe for a terminal (internal/safetext):
// what the tool wrote cannot forge the prompt that follows.
func Render(w io.Writer, r *Record, read ContentFunc) {
	for gi, g := range r.Grants {
		if len(g.Changes) == 0 {
			continue
		}
		n := Count(g.Changes)
		fmt.Fprintf(w, "%s (the tool saw %s): %d deleted, %d modified, %d created\n",
			safetext.Line(g.Root), safetext.Line(g.Target), n.Deleted, n.Modified, n.Created)
		for _, c := range ReviewOrder(g.Changes) {
			fmt.Fprintf(w, "  %-9s %s%s\n", c.Op, safetext.Line(c.Path), describe(c))
		}
		for _, c := range ReviewOrder(g.Changes) {
			renderFile(w, gi, c, read)
		}
	}
}

// describe is what a summary line adds: the kind when not a file, a
// link's target, a mode change.
func describe(c Change) string {
	var parts []string
	e := c.After
	if e == nil {
		e = c.Before
	}
	if e.Kind != KindFile {
		parts = append(parts, string(e.Kind))
	}
	if e.Kind == KindLink {
		parts = append(parts, "-> "+safetext.Line(e.Target))
	}
	if c.Before != nil && c.After != nil {
		if c.Before.Kind != c.After.Kind {
			parts = append(parts, fmt.Sprintf("was a %s", c.Before.Kind))
		} else if c.Before.Mode != c.After.Mode {
			parts = append(parts, fmt.Sprintf("mode %04o -> %04o", c.Before.Mode, c.After.Mode))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// renderFile writes the diff of one changed file.
func renderFile(w io.Writer, gi int, c Change, read ContentFunc) {
	isFile := func(e *Entry) bool { return e != nil && e.Kind == KindFile }
	if !isFile(c.Before) && !isFile(c.After) {
		return
	}
	if isFile(c.Before) && isFile(c.After) && c.Before.SHA256 == c.After.SHA256 {
		return // only its mode changed
	}
	var old, new []byte
	var err error
	if isFile(c.Before) {
		if old, err = read(gi, c, false); err != nil {
			fmt.Fprintf(w, "--- %s: cannot read: %s\n", safetext.Line(c.Path), safetext.Line(err.Error()))
			return
		}
	}
	if isFile(c.After) {
		if new, err = read(gi, c, true); err != nil {
			fmt.Fprintf(w, "+++ %s: cannot read: %s\n", safetext.Line(c.Path), safetext.Line(err.Error()))
			return
		}
	}
	fmt.Fprintf(w, "--- %s\n+++ %s\n", safetext.Line(c.Path), safetext.Line(c.Path))
	switch {
	case bytes.IndexByte(old, 0) >= 0 || bytes.IndexByte(new, 0) >= 0:
		fmt.Fprintf(w, "binary: %d bytes -> %d bytes\n", len(old), len(new))
		return
	case len(old) > maxDiffBytes || len(new) > maxDiffBytes:
		fmt.Fprintf(w, "too large to show: %d bytes -> %d bytes\n", len(old), len(new))
		return
	}
	a, b := splitLines(old), splitLines(new)
	if len(a)*len(b) > maxDiffCells {
		fmt.Fprintf(w, "too many lines to diff here: %d lines -> %d lines\n", len(a), len(b))
		return
	}
	for _, l := range hunks(lineDiff(a, b)) {
		fmt.Fprintln(w, l)
	}
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
}

// edit is one line of a diff: ' ' kept, '-' removed, '+' added.
type edit struct {
	op   byte
	line string
}

// lineDiff is a shortest edit of a into b by longest common subsequence.
func lineDiff(a, b []string) []edit {
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []edit
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out = append(out, edit{' ', a[i]})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, edit{'-', a[i]})
			i++
		default:
			out = append(out, edit{'+', b[j]})
			j++
		}
	}
	return out
}

// hunks renders edits as lines, with diffContext kept lines around each
// change and "@@" where kept lines are left out; every line made safe.
// A line is its op and then lineMark before the file's text, so that no
// text the tool wrote can pass for a header ("+++ path", "@@") or for
// the summary above the diffs: only content lines have lineMark second.
func hunks(es []edit) []string {
	keep := make([]bool, len(es))
	for i, e := range es {
		if e.op == ' ' {
			continue
		}
		for k := max(0, i-diffContext); k <= min(len(es)-1, i+diffContext); k++ {
			keep[k] = true
		}
	}
	var out []string
	gap := false
	for i, e := range es {
		if !keep[i] {
			gap = true
			continue
		}
		if gap || len(out) == 0 {
			out = append(out, "@@")
			gap = false
		}
		out = append(out, string(e.op)+lineMark+safetext.Line(strings.TrimSuffix(e.line, "\n")))
	}
	return out
}
