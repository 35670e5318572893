package netrule

import "strings"

// Covers reports whether every host the pattern grant allows is matched
// by pattern: the policy's host rules against a grant, and a step's grant
// against the grants of the tool it runs in. Both are read with ParseHost
// (so case, a trailing dot, brackets and an IPv4-mapped spelling do not
// matter); "*" covers everything, IP literals included; a pattern that
// does not parse covers nothing and is covered by nothing.
func Covers(pattern, grant string) bool {
	p, err := ParseHost(pattern)
	if err != nil {
		return false
	}
	g, err := ParseHost(grant)
	if err != nil {
		return false
	}
	switch {
	case p == "*":
		return true
	case g == "*":
		return false
	case strings.HasPrefix(g, "*."):
		// g's hosts are the subdomains of its suffix: p covers them when
		// it is g, or when it matches the suffix as a subdomain.
		return p == g || strings.HasPrefix(p, "*.") && Rule{Host: p}.MatchTarget(Target{Name: g[2:]}, false)
	}
	t, err := ParseTarget(g)
	return err == nil && Rule{Host: p}.MatchTarget(t, true)
}
