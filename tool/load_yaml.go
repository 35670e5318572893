package tool

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sandboxed-dev/sandboxed/internal/units"
)

// nodeDecoder walks a yaml.Node tree and collects diagnostics. It never stops
// at the first problem: every handler records what it finds and returns,
// so one Parse reports every error of a file.
type nodeDecoder struct {
	file  string
	lines []string // source lines, for positions inside block scalars
	diags []Diagnostic
	// truncated is set once maxDiags diagnostics are kept and more were dropped.
	truncated bool
}

func (d *nodeDecoder) pos(n *yaml.Node) Pos {
	if n == nil || n.Line < 1 {
		return Pos{File: d.file, Line: 1, Col: 1}
	}
	col := n.Column
	if col < 1 {
		col = 1
	}
	return Pos{File: d.file, Line: n.Line, Col: col}
}

// maxDiags bounds the diagnostics of one file: past it, a file is so far
// from a definition that more lines would not help.
const maxDiags = 100

func (d *nodeDecoder) errAt(p Pos, hint, format string, args ...any) {
	if len(d.diags) >= maxDiags {
		d.truncated = true
		return
	}
	d.diags = append(d.diags, Diagnostic{Pos: p, Msg: fmt.Sprintf(format, args...), Hint: hint})
}

func (d *nodeDecoder) errf(n *yaml.Node, hint, format string, args ...any) {
	d.errAt(d.pos(n), hint, format, args...)
}

func nodeIsNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func nodeKindName(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	}
	switch n.ShortTag() {
	case "!!null":
		return "nothing"
	case "!!bool":
		return "a boolean (" + n.Value + ")"
	case "!!int", "!!float":
		return "a number (" + n.Value + ")"
	}
	return "a string"
}

// aliasCheck reports the first alias or merge key below n. Aliases are
// refused outright: tool definitions are small, and refusing them rules out
// alias bombs and self-referencing anchors in every walk below.
func (d *nodeDecoder) aliasCheck(n *yaml.Node) bool {
	if n == nil {
		return true
	}
	if n.Kind == yaml.AliasNode {
		d.errf(n, "write the value out; anchors and aliases are not supported in tool definitions",
			"YAML alias *%s is not supported", n.Value)
		return false
	}
	ok := true
	for _, c := range n.Content {
		if !d.aliasCheck(c) {
			ok = false
		}
	}
	return ok
}

// fieldFn handles one key of a mapping; k is the key node, v the value.
type fieldFn func(k, v *yaml.Node)

// mapping walks mapping node n (null counts as empty): it reports keys
// that are not scalars, duplicate keys, and unknown keys (with the hint in
// hints[key] when there is one, else the nearest known key), and calls
// fields[key] for the rest in file order. It reports false when n is not a
// mapping at all.
func (d *nodeDecoder) mapping(n *yaml.Node, what string, fields map[string]fieldFn, hints map[string]string) bool {
	if nodeIsNull(n) {
		return true
	}
	if n.Kind != yaml.MappingNode {
		d.errf(n, "", "%s must be a mapping of keys, got %s", what, nodeKindName(n))
		return false
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errf(k, "", "a key in %s must be a plain name, got %s", what, nodeKindName(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			d.errf(k, "write the keys out; merge keys are not supported in tool definitions", "YAML merge key << is not supported")
			continue
		}
		if prev, dup := seen[k.Value]; dup {
			d.errf(k, fmt.Sprintf("the first %s is at line %d; keep one", k.Value, prev.Line), "duplicate key %s in %s", k.Value, what)
			continue
		}
		seen[k.Value] = k
		fn, ok := fields[k.Value]
		if !ok {
			hint := hints[k.Value]
			if hint == "" {
				hint = hints["*"]
			}
			if hint == "" {
				hint = nearestKeyHint(k.Value, fieldKeys(fields))
			}
			d.errf(k, hint, "unknown key %s in %s", k.Value, what)
			continue
		}
		if fn != nil {
			fn(k, v)
		}
	}
	return true
}

func fieldKeys(m map[string]fieldFn) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// nearestKeyHint names the known key closest to key by edit distance, or
// lists the known keys when none is close.
func nearestKeyHint(key string, known []string) string {
	if h := nearestNameHint(key, known, ""); h != "" {
		return h
	}
	if len(known) == 0 {
		return ""
	}
	return "known keys: " + strings.Join(known, ", ")
}

// levenshtein is the Levenshtein distance between a and b.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// str reads a scalar as text. Numbers and booleans are taken as written
// (version: 1.0 is "1.0"); null is "".
func (d *nodeDecoder) str(n *yaml.Node, what string) (string, bool) {
	if nodeIsNull(n) {
		return "", true
	}
	if n.Kind != yaml.ScalarNode {
		d.errf(n, "", "%s must be a string, got %s", what, nodeKindName(n))
		return "", false
	}
	return n.Value, true
}

func (d *nodeDecoder) boolean(n *yaml.Node, what string) (bool, bool) {
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		d.errf(n, "write true or false", "%s must be true or false, got %s", what, nodeKindName(n))
		return false, false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		d.errf(n, "write true or false", "%s must be true or false, got %q", what, n.Value)
		return false, false
	}
	return b, true
}

func (d *nodeDecoder) integer(n *yaml.Node, what string) (int64, bool) {
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		d.errf(n, "", "%s must be a whole number, got %s", what, nodeKindName(n))
		return 0, false
	}
	var v int64
	if err := n.Decode(&v); err != nil {
		d.errf(n, "", "%s must be a whole number: %q is out of range", what, n.Value)
		return 0, false
	}
	return v, true
}

func (d *nodeDecoder) nonNegInt(n *yaml.Node, what string) (int, bool) {
	v, ok := d.integer(n, what)
	if !ok {
		return 0, false
	}
	if v < 0 || v > math.MaxInt32 {
		d.errf(n, "", "%s must be between 0 and %d, got %d", what, math.MaxInt32, v)
		return 0, false
	}
	return int(v), true
}

func (d *nodeDecoder) number(n *yaml.Node, what string) (float64, bool) {
	if n == nil || n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		d.errf(n, "", "%s must be a number, got %s", what, nodeKindName(n))
		return 0, false
	}
	var v float64
	if err := n.Decode(&v); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		d.errf(n, "", "%s must be a finite number, got %q", what, n.Value)
		return 0, false
	}
	return v, true
}

// items returns the entries of a list node: none for a null node, and
// none with an error (what must be a list, hint) for any other kind.
func (d *nodeDecoder) items(n *yaml.Node, what, hint string) []*yaml.Node {
	if nodeIsNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errf(n, hint, "%s must be a list, got %s", what, nodeKindName(n))
		return nil
	}
	return n.Content
}

// strList reads a list of strings; with scalarOK a single string is a
// one-element list.
func (d *nodeDecoder) strList(n *yaml.Node, what string, scalarOK bool) ([]string, bool) {
	if nodeIsNull(n) {
		return nil, true
	}
	if n.Kind == yaml.ScalarNode && scalarOK {
		return []string{n.Value}, true
	}
	if n.Kind != yaml.SequenceNode {
		hint := ""
		if !scalarOK && n.Kind == yaml.ScalarNode {
			hint = "write a list, e.g. [" + n.Value + "]"
		}
		d.errf(n, hint, "%s must be a list of strings, got %s", what, nodeKindName(n))
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
	ok := true
	for _, c := range n.Content {
		s, good := d.str(c, "each entry of "+what)
		if !good {
			ok = false
			continue
		}
		out = append(out, s)
	}
	return out, ok
}

// strMap reads a mapping of names to scalar values.
func (d *nodeDecoder) strMap(n *yaml.Node, what string) (map[string]string, bool) {
	if nodeIsNull(n) {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		d.errf(n, "", "%s must be a mapping of names to values, got %s", what, nodeKindName(n))
		return nil, false
	}
	out := map[string]string{}
	seen := map[string]int{}
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errf(k, "", "a key in %s must be a plain name, got %s", what, nodeKindName(k))
			ok = false
			continue
		}
		if line, dup := seen[k.Value]; dup {
			d.errf(k, fmt.Sprintf("the first %s is at line %d; keep one", k.Value, line), "duplicate key %s in %s", k.Value, what)
			ok = false
			continue
		}
		seen[k.Value] = k.Line
		s, good := d.str(v, what+"."+k.Value)
		if !good {
			ok = false
			continue
		}
		out[k.Value] = s
	}
	return out, ok
}

// size reads a size: a YAML integer is bytes, a string goes through
// units.ParseSize.
func (d *nodeDecoder) size(n *yaml.Node, what string) (int64, bool) {
	if n == nil || n.Kind != yaml.ScalarNode || nodeIsNull(n) {
		d.errf(n, "write "+units.SizeGrammar, "%s must be a size, got %s", what, nodeKindName(n))
		return 0, false
	}
	v, err := units.ParseSize(n.Value)
	if err != nil {
		d.errf(n, "write "+units.SizeGrammar, "%s: %v", what, err)
		return 0, false
	}
	if v <= 0 {
		d.errf(n, "omit the key to use the default", "%s must be greater than zero", what)
		return 0, false
	}
	return v, true
}

// duration reads a duration: a YAML number is milliseconds, a string goes
// through units.ParseDuration. With positive, zero is an error too.
func (d *nodeDecoder) duration(n *yaml.Node, what string, positive bool) (time.Duration, bool) {
	hint := "write " + units.DurationGrammar
	if n == nil || n.Kind != yaml.ScalarNode || nodeIsNull(n) || n.ShortTag() == "!!bool" {
		d.errf(n, hint, "%s must be a duration, got %s", what, nodeKindName(n))
		return 0, false
	}
	var v time.Duration
	if n.ShortTag() == "!!float" {
		f, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || f < 0 || f != math.Trunc(f) || f > math.MaxInt64/1e6 {
			d.errf(n, hint, "%s must be a whole number of milliseconds, got %s", what, n.Value)
			return 0, false
		}
		v = time.Duration(int64(f) * 1e6)
	} else {
		p, err := units.ParseDuration(n.Value)
		if err != nil {
			d.errf(n, hint, "%s: %v", what, err)
			return 0, false
		}
		v = time.Duration(p)
	}
	if positive && v <= 0 {
		d.errf(n, "omit the key to use the default", "%s must be greater than zero", what)
		return 0, false
	}
	return v, true
}

// toAny converts a node into plain Go values: string, bool, int, float64,
// nil, []any, map[string]any. Integers that do not fit in int become float64.
func (d *nodeDecoder) toAny(n *yaml.Node, what string) (any, bool) {
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, true
		case "!!bool":
			var b bool
			if n.Decode(&b) == nil {
				return b, true
			}
		case "!!int":
			var i int
			if n.Decode(&i) == nil {
				return i, true
			}
			var f float64
			if n.Decode(&f) == nil {
				return f, true
			}
		case "!!float":
			var f float64
			if n.Decode(&f) == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
				return f, true
			}
			d.errf(n, "", "%s: %q is not a finite number", what, n.Value)
			return nil, false
		}
		return n.Value, true
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		ok := true
		for _, c := range n.Content {
			v, good := d.toAny(c, what)
			ok = ok && good
			out = append(out, v)
		}
		return out, ok
	case yaml.MappingNode:
		out := map[string]any{}
		ok := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				d.errf(k, "", "a key in %s must be a plain name, got %s", what, nodeKindName(k))
				ok = false
				continue
			}
			if _, dup := out[k.Value]; dup {
				d.errf(k, "keep one", "duplicate key %s in %s", k.Value, what)
				ok = false
				continue
			}
			val, good := d.toAny(v, what)
			ok = ok && good
			out[k.Value] = val
		}
		return out, ok
	}
	d.errf(n, "", "%s: unsupported YAML node", what)
	return nil, false
}

// textPos locates byte offset off inside the text of scalar n: exactly for
// single-line scalars and literal blocks (|), at the node otherwise.
func (d *nodeDecoder) textPos(n *yaml.Node, off int) Pos {
	p := d.pos(n)
	if n == nil || n.Line < 1 || off < 0 || off > len(n.Value) {
		return p
	}
	before := n.Value[:off]
	switch {
	case n.Style&yaml.LiteralStyle != 0:
		nl := strings.Count(before, "\n")
		line := n.Line + 1 + nl
		if line-1 >= len(d.lines) {
			return p
		}
		// Content indentation is that of the first non-blank line of the block.
		indent := 0
		for i := n.Line; i < len(d.lines); i++ {
			if t := strings.TrimLeft(d.lines[i], " "); t != "" {
				indent = len(d.lines[i]) - len(t)
				break
			}
		}
		lineStart := strings.LastIndex(before, "\n") + 1
		return Pos{File: d.file, Line: line, Col: indent + len([]rune(before[lineStart:])) + 1}
	case strings.Contains(n.Value, "\n"):
		return p
	case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		if n.Style&yaml.DoubleQuotedStyle != 0 && strings.Contains(d.rawLine(n.Line), `\`) {
			return p // escapes make offsets unreliable
		}
		return Pos{File: d.file, Line: n.Line, Col: p.Col + 1 + len([]rune(before))}
	case n.Style == 0:
		return Pos{File: d.file, Line: n.Line, Col: p.Col + len([]rune(before))}
	}
	return p
}

func (d *nodeDecoder) rawLine(line int) string {
	if line < 1 || line > len(d.lines) {
		return ""
	}
	return d.lines[line-1]
}

var yamlErrLineRE = lazyRegexp(`^yaml: line (\d+): (.*)$`)

// syntaxDiag turns a yaml.v3 syntax error into a located diagnostic.
// yaml.v3 reports the line only; the column is where the problem most
// likely is on that line (a second ": " for "mapping values", else the
// first non-blank character).
func (d *nodeDecoder) syntaxDiag(err error) Diagnostic {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line, col := 1, 1
	if m := yamlErrLineRE().FindStringSubmatch(err.Error()); m != nil {
		if n, e := strconv.Atoi(m[1]); e == nil && n >= 1 {
			line = n
		}
		msg = m[2]
	}
	if line > len(d.lines) && len(d.lines) > 0 {
		line = len(d.lines)
	}
	text := d.rawLine(line)
	if t := strings.TrimLeft(text, " \t"); t != "" {
		col = len([]rune(text[:len(text)-len(t)])) + 1
	}
	hint := ""
	switch {
	case strings.Contains(msg, "mapping values are not allowed"):
		if i := strings.Index(text, ": "); i >= 0 {
			if j := strings.Index(text[i+2:], ": "); j >= 0 {
				col = len([]rune(text[:i+2+j])) + 1
			}
		}
		hint = `an unquoted value contains ": "; quote the value or write it as a block (key: |)`
	case strings.Contains(msg, "did not find expected key"):
		hint = "check the indentation near here; a list item (- ...) cannot sit among the keys of a mapping"
	case strings.Contains(msg, "unknown escape character"):
		hint = `inside "double quotes" only YAML escapes work; use 'single quotes' or a block (key: |)`
	case strings.Contains(msg, "cannot start any token"):
		hint = "indent with spaces, not tabs, and quote values that start with @ or `"
	case strings.Contains(msg, "did not find expected"):
		hint = "check the indentation and the quoting near here"
	}
	return Diagnostic{Pos: Pos{File: d.file, Line: line, Col: col}, Msg: "invalid YAML: " + msg, Hint: hint}
}
