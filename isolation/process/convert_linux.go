package process

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
)

// Converted is what the process tier makes of a plan's spec: every part
// of the sandbox the spec has a field for. ConvertSpec is the one reader
// of the spec in this tier (as runc's CreateCgroupConfig is in runc).
type Converted struct {
	RunID string
	// Namespaces are the ones the init is born in (its clone flags); a
	// user namespace besides where the spec or the caller's uid needs
	// one.
	Namespaces []specs.LinuxNamespaceType
	// Resources are the run's cgroup limits.
	Resources cgroup.Resources
	// TmpfsBytes is the size of /tmp.
	TmpfsBytes int64
	// Setup is what the init applies: identity, capabilities, rlimits,
	// mounts, masks, the compiled seccomp filter.
	Setup *sbinit.Setup
	// Approximations are the fields the tier honours in part (none).
	Approximations []isolation.Approximation
}

// ConvertSpec reads s as the process tier enforces it, refusing with an
// error wrapping isolation.ErrUnsupported any field it would not honour
// (specconv.Rules) or a value it cannot apply. It makes no system call.
func ConvertSpec(s *specs.Spec) (*Converted, error) {
	approx, err := specconv.Review(specconv.Target{Tier: isolation.TierProcess}, s)
	if err != nil {
		return nil, err
	}
	c := &Converted{Approximations: approx}
	if c.RunID, err = specconv.RunID(s); err != nil {
		return nil, err
	}
	if err := specconv.CheckRoot(s, "rootfs", true); err != nil {
		return nil, err
	}
	if err := specconv.CheckNoNewPrivileges(s); err != nil {
		return nil, err
	}
	if err := specconv.CheckCgroupsPath(s, c.RunID); err != nil {
		return nil, err
	}
	if c.Namespaces, err = specconv.CheckNamespaces(s, specconv.Namespaces, []specs.LinuxNamespaceType{specs.UserNamespace}); err != nil {
		return nil, err
	}
	r, err := specconv.ReadResources(s)
	if err != nil {
		return nil, err
	}
	c.Resources = cgroup.Resources{MemoryBytes: r.MemoryBytes, Pids: r.Pids, CPUQuota: r.CPUQuota, CPUPeriod: r.CPUPeriod}
	for _, m := range isolation.SkeletonMounts(1) {
		if !hasMount(s, m.Destination) {
			return nil, &isolation.UnsupportedError{What: fmt.Sprintf("a spec without %s (the tier always builds it)", m.Destination), Fix: "plan the run with sandbox.Plan"}
		}
	}
	if c.TmpfsBytes, err = specconv.TmpfsBytes(s); err != nil {
		return nil, err
	}
	if c.Setup, err = sbinit.NewSetup(s, compiledProfiles.Compile); err != nil {
		return nil, fmt.Errorf("%w: %w", isolation.ErrUnsupported, err)
	}
	return c, nil
}

func hasMount(s *specs.Spec, dst string) bool {
	for _, m := range s.Mounts {
		if m.Destination == dst {
			return true
		}
	}
	return false
}

// cloneFlags are the clone flags of namespaces ns (the user namespace is
// the caller's to add: see launch).
func cloneFlags(ns []specs.LinuxNamespaceType) uintptr {
	flags := map[specs.LinuxNamespaceType]uintptr{
		specs.PIDNamespace: unix.CLONE_NEWPID, specs.NetworkNamespace: unix.CLONE_NEWNET, specs.IPCNamespace: unix.CLONE_NEWIPC,
		specs.UTSNamespace: unix.CLONE_NEWUTS, specs.MountNamespace: unix.CLONE_NEWNS, specs.CgroupNamespace: unix.CLONE_NEWCGROUP,
	}
	var f uintptr
	for _, n := range ns {
		f |= flags[n]
	}
	return f
}
