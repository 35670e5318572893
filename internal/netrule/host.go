package netrule

import "strings"

// HostMatches reports whether host is matched by pattern: "*" matches any
// host, "*.example.com" matches any subdomain of example.com but not the
// apex, anything else matches itself. Both are compared case-insensitively
// and without a trailing dot.
func HostMatches(pattern, host string) bool {
	pattern = strings.TrimSuffix(strings.ToLower(pattern), ".")
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	switch {
	case pattern == "*":
		return host != ""
	case strings.HasPrefix(pattern, "*."):
		return strings.HasSuffix(host, pattern[1:]) && len(host) > len(pattern)-1
	default:
		return pattern == host
	}
}

// Covers reports whether every host the pattern grant allows is matched
// by pattern: the policy's host rules against a grant, and a step's grant
// against the grants of the tool it runs in.
func Covers(pattern, grant string) bool {
	pattern = strings.TrimSuffix(strings.ToLower(pattern), ".")
	grant = strings.TrimSuffix(strings.ToLower(grant), ".")
	switch {
	case pattern == "*":
		return true
	case grant == "*":
		return false
	case strings.HasPrefix(grant, "*."):
		if !strings.HasPrefix(pattern, "*.") {
			return false
		}
		return pattern == grant || HostMatches(pattern, strings.TrimPrefix(grant, "*."))
	default:
		return HostMatches(pattern, grant)
	}
}
