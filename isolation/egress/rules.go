package egress

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"

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

// Rule is one host pattern with an optional port (netrule owns its
// syntax, normalisation and matching).
type Rule = netrule.Rule

// ParseRule parses "HOST[:PORT]" (optionally prefixed with
// "network:external:"), as netrule.ParseRule does: for callers that hold
// strings, such as tests and a policy's host lists.
func ParseRule(s string) (Rule, error) { return netrule.ParseRule(s) }

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
	rs.LocalhostPorts = append([]int(nil), localhostPorts...)
	if err := rs.Check(); err != nil {
		return Rules{}, err
	}
	return rs, nil
}

// Check refuses rules the proxy cannot apply as written: a host that is
// not in the canonical form netrule.ParseHost gives (a rule built in code
// rather than parsed), or a port out of range. The proxy checks its rules
// when it starts, so a plan's typed rules are checked like parsed ones.
func (rs Rules) Check() error {
	for _, list := range [][]Rule{rs.Allow, rs.Deny} {
		for _, r := range list {
			if h, err := netrule.ParseHost(r.Host); err != nil || h != r.Host || r.Port < 0 || r.Port > 65535 {
				return fmt.Errorf("rule %+v is not a canonical network rule (write it as netrule.ParseRule reads it): %w", r, ErrBadRule)
			}
		}
	}
	for _, p := range rs.LocalhostPorts {
		if p < 1 || p > 65535 {
			return fmt.Errorf("parse localhost port %d: must be from 1 to 65535: %w", p, ErrBadRule)
		}
	}
	return nil
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
type target = netrule.Target

// Admit is the proxy's whole decision on host:port before any name
// resolution: first the targets no grant can allow, with that reason (a
// cloud metadata name, localhost, an IP literal of a class netrule
// refuses), then
// Decide. Policy and explain read the same classes (netrule), so what
// they allow Admit allows.
func (rs Rules) Admit(host string, port int) (Verdict, string) {
	t, err := netrule.ParseTarget(host)
	if err != nil {
		return Deny, "invalid target: " + err.Error()
	}
	return rs.admit(t, port, nil)
}

// admit is Admit of a parsed target; exempt, when not nil, lets the test
// resolver's own addresses through the class check.
func (rs Rules) admit(t target, port int, exempt func(netip.Addr) bool) (Verdict, string) {
	if !t.IsIP() && netrule.IsMetadataName(t.Name) {
		return Deny, t.Name + " is a cloud metadata endpoint; the proxy never connects to it, whatever the grants say"
	}
	if !t.IsIP() {
		// localhost and names under .localhost are this machine by
		// definition (RFC 6761), whatever a resolver says.
		if refused, why := netrule.RefusedHost(t.Name); refused {
			return Deny, why
		}
	}
	if t.IsIP() && (exempt == nil || !exempt(t.IP)) {
		if c := netrule.ClassifyAddr(t.IP); c.Refused() {
			return Deny, refusedAddrReason(t.String(), t.IP, c)
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
	t, err := netrule.ParseTarget(host)
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
		if r.MatchTarget(t, true) && r.DeniesPort(port) {
			return Deny, fmt.Sprintf("%s:%d is denied by the operator's policy (deny %s); no permission can allow it",
				t.String(), port, r.String())
		}
	}
	for _, r := range rs.Allow {
		if r.MatchTarget(t, false) && r.AllowsPort(port) {
			return Allow, "granted by " + r.String()
		}
	}
	why := fmt.Sprintf("no permission grants %s:%d", t.String(), port)
	if t.IsIP() {
		if c := netrule.ClassifyAddr(t.IP); c.Refused() {
			// No grant can help; say so rather than suggest one.
			return Deny, refusedAddrReason(t.String(), t.IP, c)
		}
		why += " (an IP address needs a grant of its own; host-name grants and \"*\" do not cover it)"
	}
	return Deny, why + "; the permission that would allow it is " + suggest(t, port)
}

// deniedAddr reports a deny entry that names addr itself, if any.
func (rs Rules) deniedAddr(addr netip.Addr, port int) (Rule, bool) {
	addr = addr.Unmap()
	for _, r := range rs.Deny {
		if a, err := netip.ParseAddr(r.Host); err == nil && a == addr && r.DeniesPort(port) {
			return r, true
		}
	}
	return Rule{}, false
}

// suggest is the permission string that would grant t:port.
func suggest(t target, port int) string {
	return Rule{Host: t.String(), Port: port}.String()
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
	t, err := netrule.ParseTarget(h)
	if err != nil {
		return false
	}
	for _, r := range rs.Allow {
		if r.MatchTarget(t, false) {
			return true
		}
	}
	return false
}
