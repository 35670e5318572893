package tool

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrVersion is a version or version constraint that does not parse.
var ErrVersion = errors.New("invalid version")

// The parser is hand-written rather than a library's regular expressions:
// every command of the CLI pays a package's init, and compiling semver
// regexps at start-up cost more than a millisecond per run for a check only
// dependencies use.

// Version is a semantic version.
type Version struct {
	major, minor, patch uint64
	pre                 []string // prerelease identifiers; none for a release
	build               string
}

// ParseVersion parses a semantic version MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD],
// with or without a leading "v"; missing minor or patch read as 0 ("1.2"
// is 1.2.0). Versions order as SemVer 2.0.0 §11 says: a prerelease sorts
// before its release, and numeric prerelease identifiers compare as
// numbers (alpha.2 < alpha.10).
func ParseVersion(v string) (*Version, error) {
	p, err := parsePartial(strings.TrimPrefix(strings.TrimSpace(v), "v"), false)
	if err != nil {
		return nil, fmt.Errorf("parse version %q: %v (want MAJOR.MINOR.PATCH): %w", v, err, ErrVersion)
	}
	return &p.Version, nil
}

// String is the version as MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD].
func (v *Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch)
	if len(v.pre) > 0 {
		s += "-" + strings.Join(v.pre, ".")
	}
	if v.build != "" {
		s += "+" + v.build
	}
	return s
}

// Compare returns -1, 0 or 1 as v sorts before, with or after o (SemVer
// 2.0.0 §11; build metadata is ignored).
func (v *Version) Compare(o *Version) int {
	for _, d := range [...][2]uint64{{v.major, o.major}, {v.minor, o.minor}, {v.patch, o.patch}} {
		if d[0] != d[1] {
			return cmp(d[0] < d[1])
		}
	}
	switch {
	case len(v.pre) == 0 && len(o.pre) == 0:
		return 0
	case len(v.pre) == 0:
		return 1
	case len(o.pre) == 0:
		return -1
	}
	for i := 0; i < len(v.pre) && i < len(o.pre); i++ {
		a, b := v.pre[i], o.pre[i]
		an, aerr := strconv.ParseUint(a, 10, 64)
		bn, berr := strconv.ParseUint(b, 10, 64)
		switch {
		case aerr == nil && berr == nil:
			if an != bn {
				return cmp(an < bn)
			}
		case aerr == nil: // numeric identifiers sort before alphanumeric ones
			return -1
		case berr == nil:
			return 1
		case a != b:
			return cmp(a < b)
		}
	}
	if len(v.pre) != len(o.pre) {
		return cmp(len(v.pre) < len(o.pre))
	}
	return 0
}

func cmp(less bool) int {
	if less {
		return -1
	}
	return 1
}

// partial is a version in a constraint, where trailing parts may be
// missing or wildcards (x, X, *): set counts the parts given (0 for "*").
type partial struct {
	Version
	set int
}

// parsePartial parses MAJOR[.MINOR[.PATCH]][-PRERELEASE][+BUILD]; with
// wildcards, parts may be x, X or * (and then so must every later part).
func parsePartial(s string, wildcards bool) (partial, error) {
	var p partial
	if s == "" {
		return p, errors.New("empty")
	}
	if i := strings.IndexByte(s, '+'); i >= 0 {
		p.build = s[i+1:]
		s = s[:i]
		if err := checkIdentifiers(p.build, false); err != nil {
			return p, fmt.Errorf("build metadata: %v", err)
		}
	}
	if i := strings.IndexByte(s, '-'); i >= 0 {
		pre := s[i+1:]
		s = s[:i]
		if err := checkIdentifiers(pre, true); err != nil {
			return p, fmt.Errorf("prerelease: %v", err)
		}
		p.pre = strings.Split(pre, ".")
	}
	parts := strings.Split(s, ".")
	if len(parts) > 3 {
		return p, fmt.Errorf("%d dot-separated numbers, at most 3", len(parts))
	}
	nums := [3]*uint64{&p.major, &p.minor, &p.patch}
	wild := false
	for i, part := range parts {
		if wildcards && (part == "x" || part == "X" || part == "*") {
			wild = true
			continue
		}
		if wild {
			return p, fmt.Errorf("%q after a wildcard", part)
		}
		n, err := number(part)
		if err != nil {
			return p, err
		}
		*nums[i] = n
		p.set = i + 1
	}
	if wild && (len(p.pre) > 0 || p.build != "") {
		return p, errors.New("a wildcard version has no prerelease or build metadata")
	}
	return p, nil
}

// number parses one of MAJOR, MINOR, PATCH.
func number(s string) (uint64, error) {
	if s == "" {
		return 0, errors.New("empty number")
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("%q is not a number", s)
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	return n, nil
}

// checkIdentifiers checks dot-separated identifiers of [0-9A-Za-z-], none
// empty; numeric prerelease identifiers may not have a leading zero.
func checkIdentifiers(s string, prerelease bool) error {
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return fmt.Errorf("empty identifier in %q", s)
		}
		numeric := true
		for _, r := range id {
			switch {
			case r >= '0' && r <= '9':
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '-':
				numeric = false
			default:
				return fmt.Errorf("%q has %q (want letters, digits and -)", id, r)
			}
		}
		if prerelease && numeric && len(id) > 1 && id[0] == '0' {
			return fmt.Errorf("numeric identifier %q has a leading zero", id)
		}
	}
	return nil
}

// Constraint is a parsed version constraint: alternatives (||), each a
// list of comparisons all of which must hold.
type Constraint struct {
	any [][]comparison
}

type comparison struct {
	op string // "=", "!=", ">", ">=", "<", "<=", "~", "^"
	v  partial
}

// ParseConstraint parses a version constraint: comparisons joined by
// commas or spaces, all of which must hold ("||" between groups: either
// holds), in the grammar of github.com/Masterminds/semver/v3. Forms:
//
//	*, "" or x        any version
//	1.2.3, =1.2.3     exactly
//	>=1.0.0 >1 <2.0 <=1.4 !=1.3.0
//	^1.2.3            >=1.2.3 <2.0.0 (^0.2.3: <0.3.0; ^0.0.3: <0.0.4)
//	~1.2.3, ~1.2      >=1.2.3 <1.3.0;  ~1: >=1.0.0 <2.0.0
//	1.x, 1.2.x, 1.*   the wildcard part may be anything
//
// A missing part reads as a wildcard ("1.2" is 1.2.x; ">1.2" is >=1.3.0,
// "<=1.2" is <1.3.0). A prerelease version satisfies a comparison only when
// the comparison names a prerelease (">=1.0.0-0" admits 1.0.0-rc.1;
// "<1.0.0" does not).
func ParseConstraint(c string) (*Constraint, error) {
	out := &Constraint{}
	for _, group := range strings.Split(c, "||") {
		fields := strings.Fields(strings.ReplaceAll(group, ",", " "))
		var cmps []comparison
		for i := 0; i < len(fields); i++ {
			f := fields[i]
			if isOperator(f) { // ">= 1.0.0": the operator stands apart
				if i+1 == len(fields) {
					return nil, constraintError(c, fmt.Errorf("%q has no version after it", f))
				}
				i++
				f += fields[i]
			}
			cmp, err := parseComparison(f)
			if err != nil {
				return nil, constraintError(c, err)
			}
			cmps = append(cmps, cmp)
		}
		if len(cmps) == 0 {
			if strings.TrimSpace(c) != "" {
				return nil, constraintError(c, errors.New("an empty alternative"))
			}
			cmps = []comparison{{op: "="}} // "": any version
		}
		out.any = append(out.any, cmps)
	}
	return out, nil
}

func constraintError(c string, err error) error {
	return fmt.Errorf("parse version constraint %q: %v: %w", c, err, ErrVersion)
}

// operators, longest first so that ">=" is not read as ">".
var operators = []string{"!=", ">=", "=>", "<=", "=<", "~>", "=", ">", "<", "~", "^"}

func isOperator(s string) bool {
	for _, op := range operators {
		if s == op {
			return true
		}
	}
	return false
}

func parseComparison(s string) (comparison, error) {
	op := "="
	for _, o := range operators {
		if strings.HasPrefix(s, o) {
			op, s = o, s[len(o):]
			break
		}
	}
	switch op {
	case "=>":
		op = ">="
	case "=<":
		op = "<="
	case "~>":
		op = "~"
	}
	v, err := parsePartial(strings.TrimPrefix(strings.TrimSpace(s), "v"), true)
	if err != nil {
		return comparison{}, fmt.Errorf("%q: %v", op+s, err)
	}
	return comparison{op: op, v: v}, nil
}

// Check reports whether v satisfies the constraint.
func (c *Constraint) Check(v *Version) bool {
	for _, group := range c.any {
		ok := true
		for _, cmp := range group {
			if !cmp.check(v) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// check applies one comparison. lo is the comparison's version with its
// missing parts 0; hi is the first version after the ones its wildcard
// covers (nil: no bound).
func (c comparison) check(v *Version) bool {
	if len(v.pre) > 0 && len(c.v.pre) == 0 {
		return false
	}
	lo := &c.v.Version
	hi := c.v.next(c.v.set)
	exact := c.v.set == 3
	inRange := func(hi *Version) bool { return v.Compare(lo) >= 0 && (hi == nil || v.Compare(hi) < 0) }
	switch c.op {
	case "=":
		if exact {
			return v.Compare(lo) == 0
		}
		return inRange(hi)
	case "!=":
		if exact {
			return v.Compare(lo) != 0
		}
		return !inRange(hi)
	case ">":
		if exact {
			return v.Compare(lo) > 0
		}
		return hi != nil && v.Compare(hi) >= 0
	case ">=":
		return v.Compare(lo) >= 0
	case "<":
		return v.Compare(lo) < 0
	case "<=":
		if exact {
			return v.Compare(lo) <= 0
		}
		return hi == nil || v.Compare(hi) < 0
	case "~": // the minor version when given, else the major, is fixed
		return inRange(c.v.next(min(max(c.v.set, 1), 2)))
	case "^": // the left-most non-zero part given is fixed
		switch {
		case c.v.set == 0:
			return true
		case c.v.major > 0 || c.v.set == 1:
			return inRange(c.v.next(1))
		case c.v.minor > 0 || c.v.set == 2:
			return inRange(c.v.next(2))
		default:
			return inRange(c.v.next(3))
		}
	}
	return false
}

// next is the first release after every version whose first parts (1:
// major, 2: major and minor, 3: all three) are p's; nil for 0 (every
// version matches).
func (p partial) next(parts int) *Version {
	switch parts {
	case 0:
		return nil
	case 1:
		return &Version{major: p.major + 1}
	case 2:
		return &Version{major: p.major, minor: p.minor + 1}
	}
	return &Version{major: p.major, minor: p.minor, patch: p.patch + 1}
}
