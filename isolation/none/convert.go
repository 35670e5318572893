package none

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
)

// Converted is what the none tier makes of a plan's spec: the run's id
// and limits, nothing else (the tool runs on the host as the invoking
// user, in the spec's working directory with the spec's environment).
type Converted struct {
	RunID string
	UID   uint32
	GID   uint32
	// Resources are held by the run's cgroup where the host has one
	// sandboxed may use, else approximated by rlimits
	// (process.OutsideLimits).
	Resources      specconv.Resources
	Approximations []isolation.Approximation
}

// ConvertSpec reads s as the none tier honours it, refusing with an error
// wrapping isolation.ErrUnsupported any field it would not honour
// (specconv.Rules: no mounts, namespaces, seccomp or capabilities — the
// planner leaves them out of a none-tier spec). It makes no system call.
func ConvertSpec(s *specs.Spec) (*Converted, error) {
	approx, err := specconv.Review(specconv.Target{Tier: isolation.TierNone}, s)
	if err != nil {
		return nil, err
	}
	c := &Converted{Approximations: approx}
	if c.RunID, err = specconv.RunID(s); err != nil {
		return nil, err
	}
	if err := specconv.CheckRoot(s, "/", false); err != nil {
		return nil, err
	}
	if err := specconv.CheckCgroupsPath(s, c.RunID); err != nil {
		return nil, err
	}
	if s.Process == nil {
		return nil, &isolation.UnsupportedError{What: "a spec without a process", Fix: "plan the run with sandbox.Plan"}
	}
	c.UID, c.GID = s.Process.User.UID, s.Process.User.GID
	if c.Resources, err = specconv.ReadResources(s); err != nil {
		return nil, err
	}
	return c, nil
}
