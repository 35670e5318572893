package tool

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// ErrNotEditable: a definition cannot be edited in place (it has no file,
// or its file is not YAML in a form the editor can change safely).
var ErrNotEditable = errors.New("definition cannot be edited in place")

// AddPermissionsYAML returns src with perms appended to
// security.required-permissions, each one it does not hold yet, and the
// ones it added. Everything else of src — comments, order, quoting,
// blank lines — stays byte for byte: the editor inserts lines and touches
// no other. A block sequence gets new items after its last one, indented
// like its first; an empty flow sequence ([]) becomes a block; a missing
// key is added as the first key of security, and a missing security
// section at the end of the document. Anything else (a flow sequence
// with items, a flow mapping) is ErrNotEditable.
func AddPermissionsYAML(src []byte, perms []string) ([]byte, []string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, nil, fmt.Errorf("edit permissions: %w: %w", err, ErrNotEditable)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("edit permissions: the document is not one mapping: %w", ErrNotEditable)
	}
	top := doc.Content[0]
	if top.Style&yaml.FlowStyle != 0 {
		return nil, nil, fmt.Errorf("edit permissions: the definition is a flow mapping: %w", ErrNotEditable)
	}
	secKey, sec := lookup(top, "security")
	var have []string
	var seqKey, seq *yaml.Node
	if sec != nil {
		if sec.Kind != yaml.MappingNode || sec.Style&yaml.FlowStyle != 0 {
			return nil, nil, fmt.Errorf("edit permissions: line %d: security is not a block mapping: %w", secKey.Line, ErrNotEditable)
		}
		seqKey, seq = lookup(sec, "required-permissions")
		if seq != nil {
			if seq.Kind != yaml.SequenceNode {
				return nil, nil, fmt.Errorf("edit permissions: line %d: required-permissions is not a list: %w", seqKey.Line, ErrNotEditable)
			}
			for _, it := range seq.Content {
				have = append(have, it.Value)
			}
		}
	}
	var add []string
	for _, p := range perms {
		if !slices.Contains(have, p) && !slices.Contains(add, p) {
			add = append(add, p)
		}
	}
	if len(add) == 0 {
		return src, nil, nil
	}
	items := make([]string, len(add))
	for i, p := range add {
		q, err := yamlScalar(p)
		if err != nil {
			return nil, nil, err
		}
		items[i] = q
	}

	lines := splitLines(src)
	eol := "\n"
	if bytes.Contains(src, []byte("\r\n")) {
		eol = "\r\n"
	}
	block := func(indent string) []string {
		out := make([]string, len(items))
		for i, it := range items {
			out[i] = indent + "- " + it + eol
		}
		return out
	}
	switch {
	case seq != nil && len(seq.Content) > 0 && seq.Style&yaml.FlowStyle == 0:
		first, last := seq.Content[0], seq.Content[len(seq.Content)-1]
		prefix := lines[first.Line-1]
		prefix = strings.TrimRight(prefix[:min(first.Column-1, len(prefix))], " ")
		indent := strings.TrimSuffix(prefix, "-")
		if strings.TrimSpace(indent) != "" || last.Line != scalarEnd(last) {
			return nil, nil, fmt.Errorf("edit permissions: line %d: required-permissions is not one item per line: %w", seqKey.Line, ErrNotEditable)
		}
		lines = slices.Insert(lines, last.Line, block(indent)...)
	case seq != nil && len(seq.Content) == 0:
		// required-permissions: [] (or an empty value) on the key's line.
		l := lines[seqKey.Line-1]
		if seq.Line != seqKey.Line || strings.Count(l, "[") > 1 {
			return nil, nil, fmt.Errorf("edit permissions: line %d: required-permissions spans lines: %w", seqKey.Line, ErrNotEditable)
		}
		keyIndent := l[:seqKey.Column-1]
		comment := ""
		if i := strings.Index(l, "#"); i >= 0 {
			comment = " " + strings.TrimRight(l[i:], "\r\n")
		}
		lines[seqKey.Line-1] = keyIndent + "required-permissions:" + comment + eol
		lines = slices.Insert(lines, seqKey.Line, block(keyIndent+"  ")...)
	case seq != nil:
		return nil, nil, fmt.Errorf("edit permissions: line %d: required-permissions is a flow list; write it as a block list (- item per line): %w", seqKey.Line, ErrNotEditable)
	case sec != nil && len(sec.Content) > 0:
		child := sec.Content[0]
		indent := strings.Repeat(" ", child.Column-1)
		if child.Line == secKey.Line {
			return nil, nil, fmt.Errorf("edit permissions: line %d: security's first key is on its line: %w", secKey.Line, ErrNotEditable)
		}
		ins := append([]string{indent + "required-permissions:" + eol}, block(indent+"  ")...)
		lines = slices.Insert(lines, secKey.Line, ins...)
	default:
		// No security section, or an empty one: a new one at the end.
		if sec != nil {
			return nil, nil, fmt.Errorf("edit permissions: line %d: security is empty; remove it or add required-permissions by hand: %w", secKey.Line, ErrNotEditable)
		}
		indent := strings.Repeat(" ", top.Content[0].Column-1)
		if n := len(lines); n > 0 && !strings.HasSuffix(lines[n-1], "\n") {
			lines[n-1] += eol
		}
		ins := append([]string{indent + "security:" + eol, indent + "  required-permissions:" + eol}, block(indent+"    ")...)
		lines = append(lines, ins...)
	}
	out := []byte(strings.Join(lines, ""))
	// The edit must say exactly what was meant: the same document with
	// the permissions appended.
	var check struct {
		Security struct {
			RequiredPermissions []string `yaml:"required-permissions"`
		} `yaml:"security"`
	}
	if err := yaml.Unmarshal(out, &check); err != nil {
		return nil, nil, fmt.Errorf("edit permissions: the edited definition does not parse (%v): %w", err, ErrNotEditable)
	}
	if want := append(slices.Clone(have), add...); !slices.Equal(check.Security.RequiredPermissions, want) {
		return nil, nil, fmt.Errorf("edit permissions: the edited definition lists %q, not %q: %w", check.Security.RequiredPermissions, want, ErrNotEditable)
	}
	return out, add, nil
}

// AddPermissionsFile adds perms to the definition file at path in place
// (AddPermissionsYAML), atomically: a temporary file in the same
// directory, then a rename. The result must still load as a definition.
// It returns the permissions it added (none: the file is unchanged).
func AddPermissionsFile(path string, perms []string) ([]string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
	default:
		return nil, fmt.Errorf("%s: only YAML definitions are edited in place; add the permissions by hand: %w", path, ErrNotEditable)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("edit %s: %w", path, err)
	}
	out, added, err := AddPermissionsYAML(src, perms)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(added) == 0 {
		return nil, nil
	}
	if _, err := Parse(out, path); err != nil {
		return nil, fmt.Errorf("%s: the edited definition would not load (%v): %w", path, err, ErrNotEditable)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("edit %s: %w", path, err)
	}
	if err := WriteAtomic(path, out, true); err != nil {
		return nil, err
	}
	if fi.Mode().Perm() != 0o644 {
		_ = os.Chmod(path, fi.Mode().Perm())
	}
	return added, nil
}

// lookup returns the key and value nodes of key in mapping m.
func lookup(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// scalarEnd is the line a scalar ends on (a multi-line scalar is refused).
func scalarEnd(n *yaml.Node) int {
	return n.Line + strings.Count(n.Value, "\n")
}

// yamlScalar writes s as a YAML scalar, plain when YAML reads it back as
// the same string, quoted otherwise.
func yamlScalar(s string) (string, error) {
	if strings.ContainsAny(s, "\n\r") {
		return "", fmt.Errorf("edit permissions: %q spans lines: %w", s, ErrNotEditable)
	}
	var back []string
	if err := yaml.Unmarshal([]byte("- "+s), &back); err == nil && len(back) == 1 && back[0] == s {
		return s, nil
	}
	b, err := yaml.Marshal(s)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

// splitLines splits src after each newline, keeping them.
func splitLines(src []byte) []string {
	if len(src) == 0 {
		return nil
	}
	lines := strings.SplitAfter(string(src), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
