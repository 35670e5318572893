package tool

import (
	"errors"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// ErrVersion is a version or version constraint that does not parse.
var ErrVersion = errors.New("invalid version")

// ParseVersion parses a semantic version MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD],
// with or without a leading "v"; missing minor or patch read as 0 ("1.2"
// is 1.2.0). Versions order as SemVer 2.0.0 §11 says: a prerelease sorts
// before its release, and numeric prerelease identifiers compare as
// numbers (alpha.2 < alpha.10). github.com/Masterminds/semver/v3 does the
// parsing and the ordering.
func ParseVersion(v string) (*semver.Version, error) {
	out, err := semver.NewVersion(strings.TrimSpace(v))
	if err != nil {
		return nil, fmt.Errorf("parse version %q: %v (want MAJOR.MINOR.PATCH): %w", v, err, ErrVersion)
	}
	return out, nil
}

// ParseConstraint parses a version constraint in the grammar of
// github.com/Masterminds/semver/v3: comparisons joined by commas or
// spaces, all of which must hold ("||" between groups: either holds).
// Forms:
//
//	*, "" or x        any version
//	1.2.3, =1.2.3     exactly
//	>=1.0.0 >1 <2.0 <=1.4 !=1.3.0
//	^1.2.3            >=1.2.3 <2.0.0 (^0.2.3: <0.3.0; ^0.0.3: <0.0.4)
//	~1.2.3, ~1.2      >=1.2.3 <1.3.0;  ~1: >=1.0.0 <2.0.0
//	1.x, 1.2.x, 1.*   the wildcard part may be anything
//
// A prerelease version satisfies a constraint only when one of its
// comparisons names a prerelease (">=1.0.0-0" admits 1.0.0-rc.1; "<1.0.0"
// does not), as npm and Cargo read them.
func ParseConstraint(c string) (*semver.Constraints, error) {
	s := strings.TrimSpace(c)
	if s == "" {
		s = "*"
	}
	out, err := semver.NewConstraint(s)
	if err != nil {
		return nil, fmt.Errorf("parse version constraint %q: %v: %w", c, err, ErrVersion)
	}
	return out, nil
}
