package sandbox

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/egress"
	"github.com/sandboxed-dev/sandboxed/isolation/landlock"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// DefaultKillGrace is the time between SIGTERM and SIGKILL.
const DefaultKillGrace = 2 * time.Second

// ErrPlan: the run cannot be planned as asked (a grant that cannot be
// honoured, a mask that cannot be applied). Nothing ran.
var ErrPlan = errors.New("cannot plan run")

// EgressProxyPort is the loopback port inside every sandbox with network
// grants on which the init relays to the run's egress proxy; the tool's
// *_PROXY variables point at it.
const EgressProxyPort = 3128

// egressSocketName is the proxy's socket in the run's host directory.
const egressSocketName = "egress.sock"

// PlanInput is everything the planner needs. It is data: buildPlan makes
// no system call (see facts.go for what is read from the host, and when).
type PlanInput struct {
	RunID    string
	Bound    *tool.Bound
	Grants   []permissions.Grant // Mount.Resolved filled by ResolveMounts
	Decision *policy.Decision
	// Facts are what was gathered from the host (GatherFacts, with the
	// policy's masks looked up by gatherMasks).
	Facts *HostFacts
	// EnvDeny are the policy's environment.deny patterns: host variables
	// never passed in, even when the environment is inherited.
	EnvDeny []string
	// SubTools are the bound sub-tools of use-tool steps, keyed by step
	// path (STEP, STEP/SUBSTEP); Prepare fills it (compose.go).
	SubTools map[string]*tool.Bound
	// Cluster is the operator's Kubernetes backend setting (Request.Cluster).
	Cluster Cluster
	// Changes is how the write grants are recorded (plan_changes.go).
	Changes ChangesInput
}

// Cluster is the operator's choice of backend for a run.
type Cluster struct {
	// Backend is "" or "local" (this host) or isolation.BackendKubernetes
	// (a pod of its own); the policy may force either.
	Backend string
	// RuntimeClass is the pod's RuntimeClass on Kubernetes ("" for the
	// cluster's default). A tool or policy that asks for runsc needs one.
	RuntimeClass string
}

// planLimits are the run's limits: the policy's decision, copied. The
// policy alone decides them (policy.Effective: the definition's requests,
// its defaults, its caps, the privilege's lower pids default); a second
// decision here would be one explain and the result do not report.
func planLimits(d *policy.Decision) isolation.Limits {
	return isolation.Limits{
		MemoryBytes: d.Limits.MemoryBytes,
		Pids:        d.Limits.Pids,
		CPUs:        d.Limits.CPUs,
		TmpfsBytes:  d.Limits.TmpfsBytes,
		Timeout:     d.Limits.Timeout,
		KillGrace:   DefaultKillGrace,
	}
}

// initPids is how many of the spec's pids limit the tier's init takes
// above the tool's: the process and container tiers start the init inside
// the run's cgroup or container, where its spare threads share the limit
// (isolation.InitSpareThreads), and so do the landlock and none tiers
// where a cgroup holds their limits (cgroup). Without one the limit is
// RLIMIT_NPROC on the tool's uid, which the init's threads are not
// counted against (another uid's, or the shared uid's tasks when the
// command starts, above which the limit counts): the tool's own. A pod's
// limit is the tool's own (gVisor's kernel counts the commands only).
func initPids(tier isolation.Tier, kubernetes, cgroup bool) int64 {
	switch {
	case kubernetes:
		return 0
	case startsOutside(tier, kubernetes) && !cgroup:
		return 0
	case tier == isolation.TierProcess, tier == isolation.TierContainer, startsOutside(tier, kubernetes):
		return isolation.InitSpareThreads
	}
	return 0
}

// startsOutside reports whether tier t starts its init outside namespaces, in
// a cgroup where this host has one sandboxed may use, else with rlimits:
// the landlock and none tiers.
func startsOutside(t isolation.Tier, kubernetes bool) bool {
	return !kubernetes && (t == isolation.TierLandlock || t == isolation.TierNone)
}

// cpuWithoutCgroup is the refusal of a CPU quota where no cgroup can hold
// it (the landlock and none tiers in a CI container): no rlimit stands in
// for one. It names where the quota comes from, the definition or the
// policy, and the fix for each.
func cpuWithoutCgroup(def *tool.Definition, d *policy.Decision) error {
	what := fmt.Sprintf("a CPU quota of %g CPUs in the %s tier, where no cgroup sandboxed may use holds one (no rlimit stands in for it)", d.Limits.CPUs, d.Isolation)
	fix := "run where sandboxed may make a cgroup (sudo sandboxed setup --user NAME, or a container started with a writable cgroupfs)"
	if ext := sandboxedExt(def); ext.CPUs > 0 {
		what += "; the definition asks for it (sandboxed.cpus: " + strconv.FormatFloat(ext.CPUs, 'f', -1, 64) + ")"
		fix += ", or remove sandboxed.cpus from " + cmp.Or(def.Source.Path, "the definition")
	} else {
		what += "; the policy gives every run one (limits.cpus)"
		fix += ", or set the policy's limits.cpus.default and limits.cpus.max to 0"
	}
	return &isolation.UnsupportedError{What: what, Fix: fix}
}

// planUser is the uid and gid the tool runs as where the tier or the
// privilege decides them rather than the spec's default (nobody for
// reduced, root in a user namespace for elevated); ok is false where the
// default stands. The spec says what runs:
//   - the none tier: the invoking user, whatever the privilege (the
//     policy's note says nothing is enforced there);
//   - the landlock tier, which has no user namespace: as root, a uid and
//     gid of the run's own (landlock.ToolID), whatever the privilege;
//     without root, this process's own, which it cannot change;
//   - same-as-user: the invoking user; but root's in the container tier
//     runs as the id reserved for sandboxed (f.Reserved), as the process
//     tier maps it, so that no tool is host root there (where the host
//     reserves none, uid 0 stays, and the tier refuses it).
func planUser(t isolation.Tier, kubernetes bool, priv privilege.Privilege, f *HostFacts, runID string) (isolation.ID, bool) {
	switch {
	case t == isolation.TierNone:
		return isolation.ID{UID: f.UID, GID: f.GID}, true
	case t == isolation.TierLandlock && !kubernetes && f.Root:
		id := landlock.ToolID(runID)
		return isolation.ID{UID: id, GID: id}, true
	case t == isolation.TierLandlock && !kubernetes:
		return f.Self, true
	case priv != privilege.SameAsUser:
		return isolation.ID{}, false
	case t == isolation.TierContainer && !kubernetes && f.Root && f.UID == 0 && f.Reserved != nil:
		return *f.Reserved, true
	}
	return isolation.ID{UID: f.UID, GID: f.GID}, true
}

func sandboxedExt(def *tool.Definition) *tool.SandboxedExt {
	if def.Sandboxed == nil {
		return &tool.SandboxedExt{}
	}
	return def.Sandboxed
}

// planPrivilege is the definition's execution privilege, same-as-user
// when it names none.
func planPrivilege(def *tool.Definition) privilege.Privilege {
	if priv := def.Security.ExecutionPrivilege; priv != "" {
		return priv
	}
	return privilege.SameAsUser
}

// planEgress is the egress section of a run with network grants (nil
// without): the proxy's rules as data (the grants' typed rules, and the
// policy's denied hosts parsed once, here), its socket in the run's host
// directory and the relay port inside the sandbox. The rules are checked
// here as the proxy will check them, so a rule the proxy would refuse
// refuses the plan.
func planEgress(grants []permissions.Grant, deny []string, hostDir string) (*isolation.Egress, error) {
	var rules egress.Rules
	for _, g := range grants {
		switch {
		case g.Egress != nil:
			rules.Allow = append(rules.Allow, g.Egress.Rule())
		case g.Localhost != nil:
			if g.Localhost.Port == EgressProxyPort {
				return nil, fmt.Errorf("network:localhost:%d: the port is the sandbox's egress proxy; forward another port: %w", EgressProxyPort, ErrPlan)
			}
			rules.LocalhostPorts = append(rules.LocalhostPorts, g.Localhost.Port)
		}
	}
	if rules.Allow == nil && rules.LocalhostPorts == nil {
		return nil, nil
	}
	for _, h := range deny {
		r, err := netrule.ParseRule(h)
		if err != nil {
			return nil, fmt.Errorf("egress rules: the policy's network.deny: %w", err)
		}
		rules.Deny = append(rules.Deny, r)
	}
	if err := rules.Check(); err != nil {
		return nil, fmt.Errorf("egress rules: %w", err)
	}
	return &isolation.Egress{
		ProxySocket:    filepath.Join(hostDir, egressSocketName),
		ProxyPort:      EgressProxyPort,
		LocalhostPorts: rules.LocalhostPorts,
		Allow:          rules.Allow,
		Deny:           rules.Deny,
	}, nil
}

// buildPlan turns a bound tool, the policy's decision and the host facts
// into a Plan, the commands of its steps and what to look at again after
// the run (the protected patterns under write grants). The decision must
// allow the run. It has no side effects: the same input gives the same
// plan, and that plan is complete — the host directory and the egress
// proxy's rules are in it, and nothing is added to it later.
func buildPlan(in PlanInput) (*isolation.Plan, []JobStep, []protectedWatch, error) {
	if d := in.Decision; d == nil || d.Verdict != policy.Allow {
		return nil, nil, nil, fmt.Errorf("plan %s: the policy has not allowed the run: %w", in.Bound.Def.Name, ErrPlan)
	}
	p, sp, err := planSandbox(in)
	if err != nil {
		return nil, nil, nil, err
	}
	steps, err := jobSteps(in.Bound, sp.env, sp.cwd, in.Facts.Cwd, in.Decision.Limits.OutputBytes, in.SubTools)
	if err != nil {
		return nil, nil, nil, err
	}
	return p, steps, sp.watches, nil
}

// sandboxPlan is what planSandbox decided besides the Plan, for the steps
// and the controller.
type sandboxPlan struct {
	env     []string // every command's base environment
	cwd     string   // the tool's working directory
	watches []protectedWatch
}

// planSandbox plans the sandbox of a run: everything but its commands.
// It does not look at the decision's verdict.
func planSandbox(in PlanInput) (*isolation.Plan, *sandboxPlan, error) {
	b, d, f := in.Bound, in.Decision, in.Facts
	if f == nil {
		return nil, nil, fmt.Errorf("plan %s: no host facts: %w", b.Def.Name, ErrPlan)
	}
	def := b.Def
	priv := planPrivilege(def)
	ext := sandboxedExt(def)
	limits := planLimits(d)
	hostDir := HostDir(f.RuntimeDir, in.RunID)
	eg, err := planEgress(in.Grants, d.EgressDeny, hostDir)
	if err != nil {
		return nil, nil, fmt.Errorf("plan %s: %w", def.Name, err)
	}
	inspect, err := planInspection(in.RunID, ext, eg, d, f, kubernetesRun(in))
	if err != nil {
		return nil, nil, fmt.Errorf("plan %s: %w", def.Name, err)
	}
	planQuotas(eg, d.Quotas, def.Name, ext.Quotas)

	cwd := f.Cwd
	if wd := b.WorkingDirectory; wd != "" {
		cwd = absUnder(f.Cwd, wd)
	}

	var proxyEnv []string
	if eg != nil {
		proxyEnv = append(egress.ProxyEnv(eg.ProxyPort), inspect.env...)
	}
	// An inherited environment never carries a credential's real value.
	envDeny := append(append([]string(nil), in.EnvDeny...), credentialSources(ext)...)
	env := baseEnv(b, f, in.Grants, envDeny, proxyEnv)
	scratch := ""
	if d.Isolation == isolation.TierLandlock {
		// No private /tmp: the run's own directory on the host.
		scratch = landlock.ScratchDir(f.TempDir, in.RunID)
		env = landlockEnv(env, scratch)
	}
	opts := []SpecOpt{
		WithMemory(limits.MemoryBytes),
		WithPids(limits.Pids + initPids(d.Isolation, kubernetesRun(in), f.Cgroup)),
		WithTmpfs(limits.TmpfsBytes),
		WithEnv(env),
		WithCwd(cwd),
		WithAnnotation(isolation.AnnotationTool, def.Name),
	}
	if limits.CPUs > 0 {
		opts = append(opts, WithCPUs(limits.CPUs))
	}
	if startsOutside(d.Isolation, kubernetesRun(in)) && !f.Cgroup {
		// No cgroup here: the spec names none, and rlimits approximate
		// its limits (specconv's notes say how) — but not a CPU quota.
		if limits.CPUs > 0 {
			return nil, nil, cpuWithoutCgroup(def, d)
		}
		opts = append(opts, WithoutCgroup())
	}
	if u, ok := planUser(d.Isolation, kubernetesRun(in), priv, f, in.RunID); ok {
		opts = append(opts, WithUser(u.UID, u.GID))
	}
	// Grants, parents before children so a nested grant is not hidden.
	mounts := mountGrants(in.Grants)
	changes := planChanges(in, mounts)
	protectGrants(changes, d)
	gopts, err := grantOpts(b, mounts, changes, cwd, f.Cwd, in.SubTools)
	if err != nil {
		return nil, nil, err
	}
	opts = append(append(opts, gopts...), inspect.opts...)
	maskOpts, watches, masked, err := planMasks(d.Masks, mounts, f, changes)
	if err != nil {
		return nil, nil, err
	}
	opts = append(opts, maskOpts...)

	if d.Isolation == isolation.TierLandlock {
		opts = append(opts, WithSeccomp(LandlockSeccompProfile(priv, eg != nil)))
	}
	opts = append(opts, WithTier(d.Isolation, kubernetesRun(in)))
	spec, err := NewSpec(in.RunID, priv, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("plan %s: %w", def.Name, err)
	}

	p := &isolation.Plan{
		RunID:     in.RunID,
		Tool:      def.Name,
		Tier:      d.Isolation,
		Privilege: priv,
		Spec:      spec,
		Limits:    limits,
		Egress:    eg,
		Masked:    masked,
		Changes:   changes,
		HostDir:   hostDir,
		// The invoking user's: a reduced tool writes there as them.
		GrantOwner: &isolation.ID{UID: f.UID, GID: f.GID},
		// The process tier reads it; the others have no Landlock.
		RequireLandlock: d.RequireLandlock,
	}
	if p.Tier == isolation.TierNone {
		p.Limits.TmpfsBytes = 0 // no /tmp of its own: the host's
	}
	if p.Tier == isolation.TierLandlock {
		p.Scratch = scratch
		p.AcceptGaps = append([]string(nil), d.AcceptGaps...)
	}
	return planRuntime(p, in, ext, &sandboxPlan{env: env, cwd: cwd, watches: watches})
}

// planRuntime finishes p with where it runs — a pod of its own, or the
// container tier's image and runtime — and what its tier approximates
// of its spec.
func planRuntime(p *isolation.Plan, in PlanInput, ext *tool.SandboxedExt, sp *sandboxPlan) (*isolation.Plan, *sandboxPlan, error) {
	d := in.Decision
	if kubernetesRun(in) {
		p, sp, err := planPod(p, in, ext.Image, ext.Runtime, d.Runtime, sp)
		if err != nil {
			return nil, nil, err
		}
		return p, sp, reviewSpec(p)
	}
	if p.Tier == isolation.TierContainer {
		p.Image = isolation.DefaultImage
		if ext.Image != "" {
			p.Image = ext.Image
		}
		p.Runtime = ext.Runtime
		if d.Runtime != "" {
			p.Runtime = d.Runtime // the policy forces it
		}
	}
	return p, sp, reviewSpec(p)
}

// reviewSpec records in p what its tier approximates of its spec, and
// refuses a spec its tier would not honour (specconv.Review): a plan
// says what its tier does with each field before anything runs.
func reviewSpec(p *isolation.Plan) error {
	approx, err := specconv.Review(specconv.TargetOf(p), p.Spec)
	if err != nil {
		return fmt.Errorf("plan %s: %w: %w", p.Tool, ErrPlan, err)
	}
	if a := landlock.MaskApproximation(p); a != nil {
		approx = append(approx, *a)
	}
	p.Approximations = approx
	return nil
}

// grantOpts are the spec options of the grants' mounts (parents before
// children), preceded by an empty, read-only directory for each working
// directory of the tool (toolCwd) and its sub-tools that no grant covers:
// commands start where they were told, and see nothing of the host there.
func grantOpts(b *tool.Bound, mounts []*permissions.Mount, changes *isolation.Changes, toolCwd, callerCwd string, subs map[string]*tool.Bound) ([]SpecOpt, error) {
	var opts []SpecOpt
	for _, dir := range workDirs(b, toolCwd, callerCwd, subs) {
		if !covered(dir, mounts) {
			opts = append(opts, emptyDir(dir))
		}
	}
	for _, m := range mounts {
		if m.Resolved == "" {
			return nil, fmt.Errorf("plan %s: grant of %s was not resolved on the host: %w", b.Def.Name, m.HostPath, ErrPlan)
		}
		if m.Write {
			opts = append(opts, WithWriteBind(mountSource(m, changes), m.Target))
		} else {
			opts = append(opts, WithReadBind(m.Resolved, m.Target))
		}
	}
	return opts, nil
}

// landlockEnv is env with HOME and TMPDIR in the scratch directory of a
// landlock-tier run, where no private /tmp is mounted: HOME where it is
// the default (/tmp), TMPDIR unless the tool sets it.
func landlockEnv(env []string, scratch string) []string {
	out := make([]string, 0, len(env)+1)
	hasTmp := false
	for _, kv := range env {
		switch {
		case kv == "HOME=/tmp":
			kv = "HOME=" + scratch
		case strings.HasPrefix(kv, "TMPDIR="):
			hasTmp = true
		}
		out = append(out, kv)
	}
	if !hasTmp {
		out = append(out, "TMPDIR="+scratch)
	}
	sort.Strings(out)
	return out
}

func workDirs(b *tool.Bound, toolCwd, callerCwd string, subs map[string]*tool.Bound) []string {
	dirs := []string{toolCwd}
	for _, st := range b.Steps {
		if st.Cwd != "" {
			dirs = append(dirs, absUnder(callerCwd, st.Cwd))
		}
	}
	// Sub-tools of use-tool steps run in the same sandbox.
	for _, sub := range subs {
		for _, st := range sub.Steps {
			if st.Cwd != "" {
				dirs = append(dirs, absUnder(callerCwd, st.Cwd))
			}
		}
	}
	sort.Strings(dirs)
	return dirs
}

func covered(dir string, mounts []*permissions.Mount) bool {
	for _, m := range mounts {
		if dir == m.Target || strings.HasPrefix(dir, strings.TrimSuffix(m.Target, "/")+"/") {
			return true
		}
	}
	return dir == "/" || dir == "/tmp"
}

func emptyDir(dir string) SpecOpt {
	return func(s *specs.Spec) error {
		for _, m := range s.Mounts {
			if m.Destination == dir {
				return nil
			}
		}
		s.Mounts = append(s.Mounts, specs.Mount{Destination: dir, Type: "tmpfs", Source: "tmpfs",
			Options: []string{"ro", "nosuid", "nodev", "noexec", "size=4k", "mode=755"}})
		return nil
	}
}

func mountGrants(grants []permissions.Grant) []*permissions.Mount {
	var ms []*permissions.Mount
	for i := range grants {
		if grants[i].Mount != nil {
			ms = append(ms, grants[i].Mount)
		}
	}
	sort.SliceStable(ms, func(i, j int) bool { return len(ms[i].Target) < len(ms[j].Target) })
	return ms
}

// baseEnv is the scrubbed environment every command starts from: PATH,
// HOME, LANG, the tool's variables, granted host variables, inherited ones
// when the policy allowed environment.inherit, and the proxy variables.
func baseEnv(b *tool.Bound, f *HostFacts, grants []permissions.Grant, envDeny, proxyEnv []string) []string {
	vars := map[string]string{}
	if b.Def.Environment != nil && b.Def.Environment.Inherit {
		for _, kv := range f.Env {
			if k, v, ok := strings.Cut(kv, "="); ok && !deniedEnv(envDeny, k) {
				if _, seen := vars[k]; !seen { // the first of a name, as os.Getenv
					vars[k] = v
				}
			}
		}
	}
	vars["PATH"] = DefaultPath
	vars["HOME"] = "/tmp"
	vars["LANG"] = "C.UTF-8"
	if v, ok := f.lookupEnv("LANG"); ok && v != "" {
		vars["LANG"] = v
	}
	for k, v := range b.Env {
		vars[k] = v
	}
	for _, g := range grants {
		if g.Env != nil {
			if v, ok := f.lookupEnv(g.Env.Name); ok {
				vars[g.Env.Name] = v
			}
		}
	}
	for _, kv := range proxyEnv {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	return sortedEnv(vars)
}

// deniedEnv reports whether the policy keeps host variable k out even when
// the environment is inherited (LD_*, SSH_AUTH_SOCK, DOCKER_HOST, ...).
func deniedEnv(deny []string, k string) bool { return policy.EnvDenied(deny, k) >= 0 }

func sortedEnv(vars map[string]string) []string {
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func absUnder(base, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

// deepestMount is the grant whose target holds p most closely.
func deepestMount(mounts []*permissions.Mount, p string) *permissions.Mount {
	var best *permissions.Mount
	for _, m := range mounts {
		if holds(m.Target, p) && (best == nil || len(m.Target) > len(best.Target)) {
			best = m
		}
	}
	return best
}

// holds reports whether dir is p or one of its parents.
func holds(dir, p string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
