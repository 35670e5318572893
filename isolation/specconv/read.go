package specconv

import (
	"fmt"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// Resources are the limits a spec sets (Linux.Resources), in the units
// the mechanisms take: what every tier's converter reads, the one reading
// of those fields.
type Resources struct {
	// MemoryBytes is Memory.Limit; swap is never more (Memory.Swap, the
	// limit of memory and swap together, equals it or is unset).
	MemoryBytes int64
	// Pids is Pids.Limit: the mechanism's, which holds the init's spare
	// threads where the init shares it (isolation.InitSpareThreads).
	Pids int64
	// CPUQuota is CPU.Quota, the microseconds of CPU time the run may
	// use in each CPUPeriod (CPU.Period); both 0 for no limit.
	CPUQuota  int64
	CPUPeriod uint64
}

// The kernel's bounds of a CFS period and quota, in microseconds
// (kernel/sched/core.c: 1ms to 1s, a quota of at least 1ms).
const (
	minCPUPeriod = 1000
	maxCPUPeriod = 1000000
	minCPUQuota  = 1000
)

// ReadResources reads the limits of s. A spec without a memory or pids
// limit, with swap above memory, or a CPU quota without its period (or
// the reverse) is refused.
func ReadResources(s *specs.Spec) (Resources, error) {
	var r Resources
	var res *specs.LinuxResources
	if s != nil && s.Linux != nil {
		res = s.Linux.Resources
	}
	if res == nil || res.Memory == nil || res.Memory.Limit == nil || *res.Memory.Limit <= 0 ||
		res.Pids == nil || res.Pids.Limit == nil || *res.Pids.Limit <= 0 {
		return r, &isolation.UnsupportedError{What: "a run without memory and pids limits", Fix: "plan the run with sandbox.Plan, which sets both"}
	}
	r.MemoryBytes, r.Pids = *res.Memory.Limit, *res.Pids.Limit
	if sw := res.Memory.Swap; sw != nil && *sw != r.MemoryBytes {
		return r, &isolation.UnsupportedError{
			What: fmt.Sprintf("memory and swap of %d bytes over a memory limit of %d (the tiers give no swap)", *sw, r.MemoryBytes),
			Fix:  "set Memory.Swap to Memory.Limit",
		}
	}
	if c := res.CPU; c != nil && (c.Quota != nil || c.Period != nil) {
		if c.Quota == nil || c.Period == nil || *c.Quota <= 0 || *c.Period == 0 {
			return r, &isolation.UnsupportedError{What: "a CPU quota without a period, or the reverse", Fix: "set both, or neither"}
		}
		if *c.Period < minCPUPeriod || *c.Period > maxCPUPeriod || *c.Quota < minCPUQuota {
			return r, &isolation.UnsupportedError{
				What: fmt.Sprintf("a CPU quota of %dus per %dus period (the kernel takes a period of 1ms to 1s and a quota of at least 1ms)", *c.Quota, *c.Period),
				Fix:  "ask for at least 0.01 CPUs (sandboxed.cpus), over a 100ms period",
			}
		}
		r.CPUQuota, r.CPUPeriod = *c.Quota, *c.Period
	}
	return r, nil
}

// CPUs is the CPU limit in CPUs (quota over period), 0 for none.
func (r Resources) CPUs() float64 {
	if r.CPUPeriod == 0 {
		return 0
	}
	return float64(r.CPUQuota) / float64(r.CPUPeriod)
}

// MilliCPUs is the CPU limit in thousandths of a CPU (Kubernetes' unit),
// rounded down, so that a pod gets no more than the other tiers; the
// least quota (1ms a second) is still 1.
func (r Resources) MilliCPUs() int64 {
	if r.CPUPeriod == 0 {
		return 0
	}
	return r.CPUQuota * 1000 / int64(r.CPUPeriod)
}

// RunID is the run id of s (its isolation.AnnotationRunID annotation),
// after checking what every tier checks: the spec version this build
// writes, and no annotation but the run id's and the tool's, the labels
// of the run's host resources.
func RunID(s *specs.Spec) (string, error) {
	if s == nil {
		return "", &isolation.UnsupportedError{What: "a plan without a spec", Fix: "plan the run with sandbox.Plan"}
	}
	if s.Version != specs.Version {
		return "", &isolation.UnsupportedError{What: fmt.Sprintf("a spec of version %q (this build writes and reads %s)", s.Version, specs.Version), Fix: "plan the run again with this build"}
	}
	for k := range s.Annotations {
		if k != isolation.AnnotationRunID && k != isolation.AnnotationTool {
			return "", &isolation.UnsupportedError{What: fmt.Sprintf("the spec's annotation %q (no tier reads it)", k), Fix: "leave it out of the plan"}
		}
	}
	id := s.Annotations[isolation.AnnotationRunID]
	if id == "" || strings.ContainsAny(id, "/\x00") || id == "." || id == ".." {
		return "", &isolation.UnsupportedError{What: fmt.Sprintf("a spec whose run id annotation is %q", id), Fix: "plan the run with sandbox.Plan"}
	}
	return id, nil
}

// CgroupsPath is the run's cgroup, relative to the hierarchy sandboxed
// may use (the host's root, or a subtree delegated to the user): the
// tiers that make a cgroup make it there.
func CgroupsPath(runID string) string { return "/sandboxed/" + runID }

// CheckCgroupsPath refuses a spec whose Linux.CgroupsPath is set and is not
// CgroupsPath(runID).
func CheckCgroupsPath(s *specs.Spec, runID string) error {
	if s.Linux == nil || s.Linux.CgroupsPath == "" || s.Linux.CgroupsPath == CgroupsPath(runID) {
		return nil
	}
	return &isolation.UnsupportedError{What: fmt.Sprintf("the cgroup %s (a run's cgroup is %s)", s.Linux.CgroupsPath, CgroupsPath(runID)), Fix: "plan the run with sandbox.Plan"}
}

// CheckRoot refuses a spec whose root is not the tier's: path is what the
// tier's root is ("rootfs" for a root of its own, "/" for the host's),
// and a root of its own is always read-only.
func CheckRoot(s *specs.Spec, path string, readonly bool) error {
	if s.Root == nil || s.Root.Path != path || s.Root.Readonly != readonly {
		return &isolation.UnsupportedError{
			What: fmt.Sprintf("the spec's root %+v (this tier's is %q, read-only %v)", s.Root, path, readonly),
			Fix:  "plan the run with sandbox.Plan",
		}
	}
	return nil
}

// CheckNamespaces refuses a spec whose namespaces are not exactly want,
// and optional ones of may (a namespace joined by path is never
// honoured): a tier makes the namespaces it makes, and the spec must say
// so.
func CheckNamespaces(s *specs.Spec, want, may []specs.LinuxNamespaceType) ([]specs.LinuxNamespaceType, error) {
	var got []specs.LinuxNamespaceType
	if s.Linux != nil {
		for _, ns := range s.Linux.Namespaces {
			if ns.Path != "" || slices.Contains(got, ns.Type) || (!slices.Contains(want, ns.Type) && !slices.Contains(may, ns.Type)) {
				return nil, &isolation.UnsupportedError{What: fmt.Sprintf("the spec's %s namespace %q", ns.Type, ns.Path), Fix: "plan the run with sandbox.Plan"}
			}
			got = append(got, ns.Type)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			return nil, &isolation.UnsupportedError{What: fmt.Sprintf("a spec without a %s namespace (the tier always makes one)", w), Fix: "plan the run with sandbox.Plan"}
		}
	}
	return got, nil
}

// TmpfsBytes is the size of the spec's /tmp, checked against the skeleton
// (isolation.CheckSkeleton); 0 when the spec has no /tmp.
func TmpfsBytes(s *specs.Spec) (int64, error) {
	for _, m := range s.Mounts {
		if m.Destination == "/tmp" {
			return isolation.CheckSkeleton(m)
		}
	}
	return 0, nil
}

// Namespaces the tiers with a root of their own make: every one but the
// user namespace, which the process tier adds where the caller's uid
// needs it and the elevated privilege asks for.
var Namespaces = []specs.LinuxNamespaceType{specs.PIDNamespace, specs.NetworkNamespace, specs.IPCNamespace,
	specs.UTSNamespace, specs.MountNamespace, specs.CgroupNamespace}

// CheckNoNewPrivileges refuses a spec whose process may gain privileges:
// every tier with a confinement of its own sets no_new_privs whatever the
// spec says, and the spec must say so.
func CheckNoNewPrivileges(s *specs.Spec) error {
	if s.Process == nil || !s.Process.NoNewPrivileges {
		return &isolation.UnsupportedError{What: "a process without no_new_privs (the tier always sets it)", Fix: "plan the run with sandbox.Plan"}
	}
	return nil
}
