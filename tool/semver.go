package tool

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrVersion is a version or version constraint that does not parse.
var ErrVersion = errors.New("invalid version")

// Version is a semantic version MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD].
// Missing minor or patch read as 0 ("1.2" is 1.2.0).
type Version struct {
	Major, Minor, Patch int
	Pre                 string
}

// ParseVersion parses v, with or without a leading "v".
func ParseVersion(v string) (Version, error) {
	s := strings.TrimPrefix(strings.TrimSpace(v), "v")
	s, _, _ = strings.Cut(s, "+")
	s, pre, _ := strings.Cut(s, "-")
	parts := strings.Split(s, ".")
	if s == "" || len(parts) > 3 {
		return Version{}, fmt.Errorf("parse version %q: want MAJOR.MINOR.PATCH: %w", v, ErrVersion)
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 || (len(p) > 1 && p[0] == '0') {
			return Version{}, fmt.Errorf("parse version %q: %q is not a number: %w", v, p, ErrVersion)
		}
		n[i] = x
	}
	return Version{Major: n[0], Minor: n[1], Patch: n[2], Pre: pre}, nil
}

// String returns the version as MAJOR.MINOR.PATCH[-PRERELEASE].
func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	return s
}

// Compare returns -1, 0 or 1. A prerelease sorts before its release;
// prereleases compare as strings.
func (v Version) Compare(o Version) int {
	for _, d := range [][2]int{{v.Major, o.Major}, {v.Minor, o.Minor}, {v.Patch, o.Patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	switch {
	case v.Pre == o.Pre:
		return 0
	case v.Pre == "":
		return 1
	case o.Pre == "":
		return -1
	}
	return strings.Compare(v.Pre, o.Pre)
}

// Constraint is a version constraint: comparisons joined by commas (or
// spaces), all of which must hold. Forms:
//
//	*, "" or x        any version
//	1.2.3, =1.2.3     exactly
//	>=1.0.0 >1 <2.0 <=1.4 !=1.3.0
//	^1.2.3            >=1.2.3 <2.0.0 (^0.2.3: <0.3.0; ^0.0.3: <0.0.4)
//	~1.2.3, ~1.2      >=1.2.3 <1.3.0;  ~1: >=1.0.0 <2.0.0
//	1.x, 1.2.x, 1.*   the wildcard part may be anything
type Constraint struct {
	src   string
	terms []verTerm
}

type verTerm struct {
	op string // "=", "!=", ">", ">=", "<", "<="
	v  Version
}

// ParseConstraint parses a version constraint.
func ParseConstraint(c string) (*Constraint, error) {
	out := &Constraint{src: c}
	fields := strings.FieldsFunc(c, func(r rune) bool { return r == ',' || r == ' ' })
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		// ">= 1.0.0" written with a space.
		if (f == ">=" || f == "<=" || f == ">" || f == "<" || f == "=" || f == "!=" || f == "^" || f == "~") && i+1 < len(fields) {
			f += fields[i+1]
			i++
		}
		terms, err := parseVerTerm(f)
		if err != nil {
			return nil, fmt.Errorf("parse version constraint %q: %v: %w", c, err, ErrVersion)
		}
		out.terms = append(out.terms, terms...)
	}
	return out, nil
}

func parseVerTerm(f string) ([]verTerm, error) {
	if f == "*" || f == "x" || f == "X" {
		return nil, nil
	}
	for _, op := range []string{">=", "<=", "!=", ">", "<", "=", "^", "~"} {
		if !strings.HasPrefix(f, op) {
			continue
		}
		rest := f[len(op):]
		v, n, err := partialVersion(rest)
		if err != nil {
			return nil, err
		}
		switch op {
		case "^":
			lo := v
			var hi Version
			switch {
			case v.Major > 0 || n == 1:
				hi = Version{Major: v.Major + 1}
			case v.Minor > 0 || n == 2:
				hi = Version{Minor: v.Minor + 1}
			default:
				hi = Version{Patch: v.Patch + 1}
			}
			return []verTerm{{">=", lo}, {"<", hi}}, nil
		case "~":
			hi := Version{Major: v.Major, Minor: v.Minor + 1}
			if n == 1 {
				hi = Version{Major: v.Major + 1}
			}
			return []verTerm{{">=", v}, {"<", hi}}, nil
		case "=":
			return wildcardTerms(v, n), nil
		}
		if n < 3 && (op == ">" || op == "<=") {
			// >1.2 means above every 1.2.x; <=1.2 includes every 1.2.x.
			up := bump(v, n)
			if op == ">" {
				return []verTerm{{">=", up}}, nil
			}
			return []verTerm{{"<", up}}, nil
		}
		return []verTerm{{op, v}}, nil
	}
	v, n, err := partialVersion(f)
	if err != nil {
		return nil, err
	}
	return wildcardTerms(v, n), nil
}

// wildcardTerms is "v with n parts given": exact for 3 parts, a range otherwise.
func wildcardTerms(v Version, n int) []verTerm {
	switch n {
	case 0:
		return nil
	case 3:
		return []verTerm{{"=", v}}
	}
	return []verTerm{{">=", v}, {"<", bump(v, n)}}
}

func bump(v Version, n int) Version {
	if n <= 1 {
		return Version{Major: v.Major + 1}
	}
	return Version{Major: v.Major, Minor: v.Minor + 1}
}

// partialVersion parses 1, 1.2, 1.2.3, 1.x, 1.2.*; it returns how many
// numeric parts were given.
func partialVersion(s string) (Version, int, error) {
	s = strings.TrimPrefix(s, "v")
	if s == "" {
		return Version{}, 0, errors.New("a version is missing")
	}
	core, pre, _ := strings.Cut(s, "-")
	parts := strings.Split(core, ".")
	if len(parts) > 3 {
		return Version{}, 0, fmt.Errorf("%q has more than three parts", s)
	}
	var n [3]int
	given := 0
	for i, p := range parts {
		if p == "x" || p == "X" || p == "*" {
			for _, q := range parts[i+1:] {
				if q != "x" && q != "X" && q != "*" {
					return Version{}, 0, fmt.Errorf("%q: nothing but wildcards may follow a wildcard", s)
				}
			}
			break
		}
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 {
			return Version{}, 0, fmt.Errorf("%q: %q is not a number", s, p)
		}
		n[i] = x
		given++
	}
	if pre != "" && given < 3 {
		return Version{}, 0, fmt.Errorf("%q: a prerelease needs a full version", s)
	}
	return Version{Major: n[0], Minor: n[1], Patch: n[2], Pre: pre}, given, nil
}

// Check reports whether v satisfies every term.
func (c *Constraint) Check(v Version) bool {
	for _, t := range c.terms {
		d := v.Compare(t.v)
		ok := false
		switch t.op {
		case "=":
			ok = d == 0
		case "!=":
			ok = d != 0
		case ">":
			ok = d > 0
		case ">=":
			ok = d >= 0
		case "<":
			ok = d < 0
		case "<=":
			ok = d <= 0
		}
		if !ok {
			return false
		}
	}
	return true
}

// String returns the constraint as written.
func (c *Constraint) String() string { return c.src }
