package tool

import (
	"errors"
	"testing"
)

func TestConstraint(t *testing.T) {
	tests := []struct {
		c, v string
		want bool
	}{
		{">=1.0.0", "1.0.0", true},
		{">=1.0.0", "0.9.9", false},
		{">=1.0.0", "2.3.4", true},
		{">= 1.0.0", "1.2.0", true},
		{"^2.0.0", "2.9.1", true},
		{"^2.0.0", "3.0.0", false},
		{"^2.0.0", "1.9.0", false},
		{"^0.2.3", "0.2.9", true},
		{"^0.2.3", "0.3.0", false},
		{"^0.0.3", "0.0.4", false},
		{"~1.2", "1.2.9", true},
		{"~1.2", "1.3.0", false},
		{"~1.2.3", "1.2.2", false},
		{"~1", "1.9.0", true},
		{"1.x", "1.4.2", true},
		{"1.x", "2.0.0", false},
		{"1.2.x", "1.2.7", true},
		{"1.2.x", "1.3.0", false},
		{"*", "0.0.1", true},
		{"", "9.9.9", true},
		{">=1.0.0, <2.0.0", "1.5.0", true},
		{">=1.0.0, <2.0.0", "2.0.0", false},
		{">=1.0.0,<2.0.0", "0.5.0", false},
		{"1.2.3", "1.2.3", true},
		{"=1.2.3", "1.2.4", false},
		{"!=1.2.3", "1.2.4", true},
		{">1.2", "1.2.9", false},
		{">1.2", "1.3.0", true},
		{"<=1.2", "1.2.9", true},
		{"<1.0.0", "1.0.0-rc1", false}, // a prerelease needs a constraint that names one
		{">=1.0.0-0", "1.0.0-rc1", true},
		{">=1.0.0", "1.0.0-rc1", false},
		{">=1.0.0-alpha.2", "1.0.0-alpha.10", true},
		{"<1.0.0-alpha.10", "1.0.0-alpha.2", true},
		{">=1.0.0 <2.0.0 || >=3.0.0", "3.1.0", true},
		{"1", "1.7.0", true},
		// Other forms: operator aliases, partial versions, build
		// metadata, a leading v.
		{"=>1.2", "1.2.0", true},
		{"=<1.2", "1.2.5", true},
		{"~>1.2", "1.2.9", true},
		{"~>1.2", "1.3.0", false},
		{"^0", "0.9.0", true},
		{"^0", "1.0.0", false},
		{"^0.0", "0.0.9", true},
		{"^0.0", "0.1.0", false},
		{"^1.x", "1.9.0", true},
		{"!=1.2", "1.2.7", false},
		{"!=1.2", "1.3.0", true},
		{"<1.2", "1.1.9", true},
		{"<1.2", "1.2.0", false},
		{"x", "4.0.0", true},
		{"*", "1.0.0-rc.1", false},
		{"1.2.3+build.5", "1.2.3", true},
		{"v1.2.3", "1.2.3", true},
		{"<2 || >=3.1", "3.0.5", false},
	}
	for _, tt := range tests {
		c, err := ParseConstraint(tt.c)
		if err != nil {
			t.Errorf("%q: %v", tt.c, err)
			continue
		}
		v, err := ParseVersion(tt.v)
		if err != nil {
			t.Fatalf("%q: %v", tt.v, err)
		}
		if got := c.Check(v); got != tt.want {
			t.Errorf("%q matches %s = %v, want %v", tt.c, tt.v, got, tt.want)
		}
	}
}

func TestConstraintErrors(t *testing.T) {
	for _, c := range []string{">=", "^a.b", "1.2.3.4", "soon",
		"1.x.3", "1.x-rc", ">=1.0 ||", "1.2.3-", "1.2.3-a..b", "1.2.3-a_b", "~", "1.-2"} {
		if _, err := ParseConstraint(c); !errors.Is(err, ErrVersion) {
			t.Errorf("%q: err %v, want ErrVersion", c, err)
		}
	}
	for _, v := range []string{"", "a", "1.2.3.4", "1.0.0-01"} {
		if _, err := ParseVersion(v); !errors.Is(err, ErrVersion) {
			t.Errorf("version %q: err %v", v, err)
		}
	}
	if v, err := ParseVersion("v1.2"); err != nil || v.String() != "1.2.0" {
		t.Errorf("v1.2: %v %v", v, err)
	}
}

// Prereleases order as SemVer 2.0.0 §11 says: numeric identifiers as
// numbers, numeric before alphanumeric, fewer identifiers first. Before,
// prereleases compared as strings and alpha.10 sorted before alpha.2.
func TestPrereleaseOrder(t *testing.T) {
	order := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.2", "1.0.0-alpha.10", "1.0.0-alpha.beta",
		"1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1-0", "1.0.1"}
	for i := range order {
		for j := range order {
			a, err := ParseVersion(order[i])
			if err != nil {
				t.Fatal(err)
			}
			b, err := ParseVersion(order[j])
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", order[i], order[j], got, want)
			}
		}
	}
}

// FuzzParseVersion: a version that parses prints as one that parses to
// the same version.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1.2.3", "v1", "1.0.0-alpha.10+b.1", "0.0.0-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		w, err := ParseVersion(v.String())
		if err != nil || w.Compare(v) != 0 || w.String() != v.String() {
			t.Errorf("%q printed as %q, which parses to %v, %v", s, v.String(), w, err)
		}
		_, _ = ParseConstraint(s)
	})
}
