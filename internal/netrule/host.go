package netrule

import "strings"

// Covers reports whether every host the pattern grant allows is matched
// by pattern read as a deny entry or an operator's host rule: "*" covers
// everything, IP literals included. The policy's network.allow and
// network.deny are read this way against a grant. Both are read with
// ParseHost (so case, a trailing dot, brackets and an IPv4-mapped
// spelling do not matter); a pattern that does not parse covers nothing
// and is covered by nothing.
func Covers(pattern, grant string) bool { return covers(pattern, grant, true) }

// GrantCovers is Covers with pattern read as a grant, as the proxy reads
// one: "*" covers every host name but no IP literal (an IP address needs
// a grant of its own). A step's grant is checked this way against the
// grants of the tool it runs in.
func GrantCovers(pattern, grant string) bool { return covers(pattern, grant, false) }

func covers(pattern, grant string, anyCoversIP bool) bool {
	p, err := ParseHost(pattern)
	if err != nil {
		return false
	}
	g, err := ParseHost(grant)
	if err != nil {
		return false
	}
	switch {
	case p == "*" && (g == "*" || strings.HasPrefix(g, "*.")):
		return true
	case g == "*":
		return false
	case strings.HasPrefix(g, "*."):
		// g's hosts are the subdomains of its suffix: p covers them when
		// it is g, or when it matches the suffix as a subdomain.
		return p == g || strings.HasPrefix(p, "*.") && Rule{Host: p}.MatchTarget(Target{Name: g[2:]}, false)
	}
	t, err := ParseTarget(g)
	return err == nil && Rule{Host: p}.MatchTarget(t, anyCoversIP)
}
