package landlock

import (
	"fmt"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
)

// Converted is what the landlock tier makes of a plan's spec.
type Converted struct {
	RunID string
	// Grants are the binds, as Landlock rules of the commands.
	Grants []grant
	// Resources are the limits, which the run's cgroup holds where the
	// host has one sandboxed may use, else rlimits approximate
	// (process.OutsideLimits).
	Resources specconv.Resources
	// Setup holds the rlimits, no_new_privs and the compiled seccomp
	// filter each command applies to itself (its mounts are unused:
	// Grants stand for them).
	Setup *sbinit.Setup
	// Approximations are the limits' (specconv.Rules).
	Approximations []isolation.Approximation
}

// ConvertSpec reads the spec of p as the landlock tier enforces it,
// refusing with an error wrapping isolation.ErrUnsupported a field it
// would not honour (specconv.Rules) or a value it cannot apply (a mask
// inside a grant, unless p accepts that gap). The tier's root is the
// host's, read-only to the tool: writes go to the write grants and the
// scratch directory alone. It makes no system call.
func ConvertSpec(p *isolation.Plan) (*Converted, error) {
	s := p.Spec
	approx, err := specconv.Review(specconv.Target{Tier: isolation.TierLandlock}, s)
	if err != nil {
		return nil, err
	}
	c := &Converted{Approximations: approx}
	if c.RunID, err = specconv.RunID(s); err != nil {
		return nil, err
	}
	if err := specconv.CheckRoot(s, "/", true); err != nil {
		return nil, err
	}
	if err := specconv.CheckNoNewPrivileges(s); err != nil {
		return nil, err
	}
	if err := specconv.CheckCgroupsPath(s, c.RunID); err != nil {
		return nil, err
	}
	if c.Resources, err = specconv.ReadResources(s); err != nil {
		return nil, err
	}
	if c.Grants, err = planGrants(p); err != nil {
		return nil, err
	}
	if c.Setup, err = sbinit.NewSetup(s, compiledFilter); err != nil {
		return nil, fmt.Errorf("%w: %w", isolation.ErrUnsupported, err)
	}
	return c, nil
}
