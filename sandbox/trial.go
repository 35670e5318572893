package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// trialYAML is the tool a trial runs: one command that prints "ok", no
// parameter, no permission, the given privilege. Everything else comes
// from the policy and the tier, as for any tool.
const trialYAML = `name: trial
description: a trivial tool, run in each tier by sandboxed doctor
bash: echo ok
tags: [read]
security:
  execution-privilege: %s
  isolation: process
timeout: 60000
`

// Trial is what happened when a trivial tool ran in one tier.
type Trial struct {
	Tier      isolation.Tier `json:"tier"`
	Privilege string         `json:"privilege"`
	// OK is true when the tool ran in this tier and printed what it
	// should.
	OK bool `json:"ok"`
	// Approvals are what the policy asked approval for in this tier (as
	// --approve values), given for the trial as a user would give them.
	Approvals []string `json:"approvals,omitempty"`
	// Result is the run's result, a refusal included.
	Result *Result `json:"result"`
}

// Trial runs a trivial tool (`echo ok`) of the given execution privilege
// in tier, as `sandboxed run --isolation TIER` would, under pol: through
// the same planning, policy, checks, backend and teardown, and reports
// what happened. Approvals the policy asks for the tier itself
// (isolation-none, for one) are given and listed; any other refusal
// stands. The controller should have no StateDir: a trial writes no run
// record and no audit line.
func (c *Controller) Trial(ctx context.Context, tier isolation.Tier, privilege string, pol *policy.Policy) Trial {
	t := Trial{Tier: tier, Privilege: privilege}
	def, err := tool.Parse([]byte(fmt.Sprintf(trialYAML, privilege)), "trial.yaml")
	if err != nil {
		t.Result = &Result{Tool: "trial", Isolation: string(tier), Status: StatusError,
			Error: &ErrorInfo{Code: CodeInitFailed, Message: "the trial tool: " + err.Error()}}
		return t
	}
	if tier == isolation.TierNone {
		// The built-in policy never runs a tool given as a file path
		// unsandboxed: the none trial is of an installed tool, the kind
		// that may run there.
		def.Source.Scope = tool.ScopeUser
	}
	req := &Request{Def: def, Input: tool.Input{}, Policy: pol, Isolation: string(tier), Cwd: "/"}
	p, err := c.Prepare(req)
	var pe *PrepareError
	if errors.As(err, &pe) && len(pe.Approvals) > 0 && tierApprovals(pe.Approvals) {
		t.Approvals = pe.Approvals
		req.Answered = pe.Approvals
		p, err = c.Prepare(req)
	}
	switch {
	case errors.As(err, &pe):
		t.Result, _ = c.Refused(req, pe)
	case err != nil:
		t.Result = &Result{Tool: "trial", Isolation: string(tier), Status: StatusError,
			Error: &ErrorInfo{Code: CodeInitFailed, Message: err.Error()}}
	default:
		t.Result, _ = c.RunPrepared(ctx, req, p)
	}
	if t.Result == nil {
		t.Result = &Result{Tool: "trial", Isolation: string(tier), Status: StatusError,
			Error: &ErrorInfo{Code: CodeInitFailed, Message: "no result"}}
	}
	// A run the policy moved to another tier did not run in this one.
	t.OK = t.Result.Status == StatusOK && strings.TrimSpace(t.Result.Stdout) == "ok" && t.Result.Isolation == string(tier)
	return t
}

// tierApprovals reports whether every approval asked for is one that
// lets a tier stand (isolation-none, isolation-process, ...): those a
// user running a tool in that tier gives.
func tierApprovals(as []string) bool {
	for _, a := range as {
		if !strings.HasPrefix(a, "isolation-") {
			return false
		}
	}
	return true
}
