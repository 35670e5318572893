package kubernetes

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
)

// converted is what a pod reads of a plan's spec besides its mounts
// (planMounts) and seccomp profile (planFilter).
type converted struct {
	runID          string
	resources      specconv.Resources
	approximations []isolation.Approximation
}

// convertSpec reads the spec of p as a pod honours it, refusing with an
// error wrapping isolation.ErrUnsupported any field it would not honour
// (specconv.Rules) or a value it cannot apply: the root is the image's,
// read-only; the namespaces are the pod's own (never a user namespace);
// the cgroup is the kubelet's to name; the tool never runs as uid 0.
func convertSpec(p *isolation.Plan) (*converted, error) {
	s := p.Spec
	approx, err := specconv.Review(specconv.Target{Tier: p.Tier, Kubernetes: true}, s)
	if err != nil {
		return nil, err
	}
	c := &converted{approximations: approx}
	if c.runID, err = specconv.RunID(s); err != nil {
		return nil, err
	}
	if c.runID != p.RunID {
		return nil, unsupported("a spec of run "+c.runID+" in the plan of run "+p.RunID, "plan the run with sandbox.Plan")
	}
	if err := specconv.CheckRoot(s, "rootfs", true); err != nil {
		return nil, err
	}
	if err := specconv.CheckNoNewPrivileges(s); err != nil {
		return nil, err
	}
	if _, err := specconv.CheckNamespaces(s, specconv.Namespaces, nil); err != nil {
		return nil, err
	}
	if s.Process == nil || s.Process.User.UID == 0 {
		return nil, unsupported("a pod whose tool runs as uid 0", "plan the run with sandbox.Plan, which runs root's tools as nobody in a pod")
	}
	if c.resources, err = specconv.ReadResources(s); err != nil {
		return nil, err
	}
	return c, nil
}

// Converted is the pod a plan becomes, and what a pod approximates of its
// spec.
type Converted struct {
	Pod            *corev1.Pod
	Approximations []isolation.Approximation
}

// ConvertSpec is the Kubernetes backend's converter: the run's pod made
// from p's spec with default settings, refusing with an error wrapping
// isolation.ErrUnsupported what a pod would not honour. It reads the read
// grants' files (they travel in a ConfigMap) and nothing else.
func ConvertSpec(p *isolation.Plan) (*Converted, error) {
	c, err := convertSpec(p)
	if err != nil {
		return nil, err
	}
	o, err := buildObjects(p, &Settings{}, podEnv{})
	if err != nil {
		return nil, err
	}
	return &Converted{Pod: o.pod, Approximations: c.approximations}, nil
}
