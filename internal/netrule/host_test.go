package netrule

import "testing"

// Covers compares two patterns; a grant's MatchTarget reads the second as
// a host name or IP literal.
func TestCoversAndMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, host   string
		matches, covers bool
	}{
		{"*", "example.com", true, true},
		{"*", "*", false, true},
		{"*", "192.0.2.1", false, true},
		{"*.example.com", "a.example.com", true, true},
		{"*.example.com", "example.com", false, false},
		{"*.example.com", "*.a.example.com", false, true},
		{"*.example.com", "*.example.com", false, true},
		{"*.a.example.com", "*.example.com", false, false},
		{"Example.COM.", "example.com", true, true},
		{"example.com", "EXAMPLE.com.", true, true},
		{"example.com", "*.example.com", false, false},
		{"example.com", "*", false, false},
		{"example.com", "badexample.com", false, false},
		{"192.0.2.1", "::ffff:192.0.2.1", true, true},
		{"[2001:db8::1]", "2001:DB8:0::1", true, true},
		{"*.example.com", "192.0.2.1", false, false},
		{"ex*ample.com", "example.com", false, false},
	} {
		got := false
		if p, err := ParseHost(c.pattern); err == nil {
			got = Rule{Host: p}.Allows(c.host, 443)
		}
		if got != c.matches {
			t.Errorf("rule %q allows %q = %v, want %v", c.pattern, c.host, got, c.matches)
		}
		if got := Covers(c.pattern, c.host); got != c.covers {
			t.Errorf("Covers(%q, %q) = %v, want %v", c.pattern, c.host, got, c.covers)
		}
		// As a grant, "*" covers no IP literal; otherwise the same.
		grantCovers := c.covers && !(c.pattern == "*" && c.host == "192.0.2.1")
		if got := GrantCovers(c.pattern, c.host); got != grantCovers {
			t.Errorf("GrantCovers(%q, %q) = %v, want %v", c.pattern, c.host, got, grantCovers)
		}
	}
}
