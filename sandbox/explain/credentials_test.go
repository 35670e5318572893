package explain

import (
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/isolation"
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
	in := inputFor(t, def, []string{"network:external:api.github.com"}, []policy.Item{
		{Subject: "credential:GITHUB_TOKEN", Kind: "credential", Verdict: policy.Allow, Risk: policy.RiskMedium, Rule: "default: credentials are allowed for trusted sources"},
		{Subject: "credential:VAULT", Kind: "credential", Verdict: policy.NeedsApproval, Risk: policy.RiskHigh, ApproveFlag: "credential:VAULT"},
	}, policy.NeedsApproval)
	in.Plan.Egress = &isolation.Egress{HTTP: []isolation.HTTPRule{{Host: "api.github.com", Methods: []string{"GET"}, Paths: []string{"/repos/"}}}}
	e := Explain(in)
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

// The HTTP rules explain shows are the plan's, which the proxy applies
// (normalised, as the planner checked them), not the definition's as
// written; only a review no plan could be made for reads the definition,
// and says so.
func TestExplainHTTPRulesFromPlan(t *testing.T) {
	def := func() *tool.Definition {
		return &tool.Definition{Name: "t", Tags: []string{"read"}, Sandboxed: &tool.SandboxedExt{
			HTTP: []tool.HTTPRule{{Host: "API.GitHub.com.", Methods: []string{"GET"}}},
		}}
	}
	perms := []string{"network:external:api.github.com"}
	httpPoints := func(e Explanation) map[string]Point {
		out := map[string]Point{}
		for _, p := range e.Network {
			if strings.HasPrefix(p.Subject, "http:") {
				out[p.Subject] = p
			}
		}
		return out
	}

	in := inputFor(t, def(), perms, nil, policy.Allow)
	in.Plan.Egress = &isolation.Egress{HTTP: []isolation.HTTPRule{{Host: "api.github.com", Methods: []string{"GET", "HEAD"}}}}
	got := httpPoints(Explain(in))
	if p, ok := got["http:api.github.com"]; len(got) != 1 || !ok || p.Meaning != "requests to api.github.com only with GET, HEAD on any path" {
		t.Errorf("with a plan: http points %+v, want the plan's one rule", got)
	}

	in = inputFor(t, def(), perms, nil, policy.Allow)
	in.Plan.Egress = nil // no egress: the proxy applies no rule
	if got := httpPoints(Explain(in)); len(got) != 0 {
		t.Errorf("a plan without egress: http points %+v, want none", got)
	}

	in = inputFor(t, def(), perms, nil, policy.Allow)
	in.Plan, in.Planned = nil, false
	got = httpPoints(Explain(in))
	if p, ok := got["http:API.GitHub.com."]; len(got) != 1 || !ok || !strings.Contains(p.Reason, "no plan") {
		t.Errorf("without a plan: http points %+v, want the definition's, saying no plan was made", got)
	}
}
