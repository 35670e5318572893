package egress

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
)

// Verdict is the outcome of a connection attempt.
type Verdict string

const (
	// Allow: the rules and the address checks admitted the connection.
	Allow Verdict = "allow"
	// Deny: a rule, the address checks or a limit refused it.
	Deny Verdict = "deny"
)

// Rule is one host pattern with an optional port.
//
// Host is lower-case and one of: "*" (any host name), "*.suffix" (any
// subdomain of suffix, not suffix itself), an exact DNS name, or an IP
// literal (canonical form, IPv4-mapped IPv6 unmapped).
type Rule struct {
	Host string
	// Port is 1..65535, or 0 for "80 and 443".
	Port int
}

// defaultPorts are the ports a grant without a port admits.
var defaultPorts = [...]int{80, 443}

const externalPrefix = "network:external:"

// ParseRule parses "HOST[:PORT]" (optionally prefixed with
// "network:external:"). IPv6 literals are written bare ("2001:db8::1") or
// in brackets with a port ("[2001:db8::1]:443").
func ParseRule(s string) (Rule, error) {
	bad := func(why string) (Rule, error) {
		return Rule{}, fmt.Errorf("parse egress rule %q: %s: %w", s, why, ErrBadRule)
	}
	rest := strings.TrimPrefix(strings.TrimSpace(s), externalPrefix)
	host, port := rest, ""
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
		}
		if _, err := netip.ParseAddr(host); err != nil {
			return bad("brackets hold only an IPv6 address")
		}
	case strings.Count(rest, ":") > 1:
		// A bare IPv6 literal: no port.
	default:
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			host, port = rest[:i], rest[i+1:]
		}
	}
	r := Rule{}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return bad("port must be a number from 1 to 65535")
		}
		r.Port = n
	}
	h, err := normalizePattern(host)
	if err != nil {
		return bad(err.Error())
	}
	r.Host = h
	return r, nil
}

// normalizePattern checks and canonicalises a rule's host.
func normalizePattern(h string) (string, error) {
	if h == "" {
		return "", fmt.Errorf("empty host")
	}
	if h == "*" {
		return h, nil
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", fmt.Errorf("an IP literal must not carry a zone")
		}
		return a.Unmap().String(), nil
	}
	if strings.HasPrefix(h, "*.") {
		name, err := normalizeName(h[2:])
		if err != nil {
			return "", err
		}
		return "*." + name, nil
	}
	return normalizeName(h)
}

// normalizeName lower-cases a DNS name, drops one trailing dot and checks
// its characters and lengths. It rejects wildcards.
func normalizeName(h string) (string, error) {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "" {
		return "", fmt.Errorf("empty host")
	}
	if len(h) > 253 {
		return "", fmt.Errorf("host name longer than 253 characters")
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" {
			return "", fmt.Errorf("host %q has an empty label", h)
		}
		if len(label) > 63 {
			return "", fmt.Errorf("host %q has a label longer than 63 characters", h)
		}
		for _, c := range label {
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			case c == '*':
				return "", fmt.Errorf("a wildcard is allowed only as a leading \"*.\"")
			default:
				return "", fmt.Errorf("character %q is not allowed in a host name", c)
			}
		}
	}
	return h, nil
}

// String renders the rule in permission form, the form the 403 answer
// suggests: "network:external:HOST[:PORT]", an IPv6 literal in brackets
// when a port follows.
func (r Rule) String() string {
	if r.Port == 0 {
		return externalPrefix + r.Host
	}
	h := r.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return externalPrefix + h + ":" + strconv.Itoa(r.Port)
}

// matchPort reports whether a grant admits port: its own port, or 80
// and 443 when it has none.
func (r Rule) matchPort(port int) bool {
	if r.Port != 0 {
		return r.Port == port
	}
	for _, p := range defaultPorts {
		if p == port {
			return true
		}
	}
	return false
}

// denyPort reports whether a deny entry covers port: its own port, or
// every port when it has none (a deny is never narrower than it reads).
func (r Rule) denyPort(port int) bool { return r.Port == 0 || r.Port == port }

// matchHost reports whether the rule's pattern covers a normalised target.
// anyCoversIP says whether "*" covers IP literals (true for deny entries,
// false for grants).
func (r Rule) matchHost(t target, anyCoversIP bool) bool {
	switch {
	case r.Host == "*":
		return !t.isIP || anyCoversIP
	case t.isIP:
		a, err := netip.ParseAddr(r.Host)
		return err == nil && a == t.ip
	default:
		return netrule.HostMatches(r.Host, t.name)
	}
}

// Rules are what one run's proxy admits. Deny wins over Allow.
type Rules struct {
	// Allow holds the run's network:external grants.
	Allow []Rule
	// Deny holds the operator policy's deny entries. A deny without a port
	// covers every port (not only 80 and 443, as a grant would); a deny
	// "*" covers IP literals too; a deny IP literal also refuses any name
	// that resolves to that address.
	Deny []Rule
	// LocalhostPorts are the host 127.0.0.1 ports the sandbox may reach
	// (network:localhost:PORT).
	LocalhostPorts []int
}

// ParseRules parses allow and deny entries (see ParseRule) and checks the
// localhost ports.
func ParseRules(allow, deny []string, localhostPorts []int) (Rules, error) {
	var rs Rules
	for _, s := range allow {
		r, err := ParseRule(s)
		if err != nil {
			return Rules{}, err
		}
		rs.Allow = append(rs.Allow, r)
	}
	for _, s := range deny {
		r, err := ParseRule(s)
		if err != nil {
			return Rules{}, err
		}
		rs.Deny = append(rs.Deny, r)
	}
	for _, p := range localhostPorts {
		if p < 1 || p > 65535 {
			return Rules{}, fmt.Errorf("parse localhost port %d: must be from 1 to 65535: %w", p, ErrBadRule)
		}
	}
	rs.LocalhostPorts = append([]int(nil), localhostPorts...)
	return rs, nil
}

// Describe renders the rules one line each, for plans and explanations.
func (rs Rules) Describe() []string {
	var out []string
	for _, r := range rs.Deny {
		out = append(out, "deny "+r.String())
	}
	for _, r := range rs.Allow {
		out = append(out, "allow "+r.String())
	}
	ports := append([]int(nil), rs.LocalhostPorts...)
	sort.Ints(ports)
	for _, p := range ports {
		out = append(out, "allow network:localhost:"+strconv.Itoa(p))
	}
	return out
}

// target is a normalised connection target.
type target struct {
	name string     // lower-case DNS name, when !isIP
	ip   netip.Addr // unmapped, when isIP
	isIP bool
}

// display is the host as records and messages show it.
func (t target) display() string {
	if t.isIP {
		return t.ip.String()
	}
	return t.name
}

// parseTarget normalises a requested host: an IP literal (brackets and
// IPv4-mapped form removed) or a DNS name.
func parseTarget(host string) (target, error) {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return target{}, fmt.Errorf("host %q: scoped addresses are not allowed", host)
		}
		return target{ip: a.Unmap(), isIP: true}, nil
	}
	name, err := normalizeName(h)
	if err != nil {
		return target{}, fmt.Errorf("host %q: %v", host, err)
	}
	return target{name: name}, nil
}

// Admit is the proxy's whole decision on host:port before any name
// resolution: first the targets no grant can allow, with that reason (a
// cloud metadata name, localhost, an IP literal of a class netrule
// refuses), then
// Decide. Policy and explain read the same classes (netrule), so what
// they allow Admit allows.
func (rs Rules) Admit(host string, port int) (Verdict, string) {
	t, err := parseTarget(host)
	if err != nil {
		return Deny, "invalid target: " + err.Error()
	}
	return rs.admit(t, port, nil)
}

// admit is Admit of a parsed target; exempt, when not nil, lets the test
// resolver's own addresses through the class check.
func (rs Rules) admit(t target, port int, exempt func(netip.Addr) bool) (Verdict, string) {
	if !t.isIP && netrule.IsMetadataName(t.name) {
		return Deny, t.name + " is a cloud metadata endpoint; the proxy never connects to it, whatever the grants say"
	}
	if !t.isIP {
		// localhost and names under .localhost are this machine by
		// definition (RFC 6761), whatever a resolver says.
		if refused, why := netrule.RefusedHost(t.name); refused {
			return Deny, why
		}
	}
	if t.isIP && (exempt == nil || !exempt(t.ip)) {
		if c := netrule.ClassifyAddr(t.ip); c.Refused() {
			return Deny, refusedAddrReason(t.display(), t.ip, c)
		}
	}
	return rs.decide(t, port)
}

// Decide applies the rules to a requested host and port, before any name
// resolution: deny entries first, then grants. The reason is a sentence
// fit for a person: for a refusal it names what would allow the
// connection, when a grant can. Decide does not check addresses; the proxy
// does that after resolving (see netrule.ClassifyAddr); Decide only uses the class
// of an IP literal to word a refusal that no grant could lift.
func (rs Rules) Decide(host string, port int) (Verdict, string) {
	t, err := parseTarget(host)
	if err != nil {
		return Deny, "invalid target: " + err.Error()
	}
	return rs.decide(t, port)
}

func (rs Rules) decide(t target, port int) (Verdict, string) {
	if port < 1 || port > 65535 {
		return Deny, fmt.Sprintf("invalid port %d", port)
	}
	for _, r := range rs.Deny {
		if r.matchHost(t, true) && r.denyPort(port) {
			return Deny, fmt.Sprintf("%s:%d is denied by the operator's policy (deny %s); no permission can allow it",
				t.display(), port, r.String())
		}
	}
	for _, r := range rs.Allow {
		if r.matchHost(t, false) && r.matchPort(port) {
			return Allow, "granted by " + r.String()
		}
	}
	why := fmt.Sprintf("no permission grants %s:%d", t.display(), port)
	if t.isIP {
		if c := netrule.ClassifyAddr(t.ip); c.Refused() {
			// No grant can help; say so rather than suggest one.
			return Deny, refusedAddrReason(t.display(), t.ip, c)
		}
		why += " (an IP address needs a grant of its own; host-name grants and \"*\" do not cover it)"
	}
	return Deny, why + "; the permission that would allow it is " + suggest(t, port)
}

// deniedAddr reports a deny entry that names addr itself, if any.
func (rs Rules) deniedAddr(addr netip.Addr, port int) (Rule, bool) {
	addr = addr.Unmap()
	for _, r := range rs.Deny {
		if a, err := netip.ParseAddr(r.Host); err == nil && a == addr && r.denyPort(port) {
			return r, true
		}
	}
	return Rule{}, false
}

// suggest is the permission string that would grant t:port.
func suggest(t target, port int) string {
	return Rule{Host: t.display(), Port: port}.String()
}

// localhostAllowed reports whether the localhost port is granted.
func (rs Rules) localhostAllowed(port int) bool {
	for _, p := range rs.LocalhostPorts {
		if p == port {
			return true
		}
	}
	return false
}

// AllowsHost reports whether a grant covers the host name or IP literal
// h on some port.
func (rs Rules) AllowsHost(h string) bool {
	t, err := parseTarget(h)
	if err != nil {
		return false
	}
	for _, r := range rs.Allow {
		if r.matchHost(t, false) {
			return true
		}
	}
	return false
}
