package sandbox_test

import (
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/isolation/egress"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// FuzzNetworkRulesAgree holds validation, the policy, explain's words and
// the egress proxy to one answer for a network:external grant: a grant
// the permission grammar accepts is a rule the proxy can load; the policy
// denies it (for a trusted, approved source under the default policy)
// exactly when the proxy, loaded with the grant and the policy's denied
// hosts, refuses it before any name is resolved; and a grant explain calls
// unusable is one the proxy refuses. The seeds run in every `go test`.
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
	f.Fuzz(func(t *testing.T, host string) {
		perm := "network:external:" + host
		grants, err := permissions.Resolve([]string{perm}, "/", "/root")
		if err != nil || len(grants) != 1 || grants[0].Egress == nil {
			return // not a grant: validation refused it
		}
		g := grants[0]
		d := pol.Decide(policy.Request{Tool: "t", Scope: tool.ScopeLocal, Grants: grants, Approvals: []string{g.String()}})
		var item *policy.Item
		for i := range d.Items {
			if d.Items[i].Kind == policy.ItemGrant {
				item = &d.Items[i]
			}
		}
		if item == nil {
			t.Fatalf("%s: the policy made no item for the grant: %+v", perm, d.Items)
		}
		rules, err := egress.ParseRules([]string{g.String()}, d.EgressDeny, nil)
		if err != nil {
			t.Fatalf("%s: validation accepts it, the proxy's rules do not: %v", perm, err)
		}
		if g.Egress.Any() || g.Egress.Wildcard {
			return // a pattern: no single target to ask the proxy about
		}
		unusable := strings.HasPrefix(g.Describe(), "can never connect")
		for _, port := range g.Egress.Ports() {
			v, why := rules.Admit(g.Egress.Host, port)
			if (v == egress.Allow) != (item.Verdict != policy.Deny) {
				t.Errorf("%s port %d: the proxy says %s (%s), the policy %s (%s: %s)", perm, port, v, why, item.Verdict, item.Rule, item.Reason)
			}
			if unusable && v == egress.Allow {
				t.Errorf("%s port %d: explain calls it unusable (%s), the proxy allows it", perm, port, g.Describe())
			}
		}
	})
}
