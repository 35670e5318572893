package netrule

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// ErrBadRule is wrapped by every error about a host pattern, a host name
// or a port this package refuses.
var ErrBadRule = errors.New("invalid network rule")

// ExternalPrefix starts a rule's permission form,
// "network:external:HOST[:PORT]".
const ExternalPrefix = "network:external:"

// defaultPorts are the ports a rule without a port allows.
var defaultPorts = [...]int{80, 443}

// Rule is one network:external rule: a host pattern and an optional port.
// The plan carries rules in this form; its JSON is the permission string
// (String), which ParseRule reads back to the same rule.
type Rule struct {
	// Host is a pattern as ParseHost returns it: "*" (any host name),
	// "*.suffix" (any subdomain of suffix, not suffix itself), a
	// lower-case DNS name without a trailing dot, or an IP literal in
	// canonical form (IPv4-mapped IPv6 unmapped).
	Host string
	// Port is 1..65535, or 0 for 80 and 443.
	Port int
}

// ParseRule parses "HOST[:PORT]", with or without the "network:external:"
// prefix. An IPv6 literal is written bare ("2001:db8::1", no port) or in
// brackets ("[2001:db8::1]" or "[2001:db8::1]:443"). It is the one parser
// of the grammar: tool validation, permissions, policy, the plan and the
// egress proxy all read rules through it.
func ParseRule(s string) (Rule, error) {
	host, port, err := SplitRule(s)
	if err != nil {
		return Rule{}, err
	}
	r := Rule{}
	if port != "" {
		if r.Port, err = ParsePort(port); err != nil {
			return Rule{}, fmt.Errorf("rule %q: %w", s, err)
		}
	}
	if r.Host, err = ParseHost(host); err != nil {
		return Rule{}, fmt.Errorf("rule %q: %w", s, err)
	}
	return r, nil
}

// SplitRule splits "HOST[:PORT]" (the prefix "network:external:"
// optional) into its host and port texts without checking either: a host
// in brackets is returned without them; a host with more than one colon
// and no brackets is a bare IPv6 literal and has no port.
func SplitRule(s string) (host, port string, err error) {
	rest := strings.TrimPrefix(s, ExternalPrefix)
	bad := func(why string) (string, string, error) {
		return "", "", fmt.Errorf("rule %q: %s: %w", s, why, ErrBadRule)
	}
	switch {
	case strings.HasPrefix(rest, "["):
		end := strings.Index(rest, "]")
		if end < 0 {
			return bad("missing ']'")
		}
		host = rest[1:end]
		after := rest[end+1:]
		if after != "" {
			if !strings.HasPrefix(after, ":") {
				return bad("text after ']' must be :PORT")
			}
			port = after[1:]
			if port == "" {
				return bad("empty port after ':'")
			}
		}
		if _, err := netip.ParseAddr(host); err != nil {
			return bad("brackets hold only an IP address")
		}
	case strings.Count(rest, ":") > 1:
		host = rest // a bare IPv6 literal: no port
	default:
		host = rest
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			host, port = rest[:i], rest[i+1:]
			if port == "" {
				return bad("empty port after ':'")
			}
		}
	}
	return host, port, nil
}

// ParsePort reads a rule's port: a number from 1 to 65535.
func ParsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != s {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535 written without a sign or leading zeros: %w", s, ErrBadRule)
	}
	return n, nil
}

// ParseHost checks a host pattern and returns its canonical form: "*",
// "*.suffix", a DNS name (lower case, one trailing dot dropped, labels of
// letters, digits, '-' and '_', at most 63 characters each, 253 in all) or
// an IP literal (brackets allowed, no zone, IPv4-mapped IPv6 unmapped).
func ParseHost(h string) (string, error) {
	if h == "*" {
		return h, nil
	}
	if rest, ok := strings.CutPrefix(h, "*."); ok {
		if rest == "" {
			return "", fmt.Errorf("host %q: empty host after \"*.\": %w", h, ErrBadRule)
		}
		name, err := ParseName(rest)
		if err != nil {
			return "", err
		}
		return "*." + name, nil
	}
	t, err := ParseTarget(h)
	if err != nil {
		return "", err
	}
	return t.String(), nil
}

// ParseName checks a DNS name and returns it lower-cased without one
// trailing dot. It refuses wildcards and IP-literal syntax.
func ParseName(h string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("host %q: %s: %w", h, why, ErrBadRule)
	}
	for _, c := range h {
		if c > 0x7f {
			// Before lower-casing, which makes the Kelvin sign "k".
			return bad(fmt.Sprintf("character %q is not allowed in a host name (write an internationalised name in its xn-- form)", c))
		}
	}
	n := strings.ToLower(strings.TrimSuffix(h, "."))
	if n == "" {
		return bad("empty host")
	}
	if numericLabel(n[strings.LastIndexByte(n, '.')+1:]) {
		return bad("it reads as an IPv4 address in a form other than a.b.c.d (a top-level label is never a number): write the address as four decimal numbers")
	}
	if len(n) > 253 {
		return bad("host name longer than 253 characters")
	}
	for _, label := range strings.Split(n, ".") {
		if label == "" {
			return bad("empty label")
		}
		if len(label) > 63 {
			return bad("a label longer than 63 characters")
		}
		for _, c := range label {
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			case c == '*':
				return bad("a wildcard is allowed only as a leading \"*.\"")
			default:
				return bad(fmt.Sprintf("character %q is not allowed in a host name", c))
			}
		}
	}
	return n, nil
}

// numericLabel reports whether a label is a number as inet_aton reads
// one: decimal or octal digits, or 0x and hexadecimal digits.
func numericLabel(l string) bool {
	digits := "0123456789"
	if rest, ok := strings.CutPrefix(l, "0x"); ok {
		l, digits = rest, "0123456789abcdef"
	}
	return l != "" && strings.Trim(l, digits) == ""
}

// ParseNamedHost is ParseHost for a rule that must name its hosts (a
// credential's, an HTTP rule's, a tool's quota): "*" is refused, as it
// would send a secret to, or terminate the TLS of, every host.
func ParseNamedHost(h string) (string, error) {
	n, err := ParseHost(h)
	if err != nil {
		return "", err
	}
	if n == "*" {
		return "", fmt.Errorf("host \"*\": name the hosts (a name or *.suffix), not every host: %w", ErrBadRule)
	}
	return n, nil
}

// String renders the rule in permission form,
// "network:external:HOST[:PORT]", an IPv6 literal in brackets when a port
// follows. ParseRule reads it back to the same rule.
func (r Rule) String() string {
	if r.Port == 0 {
		return ExternalPrefix + r.Host
	}
	h := r.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return ExternalPrefix + h + ":" + strconv.Itoa(r.Port)
}

// MarshalText renders the rule as String does, so a plan's JSON shows
// permission strings.
func (r Rule) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a rule with ParseRule.
func (r *Rule) UnmarshalText(b []byte) error {
	p, err := ParseRule(string(b))
	if err != nil {
		return err
	}
	*r = p
	return nil
}

// Any reports whether the rule's host is "*", any public host.
func (r Rule) Any() bool { return r.Host == "*" }

// Wildcard reports whether the host is a pattern ("*" or "*.suffix")
// rather than one host.
func (r Rule) Wildcard() bool { return r.Host == "*" || strings.HasPrefix(r.Host, "*.") }

// Domain is the domain whose subdomains a "*.domain" rule names, "" for
// any other rule.
func (r Rule) Domain() string {
	d, _ := strings.CutPrefix(r.Host, "*.")
	if d == r.Host {
		return ""
	}
	return d
}

// Ports returns the ports the rule allows: Port, or 80 and 443.
func (r Rule) Ports() []int {
	if r.Port == 0 {
		return defaultPorts[:]
	}
	return []int{r.Port}
}

// AllowsPort reports whether a grant of this rule admits port: its own
// port, or 80 and 443 when it has none.
func (r Rule) AllowsPort(port int) bool {
	for _, p := range r.Ports() {
		if p == port {
			return true
		}
	}
	return false
}

// DeniesPort reports whether a deny entry of this rule covers port: its
// own port, or every port when it has none (a deny is never narrower than
// it reads).
func (r Rule) DeniesPort(port int) bool { return r.Port == 0 || r.Port == port }

// Allows reports whether a grant of this rule admits a connection to
// host:port, as the proxy decides it before name resolution and before
// its refusal of addresses (RefusedHost): "*" does not cover IP literals.
func (r Rule) Allows(host string, port int) bool {
	t, err := ParseTarget(host)
	return err == nil && r.AllowsPort(port) && r.MatchTarget(t, false)
}

// MatchTarget reports whether the rule's host covers the target.
// anyCoversIP says whether "*" covers IP literals: true for a deny entry,
// false for a grant (an IP address needs a grant of its own).
func (r Rule) MatchTarget(t Target, anyCoversIP bool) bool {
	switch {
	case r.Host == "*":
		return !t.IsIP() || anyCoversIP
	case t.IsIP():
		a, err := netip.ParseAddr(r.Host)
		return err == nil && a.Unmap() == t.IP
	case strings.HasPrefix(r.Host, "*."):
		return strings.HasSuffix(t.Name, r.Host[1:]) && len(t.Name) > len(r.Host)-1
	default:
		return r.Host == t.Name
	}
}

// Covers reports whether every connection a grant of o admits, a grant of
// r admits too: r's host pattern covers o's as a grant (GrantCovers: "*"
// covers no IP literal) and r's ports include o's.
func (r Rule) Covers(o Rule) bool {
	if !GrantCovers(r.Host, o.Host) {
		return false
	}
	for _, p := range o.Ports() {
		if !r.AllowsPort(p) {
			return false
		}
	}
	return true
}

// Target is a host a connection asks for, normalised: a DNS name or an IP
// address, never both.
type Target struct {
	// Name is a lower-case DNS name without a trailing dot, when the
	// target is not an IP literal.
	Name string
	// IP is the address, unmapped, when the target is an IP literal.
	IP netip.Addr
}

// IsIP reports whether the target is an IP literal.
func (t Target) IsIP() bool { return t.IP.IsValid() }

// String is the host as records and messages show it.
func (t Target) String() string {
	if t.IsIP() {
		return t.IP.String()
	}
	return t.Name
}

// ParseTarget normalises a requested host: an IP literal (brackets and
// IPv4-mapped form removed; a zone refused) or a DNS name (ParseName; one
// that reads as an IP literal without its trailing dot is that address).
func ParseTarget(host string) (Target, error) {
	lit, bracketed := strings.CutPrefix(host, "[")
	if bracketed {
		lit, bracketed = strings.CutSuffix(lit, "]")
	}
	a, err := netip.ParseAddr(lit)
	switch {
	case err == nil && a.Zone() != "":
		return Target{}, fmt.Errorf("host %q: an IP literal must not carry a zone: %w", host, ErrBadRule)
	case err == nil:
		return Target{IP: a.Unmap()}, nil
	case bracketed:
		return Target{}, fmt.Errorf("host %q: brackets hold only an IP address: %w", host, ErrBadRule)
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(host, ".")); err == nil && a.Is4() {
		return Target{IP: a}, nil // "192.0.2.1." is that address
	}
	name, err := ParseName(host)
	if err != nil {
		return Target{}, err
	}
	return Target{Name: name}, nil
}

// URLRule reads a URL given where a rule is expected (a definition that
// substitutes a {URL} parameter into network:external:{URL}) as the rule
// for its host and port: "https://api.example.com/v1" is
// api.example.com, "http://[2001:db8::1]:8080/" is [2001:db8::1]:8080.
// ok is false when s is not such a URL (no "://", no host, or user
// information in it).
func URLRule(s string) (r Rule, ok bool, err error) {
	if !strings.Contains(s, "://") {
		return Rule{}, false, nil
	}
	u, perr := url.Parse(s)
	if perr != nil || u.Hostname() == "" || u.User != nil {
		return Rule{}, false, nil
	}
	if r.Host, err = ParseHost(u.Hostname()); err != nil {
		return Rule{}, true, err
	}
	if u.Port() != "" {
		if r.Port, err = ParsePort(u.Port()); err != nil {
			return Rule{}, true, err
		}
	}
	return r, true, nil
}
