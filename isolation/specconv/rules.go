package specconv

import "github.com/sandboxed-dev/sandboxed/isolation"

// enforced are rules that enforce fields as written.
func enforced(fields ...string) []Rule {
	out := make([]Rule, len(fields))
	for i, f := range fields {
		out[i] = Rule{Field: f, How: Enforced}
	}
	return out
}

// Paths of the fields the rules name more than once.
const (
	FieldMemory   = "Linux.Resources.Memory.Limit"
	FieldSwap     = "Linux.Resources.Memory.Swap"
	FieldPids     = "Linux.Resources.Pids.Limit"
	FieldCPUQuota = "Linux.Resources.CPU.Quota"
	FieldCPU      = "Linux.Resources.CPU.Period"
	FieldRlimits  = "Process.Rlimits"
	// FieldMounts holds the policy's masks among the mounts: the landlock
	// tier approximates those inside a read grant (landlock.MaskNote).
	FieldMounts = "Mounts"
)

// common are the fields every target honours: the version this build
// writes, the run's annotations (the run id and tool, which label its host
// resources), the environment every command starts from (the controller
// gives it with each command) and the working directory.
var common = enforced("Version", "Annotations", "Process.Env", "Process.Cwd", "Process.User.UID", "Process.User.GID")

// seccompFields are the parts of a seccomp profile sandboxed's compiler
// enforces (seccomp.Compile: the native architecture of those listed;
// the others get ENOSYS). Flags and a listener are not compiled.
var seccompFields = enforced("Linux.Seccomp.DefaultAction", "Linux.Seccomp.DefaultErrnoRet",
	"Linux.Seccomp.Architectures", "Linux.Seccomp.Syscalls")

// GVisorMemoryOverhead is what a gVisor pod's limit holds above the
// tool's memory limit, for gVisor's own kernel (the Sentry), its gofer
// and the init, which the pod's cgroup charges with the tool: measured on
// the test cluster, a tool of 64 MiB got about 30 MiB of it without this
// (python3 allocating 20 MiB ran, 30 MiB was killed).
const GVisorMemoryOverhead = 64 << 20

// Approximation notes, one per mechanism.
const (
	noteRlimitMemory = "the spec names no cgroup (none sandboxed may use here: a container's read-only cgroupfs): RLIMIT_DATA of the limit for each process; several processes may each use that much, and shared mappings and memfds escape it; an exhausted limit fails the allocation and is not reported as oom"
	noteRlimitPids   = "the spec names no cgroup (none sandboxed may use here: a container's read-only cgroupfs): the limit is the tool's own, set as RLIMIT_NPROC on the tool's uid, which counts every task of that uid across the kernel (with the uid shared, on top of what it runs already when each command starts; the init's threads are not counted); an exhausted limit fails the fork"
	noteRlimitCPU    = "the spec names no cgroup (none sandboxed may use here), and no rlimit stands in for a CPU limit: the run is refused when it starts"
	noteGVisorMemory = "gVisor's own kernel (the Sentry) is charged to the same limit as the tool: the tool gets the limit less the runtime's memory"
	notePodCPU       = "the pod's CPU limit, in thousandths of a CPU rounded down"
	notePodMemory    = "the pod's memory limit; under gVisor (a RuntimeClass of handler runsc), whose own kernel (the Sentry) the pod's cgroup charges with the tool, the pod's limit is the tool's plus 64 MiB for it (GVisorMemoryOverhead), so the tool gets about its own, give or take what the Sentry uses"
	notePodPids      = "under gVisor, RLIMIT_NPROC in the pod's own kernel, which counts the tool's tasks alone; elsewhere the node's pod pids limit (kubelet podPidsLimit) holds, not the plan's"
	notePodMasks     = "the runtime's own masked and read-only /proc and /sys paths (containerd's defaults, Docker's lists without /proc/interrupts) stand for the spec's"
	notePodRlimits   = "the container runtime's own resource limits hold (containerd's: NOFILE 1048576), not the spec's"
	noteSeccompPod   = "the init loads the plan's filter under the pod's own profile (Localhost or RuntimeDefault)"
)

// Rules are the rules of target t. Every field a tier lists is read by its
// converter; a field it does not list is refused.
func Rules(t Target) []Rule {
	var rs []Rule
	switch {
	case t.Kubernetes:
		rs = podRules()
	case t.Tier == isolation.TierProcess:
		rs = processRules()
	case t.Tier == isolation.TierContainer:
		rs = containerRules(t)
	case t.Tier == isolation.TierLandlock:
		rs = landlockRules(t.Cgroup)
	case t.Tier == isolation.TierNone:
		rs = noneRules(t.Cgroup)
	default:
		return nil // an unknown tier honours nothing
	}
	return append(append([]Rule(nil), common...), rs...)
}

// processRules: sandboxed's own init builds the root, namespaces and
// cgroup from the spec (process.ConvertSpec, sbinit.NewSetup).
func processRules() []Rule {
	rs := enforced("Root.Path", "Root.Readonly", "Hostname",
		"Process.User.AdditionalGids", "Process.Capabilities.Bounding", "Process.Capabilities.Effective",
		"Process.Capabilities.Permitted", "Process.Capabilities.Inheritable", FieldRlimits,
		"Process.NoNewPrivileges",
		"Mounts.Destination", "Mounts.Type", "Mounts.Source", "Mounts.Options",
		"Linux.Namespaces.Type", "Linux.CgroupsPath", "Linux.MaskedPaths", "Linux.ReadonlyPaths",
		FieldMemory, FieldSwap, FieldPids, FieldCPUQuota, FieldCPU)
	return append(rs, seccompFields...)
}

// containerRules: the Docker engine's container from translate; with
// runsc, gVisor's kernel shares the memory limit.
func containerRules(t Target) []Rule {
	rs := enforced("Root.Path", "Root.Readonly", "Hostname",
		"Process.Capabilities.Bounding", "Process.Capabilities.Effective",
		"Process.Capabilities.Permitted", "Process.Capabilities.Inheritable", FieldRlimits,
		"Process.NoNewPrivileges",
		"Mounts.Destination", "Mounts.Type", "Mounts.Source", "Mounts.Options",
		"Linux.Namespaces.Type", "Linux.MaskedPaths", "Linux.ReadonlyPaths",
		FieldSwap, FieldPids, FieldCPUQuota, FieldCPU)
	if t.Runtime == "runsc" {
		rs = append(rs, Rule{Field: FieldMemory, How: Approximated, Note: noteGVisorMemory})
	} else {
		rs = append(rs, enforced(FieldMemory)...)
	}
	return append(rs, seccompFields...)
}

// landlockRules: no namespaces, mounts or root of its own; Landlock rules
// of the grants' binds, the plan's seccomp filter, no_new_privs, rlimits,
// and the run's cgroup only where the spec names one (cgroup).
func landlockRules(cgroup bool) []Rule {
	rs := enforced("Root.Path", "Root.Readonly", FieldRlimits, "Process.NoNewPrivileges",
		"Mounts.Destination", "Mounts.Type", "Mounts.Source", "Mounts.Options", "Linux.CgroupsPath")
	rs = append(rs, outsideLimits(cgroup)...)
	return append(rs, seccompFields...)
}

// noneRules: the tool runs on the host as the invoking user; the run's
// cgroup, or rlimits where the spec names none, hold its limits.
func noneRules(cgroup bool) []Rule {
	rs := enforced("Root.Path", "Linux.CgroupsPath")
	return append(rs, outsideLimits(cgroup)...)
}

// outsideLimits are the limit rules of a run started outside namespaces:
// the run's cgroup holds them as written where the spec names it
// (process.OutsideCgroup, which refuses the run where the host no longer
// has it), else rlimits approximate them (process.OutsideRlimits).
func outsideLimits(cgroup bool) []Rule {
	if cgroup {
		return enforced(FieldMemory, FieldSwap, FieldPids, FieldCPUQuota, FieldCPU)
	}
	return []Rule{
		{Field: FieldMemory, How: Approximated, Note: noteRlimitMemory},
		{Field: FieldSwap, How: Approximated, Note: noteRlimitMemory},
		{Field: FieldPids, How: Approximated, Note: noteRlimitPids},
		{Field: FieldCPUQuota, How: Approximated, Note: noteRlimitCPU},
		{Field: FieldCPU, How: Approximated, Note: noteRlimitCPU},
	}
}

// podRules: one pod per run (buildObjects); under gVisor its kernel is
// the pod's own. Whether a RuntimeClass is gVisor's is the cluster's to
// say, when the run starts: the notes say what holds either way.
func podRules() []Rule {
	rs := enforced("Root.Path", "Root.Readonly", "Hostname", "Process.NoNewPrivileges",
		"Mounts.Destination", "Mounts.Type", "Mounts.Source", "Mounts.Options",
		"Linux.Namespaces.Type", FieldSwap)
	rs = append(rs,
		Rule{Field: "Linux.MaskedPaths", How: Approximated, Note: notePodMasks},
		Rule{Field: "Linux.ReadonlyPaths", How: Approximated, Note: notePodMasks},
		Rule{Field: "Linux.Seccomp", How: Approximated, Note: noteSeccompPod},
		Rule{Field: FieldRlimits, How: Approximated, Note: notePodRlimits},
		Rule{Field: FieldCPUQuota, How: Approximated, Note: notePodCPU},
		Rule{Field: FieldCPU, How: Approximated, Note: notePodCPU},
		Rule{Field: FieldMemory, How: Approximated, Note: notePodMemory},
		Rule{Field: FieldPids, How: Approximated, Note: notePodPids})
	return rs
}
