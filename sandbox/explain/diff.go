package explain

import (
	"slices"
	"strings"
)

// ExplainDiff is what a new version of a tool gains or loses against an
// old one: permissions added and removed, changed security fields and
// limits, the verdicts, and risks that appear or go away.
type ExplainDiff struct {
	Old                DiffSide      `json:"old"`
	New                DiffSide      `json:"new"`
	PermissionsAdded   []string      `json:"permissions_added"`
	PermissionsRemoved []string      `json:"permissions_removed"`
	Changes            []FieldChange `json:"changes"`
	RisksAdded         []Risk        `json:"risks_added"`
	RisksRemoved       []Risk        `json:"risks_removed"`
}

// DiffSide identifies one version and its verdict.
type DiffSide struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Path     string `json:"path"`
	Decision string `json:"decision"`
	Summary  string `json:"summary"`
}

// FieldChange is one security field, limit or verdict that differs.
type FieldChange struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

// Empty reports whether the versions do not differ in anything the diff
// looks at.
func (d ExplainDiff) Empty() bool {
	return len(d.PermissionsAdded)+len(d.PermissionsRemoved)+len(d.Changes)+len(d.RisksAdded)+len(d.RisksRemoved) == 0
}

// Diff compares the explanations of two versions of a tool. It is pure.
func Diff(old, new Explanation) ExplainDiff {
	d := ExplainDiff{
		Old:                side(old),
		New:                side(new),
		PermissionsAdded:   []string{},
		PermissionsRemoved: []string{},
		Changes:            []FieldChange{},
		RisksAdded:         []Risk{},
		RisksRemoved:       []Risk{},
	}
	for _, p := range new.Tool.RequiredPermissions {
		if !slices.Contains(old.Tool.RequiredPermissions, p) {
			d.PermissionsAdded = append(d.PermissionsAdded, p)
		}
	}
	for _, p := range old.Tool.RequiredPermissions {
		if !slices.Contains(new.Tool.RequiredPermissions, p) {
			d.PermissionsRemoved = append(d.PermissionsRemoved, p)
		}
	}
	change := func(field, o, n string) {
		if o != n {
			d.Changes = append(d.Changes, FieldChange{Field: field, Old: o, New: n})
		}
	}
	change("verdict", old.Verdict.Decision, new.Verdict.Decision)
	change("security tier", old.Tool.SecurityTier, new.Tool.SecurityTier)
	change("tags", strings.Join(old.Tool.Tags, ", "), strings.Join(new.Tool.Tags, ", "))
	for _, f := range []struct {
		field   string
		section func(Explanation) []Point
	}{
		{"isolation", func(e Explanation) []Point { return e.Privilege }},
		{"execution-privilege", func(e Explanation) []Point { return e.Privilege }},
		{"seccomp", func(e Explanation) []Point { return e.Privilege }},
		{"environment.inherit", func(e Explanation) []Point { return e.Environment }},
		{"environment.variables", func(e Explanation) []Point { return e.Environment }},
		{"network", func(e Explanation) []Point { return e.Network }},
		{"limits.memory", func(e Explanation) []Point { return e.Resources }},
		{"limits.timeout", func(e Explanation) []Point { return e.Resources }},
		{"limits.pids", func(e Explanation) []Point { return e.Resources }},
		{"limits.output", func(e Explanation) []Point { return e.Resources }},
		{"limits.cpus", func(e Explanation) []Point { return e.Resources }},
		{"limits.tmpfs", func(e Explanation) []Point { return e.Resources }},
	} {
		o, n := pointIn(f.section(old), f.field), pointIn(f.section(new), f.field)
		change(f.field+" (requested)", o.Requested, n.Requested)
		change(f.field+" (in force)", effective(o), effective(n))
		change(f.field+" (verdict)", o.Verdict, n.Verdict)
	}
	for _, r := range new.Risks {
		if !hasRisk(old.Risks, r) {
			d.RisksAdded = append(d.RisksAdded, r)
		}
	}
	for _, r := range old.Risks {
		if !hasRisk(new.Risks, r) {
			d.RisksRemoved = append(d.RisksRemoved, r)
		}
	}
	return d
}

func side(e Explanation) DiffSide {
	return DiffSide{Name: e.Tool.Name, Version: e.Tool.Version, Path: e.Tool.Path, Decision: e.Verdict.Decision, Summary: e.Verdict.Summary}
}

func pointIn(ps []Point, subject string) Point {
	for _, p := range ps {
		if p.Subject == subject {
			return p
		}
	}
	return Point{}
}

// effective is what the point's first mechanism enforces, in words.
func effective(p Point) string {
	if len(p.Mechanisms) == 0 {
		return ""
	}
	m := p.Mechanisms[0]
	if m.Value != "" {
		return m.Kind + " " + m.Value
	}
	return m.Detail
}

func hasRisk(rs []Risk, r Risk) bool {
	for _, x := range rs {
		if x.Category == r.Category && x.Subject == r.Subject {
			return true
		}
	}
	return false
}
