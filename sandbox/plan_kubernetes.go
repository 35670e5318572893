package sandbox

import (
	"fmt"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/policy"
)

// kubernetesRun reports whether the run goes to the Kubernetes backend:
// the policy forces it (or forces local), else the operator chose it.
func kubernetesRun(in PlanInput) bool {
	switch in.Decision.Backend {
	case string(policy.BackendKubernetes):
		return true
	case string(policy.BackendLocal):
		return false
	}
	return in.Cluster.Backend == isolation.BackendKubernetes
}

// planPod finishes the plan of a run on Kubernetes: the runner image (or
// the definition's), and the operator's RuntimeClass. Every tier runs in
// a pod there, which is at least the container tier's isolation; a tool
// that asks for isolation none is refused (it means "on this host"), and
// one that asks for gVisor (sandboxed.runtime runsc, or a policy forcing
// it) needs a RuntimeClass.
func planPod(p *isolation.Plan, in PlanInput, image, toolRuntime, policyRuntime string, sp *sandboxPlan) (*isolation.Plan, *sandboxPlan, error) {
	if p.Tier == isolation.TierNone {
		return nil, nil, fmt.Errorf("plan %s: isolation none runs on this host, not on Kubernetes: run it with --backend local (or let the policy raise its tier): %w", p.Tool, ErrPlan)
	}
	p.Backend = isolation.BackendKubernetes
	p.Image = isolation.DefaultImage
	if image != "" {
		p.Image = image
	}
	p.Runtime = in.Cluster.RuntimeClass
	if (toolRuntime == "runsc" || policyRuntime == string(policy.RuntimeRunsc)) && p.Runtime == "" {
		return nil, nil, fmt.Errorf("plan %s: the run asks for gVisor (runsc) but no RuntimeClass is set: pass --runtime-class (e.g. gvisor, with handler runsc): %w", p.Tool, ErrPlan)
	}
	return p, sp, nil
}
