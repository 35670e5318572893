package explain

import (
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/tier"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
)

// What the review says of the sandbox it reads from the plan, as the
// planner made it: the OCI spec for what the mechanisms are set to, the
// plan's limits for what the tool gets, its masks, egress and
// approximations. Nothing here decides; each helper only reads.

// plan is the plan explained (ExplainInput.Plan); where none could be
// made, an empty one of the tier the policy chose, so that every reader
// sees a spec.
func (x *explainer) plan() *isolation.Plan {
	pl := x.in.Plan
	switch {
	case pl != nil && pl.Spec != nil:
		return pl
	case pl != nil:
		c := *pl
		c.Spec = &specs.Spec{}
		return &c
	}
	pl = &isolation.Plan{Tier: tier.Tier(x.in.Decision.Isolation), Spec: &specs.Spec{}}
	if x.in.Def != nil {
		pl.Privilege = x.in.Def.Security.ExecutionPrivilege
	}
	return pl
}

// tier is the tier the run uses.
func (x *explainer) tier() string { return string(x.plan().Tier) }

// user is the uid and gid of the spec's process (inside the sandbox).
func user(s *specs.Spec) (uid, gid uint32) {
	if s.Process == nil {
		return 0, 0
	}
	return s.Process.User.UID, s.Process.User.GID
}

// capabilities are the spec's effective capabilities.
func capabilities(s *specs.Spec) []string {
	if s.Process == nil || s.Process.Capabilities == nil {
		return nil
	}
	return s.Process.Capabilities.Effective
}

// envNames are the names of the variables every command starts with.
func envNames(s *specs.Spec) []string {
	if s.Process == nil {
		return nil
	}
	var out []string
	for _, kv := range s.Process.Env {
		k, _, _ := strings.Cut(kv, "=")
		out = append(out, k)
	}
	return out
}

// namespaces are the spec's new namespaces, by type.
func namespaces(s *specs.Spec) []string {
	if s.Linux == nil {
		return nil
	}
	var out []string
	for _, ns := range s.Linux.Namespaces {
		out = append(out, string(ns.Type))
	}
	return out
}

// readOnly reports whether a mount of the spec is read-only.
func readOnly(m specs.Mount) bool { return slices.Contains(m.Options, "ro") }

// memory is the spec's memory limit and memory+swap limit (0: none).
func memory(s *specs.Spec) (limit, swap int64) {
	if s.Linux == nil || s.Linux.Resources == nil || s.Linux.Resources.Memory == nil {
		return 0, 0
	}
	m := s.Linux.Resources.Memory
	if m.Limit != nil {
		limit = *m.Limit
		if m.Swap != nil {
			swap = *m.Swap
		}
	}
	return limit, swap
}

// specPids is what the mechanism's pids limit is set to (0: none).
func specPids(s *specs.Spec) int64 {
	if s.Linux == nil || s.Linux.Resources == nil || s.Linux.Resources.Pids == nil || s.Linux.Resources.Pids.Limit == nil {
		return 0
	}
	return *s.Linux.Resources.Pids.Limit
}

// toolPids is how many processes and threads the tool gets: the plan's
// limit, or the spec's where the plan has none.
func toolPids(pl *isolation.Plan) int64 {
	if pl.Limits.Pids > 0 {
		return pl.Limits.Pids
	}
	return specPids(pl.Spec)
}

// seccomp names the spec's profile (by the plan's privilege), its
// default action and how many system calls it denies outright.
func seccomp(pl *isolation.Plan) (profile, defaultAction string, denied int) {
	s := pl.Spec
	if s.Linux == nil || s.Linux.Seccomp == nil {
		return "", "", 0
	}
	for _, sys := range s.Linux.Seccomp.Syscalls {
		if sys.Action == specs.ActErrno && len(sys.Args) == 0 {
			denied += len(sys.Names)
		}
	}
	return "sandboxed-" + string(pl.Privilege), string(s.Linux.Seccomp.DefaultAction), denied
}

// approximation says how the run's tier holds a limit (memory, pids,
// cpus) or the policy's masks (masks) it honours only in part, from the
// plan's approximations.
func approximation(pl *isolation.Plan, limit string) (string, bool) {
	field := map[string]string{"memory": specconv.FieldMemory, "pids": specconv.FieldPids, "cpus": specconv.FieldCPUQuota, "masks": specconv.FieldMounts}[limit]
	how, ok := "", false
	for _, a := range pl.Approximations {
		if field != "" && a.Field == field {
			how, ok = a.How, true
		}
	}
	return how, ok
}

// egressPort is the loopback port the commands' proxy variables name (0
// without egress).
func egressPort(pl *isolation.Plan) int {
	if pl.Egress == nil {
		return 0
	}
	return pl.Egress.ProxyPort
}
