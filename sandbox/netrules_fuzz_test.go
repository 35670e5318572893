package sandbox_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/egress"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/sandbox"
	"github.com/sandboxed-dev/sandboxed/sandbox/explain"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// FuzzNetworkRulesAgree holds validation, the policy, explain's words and
// the egress proxy to one answer for a network:external grant: a grant
// the permission grammar accepts is a rule the proxy can load; the policy
// denies it (for a trusted, approved source under the default policy)
// exactly when the proxy, loaded with the grant and the policy's denied
// hosts, refuses it before any name is resolved; `permissions explain
// --json` denies it exactly then too; and a grant explain calls unusable
// is one the proxy refuses. The seeds run in every `go test`.
func FuzzNetworkRulesAgree(f *testing.F) {
	for _, h := range []string{
		"api.example.com", "api.example.com:8443", "192.0.2.10", "203.0.113.5:22", "2001:db8::1",
		"metadata", "metadata.google.internal", "METADATA.google.internal", "169.254.169.254", "fd00:ec2::254",
		"100.100.100.200", "0.1.2.3", "0.0.0.0", "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1",
		"127.0.0.1", "[::1]", "[::1]:443", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe",
		"2002:7f00:1::", "fe80::1", "224.0.0.1", "255.255.255.255", "198.18.0.1", "localhost", "db.localhost",
		"*.example.com", "*",
	} {
		f.Add(h)
	}
	pol := policy.Default()
	home := explainHome(f)
	f.Fuzz(func(t *testing.T, host string) {
		perm := "network:external:" + host
		grants, err := permissions.Resolve([]string{perm}, "/", "/root")
		if err != nil || len(grants) != 1 || grants[0].Egress == nil {
			return // not a grant: validation refused it
		}
		g := grants[0]
		d, item := decideGrant(t, pol, g)
		rules, err := proxyRules(g, d.EgressDeny)
		if err != nil {
			t.Fatalf("%s: validation accepts it, the proxy's rules do not: %v", perm, err)
		}
		if g.Egress.Any() || g.Egress.Wildcard {
			return // a pattern: no single target to ask the proxy about
		}
		unusable := strings.HasPrefix(g.Describe(), "can never connect")
		pt := explainGrant(t, home, pol, g)
		for _, port := range g.Egress.Ports() {
			v, why := rules.Admit(g.Egress.Host, port)
			if (v == egress.Allow) != (item.Verdict != policy.Deny) {
				t.Errorf("%s port %d: the proxy says %s (%s), the policy %s (%s: %s)", perm, port, v, why, item.Verdict, item.Rule, item.Reason)
			}
			if (v == egress.Allow) != (pt.Verdict != explain.VerdictDeny) {
				t.Errorf("%s port %d: the proxy says %s (%s), explain --json %s (%s)", perm, port, v, why, pt.Verdict, pt.Meaning)
			}
			if unusable && v == egress.Allow {
				t.Errorf("%s port %d: explain calls it unusable (%s), the proxy allows it", perm, port, g.Describe())
			}
		}
	})
}

// proxyRules are the rules the proxy starts with for grant g under the
// policy's denied hosts: the plan's (planEgress), read back from the
// plan's JSON as a server or a run record reads it.
func proxyRules(g permissions.Grant, deny []string) (egress.Rules, error) {
	e, err := sandbox.PlanEgress([]permissions.Grant{g}, deny)
	if err != nil {
		return egress.Rules{}, err
	}
	b, err := json.Marshal(e)
	if err != nil {
		return egress.Rules{}, err
	}
	var back isolation.Egress
	if err := json.Unmarshal(b, &back); err != nil {
		return egress.Rules{}, fmt.Errorf("the plan's JSON %s does not read back: %w", b, err)
	}
	rs := egress.Rules{Allow: back.Allow, Deny: back.Deny}
	return rs, rs.Check()
}

// FuzzNetworkRulePatternsAgree holds every layer to netrule's answers for
// a random host pattern and a random host and port:
//   - validation: the tool's grammar, permissions and the policy accept
//     the pattern exactly when netrule parses it, to the same rule;
//   - matching: the proxy, given the pattern as a grant, admits host:port
//     exactly when the grant (what explain describes) matches it;
//   - covering: a step that asks for exactly host:port is covered by the
//     pattern's grant (composition) exactly when the proxy admits it;
//   - the policy and explain: with the pattern as the policy's only
//     network.deny, the policy's item and `permissions explain --json`
//     deny a grant of host:port exactly when the proxy, loaded as the plan
//     loads it, refuses host:port.
//
// The seeds run in every `go test`.
func FuzzNetworkRulePatternsAgree(f *testing.F) {
	for _, c := range []struct {
		pattern, host string
		port          uint16
	}{
		{"*.example.com", "a.example.com", 443}, {"*.example.com", "example.com", 443}, {"*.Example.com.", "A.EXAMPLE.COM.", 80},
		{"*", "192.0.2.1", 443}, {"*", "example.com", 22}, {"*:22", "example.com", 22}, {"example.com:22", "EXAMPLE.COM.", 22},
		{"[2001:db8::1]:8443", "2001:db8::1", 8443}, {"2001:db8::1", "[2001:db8::1]", 443}, {"::ffff:192.0.2.1", "192.0.2.1", 80},
		{"192.0.2.1.", "192.0.2.1", 80}, {"a..b", "a.b", 80}, {"*.", "x", 80}, {"10.0.0.1", "10.0.0.1", 80},
		{"*.localhost", "db.localhost", 80}, {"metadata", "metadata", 80}, {"169.254.169.254", "[::ffff:169.254.169.254]", 80},
		{"ex*ample.com", "example.com", 80}, {" example.com", "example.com", 443}, {"example.com:0443", "example.com", 443},
		{"[192.0.2.1]:80", "192.0.2.1", 80}, {"*.1.2.3.4", "5.1.2.3.4", 80}, {"fe80::1%eth0", "fe80::1", 80},
	} {
		f.Add(c.pattern, c.host, c.port)
	}
	home := explainHome(f)
	f.Fuzz(func(t *testing.T, pattern, host string, port uint16) {
		perm := "network:external:" + pattern
		rule, ruleErr := netrule.ParseRule(perm)
		g, ok := sameGrammar(t, perm, rule, ruleErr)
		samePolicyGrammar(t, pattern)
		if !ok || port == 0 {
			return
		}
		// Matching: the proxy with the grant, and the grant itself.
		planned, err := proxyRules(g, nil)
		if err != nil {
			t.Fatalf("%s: the plan refuses the grant: %v", perm, err)
		}
		v, why := planned.Decide(host, int(port))
		admits := v == egress.Allow
		if g.Egress.Matches(host, int(port)) != admits || rule.Allows(host, int(port)) != admits {
			t.Fatalf("%s and %s:%d: the proxy says %s (%s), the grant matches %v", perm, host, port, v, why, g.Egress.Matches(host, int(port)))
		}
		target, err := netrule.ParseTarget(host)
		if err != nil {
			if admits {
				t.Fatalf("%s: the proxy admits %q, which is not a host", perm, host)
			}
			return
		}
		steps, err := permissions.Resolve([]string{netrule.Rule{Host: target.String(), Port: int(port)}.String()}, "/", "/root")
		if err != nil {
			t.Fatalf("host %q port %d: not a grant: %v", host, port, err)
		}
		if got := sandbox.GrantCovers(g, steps[0]); got != admits {
			t.Fatalf("%s covers a step's %s: %v; the proxy admits %s:%d: %v (%s)", perm, steps[0], got, host, port, admits, why)
		}
		samePolicyAnswer(t, home, pattern, steps)
	})
}

// sameGrammar checks that the tool's grammar and permissions accept perm
// exactly when netrule does, to the same rule, and returns the grant.
func sameGrammar(t *testing.T, perm string, rule netrule.Rule, ruleErr error) (permissions.Grant, bool) {
	t.Helper()
	if strings.ContainsAny(perm, "{}") || strings.Contains(perm, "://") {
		return permissions.Grant{}, false // parameters and URLs are read before and after substitution
	}
	p, err := tool.ParsePermission(perm)
	if (err == nil) != (ruleErr == nil) {
		t.Fatalf("%q: tool validation says %v, netrule %v", perm, err, ruleErr)
	}
	grants, gerr := permissions.Resolve([]string{perm}, "/", "/root")
	if (gerr == nil) != (ruleErr == nil) {
		t.Fatalf("%q: permissions say %v, netrule %v", perm, gerr, ruleErr)
	}
	if ruleErr != nil {
		return permissions.Grant{}, false
	}
	g := grants[0]
	if p.Host != rule.Host || p.Port != rule.Port || g.Egress.Rule() != rule || g.String() != rule.String() {
		t.Fatalf("%q: tool %s:%d, grant %s, netrule %s", perm, p.Host, p.Port, g, rule)
	}
	return g, true
}

// samePolicyGrammar checks that a policy accepts pattern as a host of
// network.deny exactly when netrule parses it as a host.
func samePolicyGrammar(t *testing.T, pattern string) {
	t.Helper()
	for _, r := range pattern {
		if r > unicode.MaxASCII || !unicode.IsPrint(r) {
			return // YAML's own rules on characters are not ours to test
		}
	}
	q, _ := json.Marshal(pattern)
	_, perr := policy.Parse([]byte("network:\n  deny: ["+string(q)+"]\n"), "fuzz.yaml")
	_, herr := netrule.ParseHost(pattern)
	if (perr == nil) != (herr == nil) {
		t.Fatalf("host %q: the policy says %v, netrule %v", pattern, perr, herr)
	}
}

// samePolicyAnswer checks that the policy, with pattern as its only
// network.deny, denies the grant exactly when the proxy, given the grant
// and the policy's denied hosts, refuses it.
func samePolicyAnswer(t *testing.T, home, pattern string, grants []permissions.Grant) {
	t.Helper()
	if _, err := netrule.ParseHost(pattern); err != nil {
		return
	}
	pol := policy.Default()
	pol.Network.Allow, pol.Network.Deny = nil, []policy.HostPattern{policy.HostPattern(pattern)}
	g := grants[0]
	d, item := decideGrant(t, pol, g)
	rules, err := proxyRules(g, d.EgressDeny)
	if err != nil {
		t.Fatalf("deny %q: the policy loads it, the proxy does not: %v", pattern, err)
	}
	pt := explainGrant(t, home, pol, g)
	for _, port := range g.Egress.Ports() {
		v, why := rules.Admit(g.Egress.Host, port)
		if (v == egress.Allow) != (item.Verdict != policy.Deny) {
			t.Fatalf("deny %q, %s port %d: the proxy says %s (%s), the policy %s (%s: %s)", pattern, g, port, v, why, item.Verdict, item.Rule, item.Reason)
		}
		if (v == egress.Allow) != (pt.Verdict != explain.VerdictDeny) {
			t.Fatalf("deny %q, %s port %d: the proxy says %s (%s), explain --json %s (%s)", pattern, g, port, v, why, pt.Verdict, pt.Reason)
		}
	}
}

// decideGrant is pol's decision on g alone, for a local (untrusted) tool
// the caller approved g for, and the decision's item for g: what explain
// shows of it.
func decideGrant(t *testing.T, pol *policy.Policy, g permissions.Grant) (policy.Decision, *policy.Item) {
	t.Helper()
	d := pol.Decide(policy.Request{Tool: "t", Scope: tool.ScopeLocal, Grants: []permissions.Grant{g}, Approvals: []string{g.String()}})
	for i := range d.Items {
		if d.Items[i].Kind == policy.ItemGrant {
			return d, &d.Items[i]
		}
	}
	t.Fatalf("%s: the policy made no item for the grant: %+v", g, d.Items)
	return d, nil
}

// explainHome gives explain a home, state and runtime directory of the
// test's own and works there.
func explainHome(f *testing.F) string {
	home := f.TempDir()
	f.Setenv("HOME", home)
	f.Setenv("SANDBOXED_STATE_DIR", filepath.Join(home, "state"))
	f.Setenv("SANDBOXED_RUNTIME_DIR", filepath.Join(home, "run"))
	f.Chdir(home)
	return home
}

// explainGrant is what `permissions explain --json` says of g, the one
// permission of a tool, under pol with g approved.
func explainGrant(t *testing.T, home string, pol *policy.Policy, g permissions.Grant) explain.Point {
	t.Helper()
	q, _ := json.Marshal(g.Permission)
	def, err := tool.Parse([]byte("name: t\ndescription: d\nbash: echo hi\nsecurity:\n  required-permissions: ["+string(q)+"]\n"), filepath.Join(home, "t.yaml"))
	if err != nil {
		t.Fatalf("%s: a definition with it does not load: %v", g.Permission, err)
	}
	e := explain.Tool(def, tool.Input{}, []string{g.String()}, "", pol, "", sandbox.Cluster{}, nil)
	for _, p := range e.Network {
		if p.Subject == g.String() {
			return p
		}
	}
	t.Fatalf("%s: explain has no point for it: %+v", g, e.Network)
	return explain.Point{}
}
