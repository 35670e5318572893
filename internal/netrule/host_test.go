package netrule

import "testing"

// HostMatches reads host as a name (a pattern given as one is compared as
// text); Covers compares two patterns.
func TestHostMatchesAndCovers(t *testing.T) {
	for _, c := range []struct {
		pattern, host   string
		matches, covers bool
	}{
		{"*", "example.com", true, true},
		{"*", "*", true, true},
		{"*.example.com", "a.example.com", true, true},
		{"*.example.com", "example.com", false, false},
		{"*.example.com", "*.a.example.com", true, true},
		{"*.example.com", "*.example.com", true, true},
		{"*.a.example.com", "*.example.com", false, false},
		{"Example.COM.", "example.com", true, true},
		{"example.com", "*.example.com", false, false},
		{"example.com", "*", false, false},
		{"example.com", "badexample.com", false, false},
	} {
		if got := HostMatches(c.pattern, c.host); got != c.matches {
			t.Errorf("HostMatches(%q, %q) = %v, want %v", c.pattern, c.host, got, c.matches)
		}
		if got := Covers(c.pattern, c.host); got != c.covers {
			t.Errorf("Covers(%q, %q) = %v, want %v", c.pattern, c.host, got, c.covers)
		}
	}
}
