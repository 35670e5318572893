package explain

import (
	"testing"

	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

func TestExplainCredentials(t *testing.T) {
	def := &tool.Definition{Name: "t", Tags: []string{"read"}, Sandboxed: &tool.SandboxedExt{
		Credentials: []tool.Credential{
			{Env: "GITHUB_TOKEN", Hosts: []string{"api.github.com"}},
			{Name: "VAULT", Command: []string{"pass", "show", "v"}, Hosts: []string{"vault.example.com"}},
		},
		HTTP: []tool.HTTPRule{{Host: "api.github.com", Methods: []string{"GET"}, Paths: []string{"/repos/"}}},
	}}
	e := explainFor(t, def, []string{"network:external:api.github.com"}, []policy.Item{
		{Subject: "credential:GITHUB_TOKEN", Kind: "credential", Verdict: policy.Allow, Risk: policy.RiskMedium, Rule: "default: credentials are allowed for trusted sources"},
		{Subject: "credential:VAULT", Kind: "credential", Verdict: policy.NeedsApproval, Risk: policy.RiskHigh, ApproveFlag: "credential:VAULT"},
	}, policy.NeedsApproval)
	points := map[string]Point{}
	for _, p := range e.Network {
		points[p.Subject] = p
	}
	gh, ok := points["credential:GITHUB_TOKEN"]
	if !ok || gh.Verdict != VerdictAllow || gh.Risk != "medium" || len(gh.Mechanisms) != 2 || gh.Mechanisms[1].Kind != MechProxy {
		t.Errorf("GITHUB_TOKEN point %+v", gh)
	}
	if v := points["credential:VAULT"]; v.Verdict != VerdictApproval || v.ApproveFlag != "credential:VAULT" {
		t.Errorf("VAULT point %+v", v)
	}
	if r, ok := points["http:api.github.com"]; !ok || r.Meaning != "requests to api.github.com only with GET on paths under /repos/" {
		t.Errorf("http point %+v", r)
	}
	risks := riskCats(e)
	if risks[RiskHostRoot+" credential:VAULT"] != "high" || risks[RiskSecretLeak+" credential:GITHUB_TOKEN"] != "medium" {
		t.Errorf("risks %v", risks)
	}
}
