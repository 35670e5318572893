package sandbox

import (
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// ReviewPlan is the sandbox a run of def would get with grants under d,
// were the policy to allow it: what `permissions explain` shows of a run
// that cannot be planned (denied, a path missing, arguments not given).
// It is made by the planner that makes every run's plan (planSandbox), so
// what a reviewer reads is what a run gets. b is the bound tool, nil when
// the tool did not bind (the definition's own variables then stand in
// for the bound ones); a grant whose path did not resolve is shown at its
// declared path. It reads the host as Prepare does and changes nothing.
// The plan has no commands and is never run.
func ReviewPlan(def *tool.Definition, b *tool.Bound, grants []permissions.Grant, d policy.Decision, pol *policy.Policy) (*isolation.Plan, error) {
	f, err := GatherFacts("", "", nil)
	if err != nil {
		return nil, err
	}
	if b == nil {
		b = &tool.Bound{Def: def}
		if def.Environment != nil {
			b.Env = def.Environment.Variables
		}
	}
	gs := make([]permissions.Grant, len(grants))
	for i, g := range grants {
		gs[i] = g
		if g.Mount != nil {
			m := *g.Mount
			if m.Resolved == "" {
				m.Resolved = m.HostPath
			}
			gs[i].Mount = &m
		}
	}
	in := PlanInput{RunID: "review", Bound: b, Grants: gs, Decision: &d, Facts: f}
	if pol != nil {
		in.EnvDeny = pol.Environment.Deny
	}
	gatherMasks(f, &d, mountGrants(gs))
	gatherCgroup(f, d.Isolation, kubernetesRun(in), planLimits(&d))
	p, _, err := planSandbox(in)
	if err != nil && len(d.Masks) > 0 {
		// A mask that cannot be applied is shown with the masks; the rest
		// of the sandbox still is.
		d.Masks = nil
		p, _, err = planSandbox(in)
	}
	return p, err
}
