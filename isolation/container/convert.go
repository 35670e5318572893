package container

import (
	"fmt"

	"github.com/docker/docker/api/types/container"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/seccomp"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
)

// converted is what the container tier reads of a plan's spec besides
// what translate copies field for field (identity, capabilities,
// rlimits, seccomp, masks, mounts).
type converted struct {
	runID      string
	resources  specconv.Resources
	tmpfsBytes int64
	// approximations are the fields the tier honours in part (memory
	// under runsc).
	approximations []isolation.Approximation
}

// convertSpec reads the spec of p as the container tier enforces it,
// refusing with an error wrapping isolation.ErrUnsupported any field it
// would not honour (specconv.Rules) or a value it cannot apply: the root
// is the image's, read-only; the namespaces are the engine's own (a user
// namespace only through its remapping, for elevated runs); the cgroup
// is the engine's to name.
func convertSpec(p *isolation.Plan) (*converted, error) {
	s := p.Spec
	approx, err := specconv.Review(specconv.TargetOf(p), s)
	if err != nil {
		return nil, err
	}
	c := &converted{approximations: approx}
	if c.runID, err = specconv.RunID(s); err != nil {
		return nil, err
	}
	if err := specconv.CheckRoot(s, "rootfs", true); err != nil {
		return nil, err
	}
	if err := specconv.CheckNoNewPrivileges(s); err != nil {
		return nil, err
	}
	if _, err := specconv.CheckNamespaces(s, specconv.Namespaces, []specs.LinuxNamespaceType{specs.UserNamespace}); err != nil {
		return nil, err
	}
	if c.resources, err = specconv.ReadResources(s); err != nil {
		return nil, err
	}
	if c.tmpfsBytes, err = specconv.TmpfsBytes(s); err != nil {
		return nil, err
	}
	if s.Linux != nil && s.Linux.Seccomp != nil {
		// The engine compiles the profile; sandboxed's own compiler
		// holds it to what every tier honours first.
		if _, err := seccomp.Compile(s.Linux.Seccomp); err != nil {
			return nil, fmt.Errorf("%w: %w", isolation.ErrUnsupported, err)
		}
	}
	if c.tmpfsBytes == 0 {
		return nil, &isolation.UnsupportedError{What: "a spec without /tmp (every container has one)", Fix: "plan the run with sandbox.Plan"}
	}
	return c, nil
}

// Converted is the container a plan becomes (translate, with the init
// binary at InitPath and no look at the host), and what the tier
// approximates of its spec.
type Converted struct {
	Config         *container.Config
	HostConfig     *container.HostConfig
	Approximations []isolation.Approximation
}

// ConvertSpec is the container tier's converter: the container's
// configuration made from p's spec, refusing with an error wrapping
// isolation.ErrUnsupported what the tier would not honour. It makes no
// system call.
func ConvertSpec(p *isolation.Plan) (*Converted, error) {
	conv, err := checkPlan(p)
	if err != nil {
		return nil, err
	}
	cfg, hc, err := translate(p, host{InitBinary: "/" + InitPath})
	if err != nil {
		return nil, err
	}
	return &Converted{Config: cfg, HostConfig: hc, Approximations: conv.approximations}, nil
}
