package policy

import (
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/tool"
)

func TestDecideCredentials(t *testing.T) {
	env := tool.Credential{Env: "GITHUB_TOKEN", Hosts: []string{"api.github.com"}}
	cmd := tool.Credential{Name: "VAULT", Command: []string{"pass", "show", "v"}, Hosts: []string{"vault.example.com"}}
	tests := []struct {
		name      string
		scope     tool.Scope
		cred      tool.Credential
		pol       func(*Policy)
		approvals []string
		verdict   Verdict
		risk      Risk
		rule      string
	}{
		{"env, trusted source", tool.ScopeUser, env, nil, nil, Allow, RiskMedium, "default: credentials are allowed for trusted sources"},
		{"env, untrusted source", tool.ScopeLocal, env, nil, nil, NeedsApproval, RiskMedium, "default: credentials of untrusted sources need approval"},
		{"env, untrusted, approved", tool.ScopeLocal, env, nil, []string{"credential:GITHUB_TOKEN"}, Allow, RiskMedium, "default: credentials of untrusted sources need approval"},
		{"approval of another credential", tool.ScopeLocal, env, nil, []string{"credential:OTHER"}, NeedsApproval, RiskMedium, ""},
		{"command, trusted source", tool.ScopeUser, cmd, nil, nil, NeedsApproval, RiskHigh, "default: a credential read by running a host command needs approval"},
		{"command, standing approval", tool.ScopeUser, cmd, func(p *Policy) { p.Approval.Standing = []Approval{"credential:VAULT"} }, nil, Allow, RiskHigh, ""},
		{"policy asks approval", tool.ScopeUser, env, func(p *Policy) { p.Credentials.Approve = []string{"GITHUB_*"} }, nil, NeedsApproval, RiskMedium, "credentials.approve[0] GITHUB_*"},
		{"policy denies", tool.ScopeUser, env, func(p *Policy) { p.Credentials.Deny = []string{"*"} }, []string{"all"}, Deny, RiskHigh, "credentials.deny[0] *"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Default()
			if tt.pol != nil {
				tt.pol(p)
			}
			req := baseRequest()
			req.Scope = tt.scope
			req.Credentials = []tool.Credential{tt.cred}
			req.Approvals = tt.approvals
			d := p.Decide(req)
			it, ok := item(d, "credential:"+tt.cred.VarName())
			if !ok {
				t.Fatalf("no credential item in %+v", d.Items)
			}
			if it.Verdict != tt.verdict || it.Risk != tt.risk || (tt.rule != "" && it.Rule != tt.rule) {
				t.Errorf("item = %s %s %q, want %s %s %q", it.Verdict, it.Risk, it.Rule, tt.verdict, tt.risk, tt.rule)
			}
			if it.Kind != ItemCredential || !strings.Contains(it.Description, strings.Join(tt.cred.Hosts, ", ")) {
				t.Errorf("item %+v", it)
			}
			if tt.verdict == NeedsApproval && it.ApproveFlag != "credential:"+tt.cred.VarName() {
				t.Errorf("approve flag %q", it.ApproveFlag)
			}
		})
	}
}

func TestCredentialPolicyKeys(t *testing.T) {
	p, err := Parse([]byte("version: 1\ncredentials:\n  deny: [AWS_*]\n  approve: [GITHUB_TOKEN]\nnetwork:\n  extra-ca: [/etc/sandboxed/ca.pem]\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Credentials.Deny) != 1 || p.Network.ExtraCA[0] != "/etc/sandboxed/ca.pem" {
		t.Errorf("policy %+v %+v", p.Credentials, p.Network)
	}
	if d := p.Decide(baseRequest()); len(d.ExtraCA) != 1 {
		t.Errorf("decision extra CA %q", d.ExtraCA)
	}
	for _, bad := range []string{"version: 1\ncredentials:\n  deny: [\"a-b\"]\n", "version: 1\nnetwork:\n  extra-ca: [ca.pem]\n"} {
		if _, err := Parse([]byte(bad), "p.yaml"); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if err := ValidateApprovals([]string{"credential:GITHUB_TOKEN"}); err != nil {
		t.Error(err)
	}
	if err := ValidateApprovals([]string{"credential:1X"}); err == nil {
		t.Error("accepted credential:1X")
	}
}
