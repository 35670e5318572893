package process

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/internal/cleanup"
	"github.com/sandboxed-dev/sandboxed/internal/reown"
	"github.com/sandboxed-dev/sandboxed/internal/xdg"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
	"github.com/sandboxed-dev/sandboxed/isolation/initbin"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
)

// Backend is the process tier.
type Backend struct {
	// Exe is the binary executed as the init; empty means the init this
	// build carries (package initbin), else /proc/self/exe. It must call
	// sbinit.Main early (see package doc).
	Exe string

	// Spawner: the inits are started through a small process of the
	// init binary, started with the first (see sbinit's spawner), not
	// forked from this one. For a long-lived process, whose fork copies
	// its page tables and makes its next writes fault. The spawner lives
	// as long as this process.
	Spawner bool
	// Log is where the backend says what it falls back on (a spawner that
	// cannot be started: the inits are then started directly); nil:
	// nowhere.
	Log io.Writer

	once   sync.Once
	feats  Features
	spOnce sync.Once
	sp     spawner
}

// New returns the process-tier backend.
func New() *Backend { return &Backend{} }

// spawner is the backend's spawner, nil when it starts its inits itself.
func (b *Backend) spawner() *spawner {
	if !b.Spawner {
		return nil
	}
	b.spOnce.Do(func() { b.sp.log = b.Log })
	return &b.sp
}

var _ isolation.Backend = (*Backend)(nil)

// Tier reports isolation.TierProcess.
func (b *Backend) Tier() isolation.Tier { return isolation.TierProcess }

func (b *Backend) features(ctx context.Context) *Features {
	b.once.Do(func() { b.feats = Probe(ctx) })
	return &b.feats
}

// Check refuses a plan this host cannot enforce in full.
func (b *Backend) Check(ctx context.Context, p *isolation.Plan) error {
	_, _, err := b.check(ctx, p)
	return err
}

// check is Check, returning the init's configuration it had to compute
// to prove the spec enforceable, and the run's user namespace (nil for
// none).
func (b *Backend) check(ctx context.Context, p *isolation.Plan) (*sbinit.Config, *idMapping, error) {
	if p == nil || p.Spec == nil || p.Spec.Process == nil {
		return nil, nil, fmt.Errorf("check plan: no spec or process: %w", ErrBadPlan)
	}
	if p.Tier != isolation.TierProcess {
		return nil, nil, fmt.Errorf("check plan: tier %q: %w", p.Tier, ErrBadPlan)
	}
	conv, err := ConvertSpec(p.Spec)
	if err != nil {
		return nil, nil, fmt.Errorf("check plan: %w", err)
	}
	if conv.RunID != p.RunID {
		return nil, nil, fmt.Errorf("check plan: the spec is of run %q, the plan of %q: %w", conv.RunID, p.RunID, ErrBadPlan)
	}
	if conv.Resources.Pids < p.Limits.Pids+isolation.InitSpareThreads {
		return nil, nil, fmt.Errorf("check plan: the spec's pids limit must hold the tool's and the init's spare threads: %w", ErrBadPlan)
	}
	f := b.features(ctx)
	for _, ns := range []string{"mnt", "pid", "net", "ipc", "uts", "cgroup"} {
		if !f.Namespaces[ns] {
			return nil, nil, &isolation.UnsupportedError{What: ns + " namespaces", Fix: "use a kernel with namespaces enabled"}
		}
	}
	ids, err := probeHostIDs()
	if err != nil {
		return nil, nil, err
	}
	user := p.Spec.Process.User
	m, err := planIDMapping(ids, p.Privilege, user.UID, user.GID)
	if err != nil {
		return nil, nil, err
	}
	if m == nil && slices.Contains(conv.Namespaces, specs.UserNamespace) {
		return nil, nil, fmt.Errorf("check plan: the spec asks for a user namespace the %s privilege does not make: %w", p.Privilege, ErrBadPlan)
	}
	if m != nil && !f.Namespaces["user"] {
		what := "user namespaces (the process tier without root)"
		if ids.euid == 0 {
			what = "user namespaces (" + string(p.Privilege) + " as root: tools never run as host root)"
		}
		return nil, nil, &isolation.UnsupportedError{What: what, Fix: "sysctl -w user.max_user_namespaces=15000"}
	}
	if f.cgroups == nil {
		return nil, nil, &isolation.UnsupportedError{What: "cgroups", Fix: "mount cgroup v2 at /sys/fs/cgroup"}
	}
	if errs := f.cgroups.Missing(conv.Resources); len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	if p.Spec.Linux != nil && p.Spec.Linux.Seccomp != nil && !f.Seccomp {
		return nil, nil, &isolation.UnsupportedError{What: "seccomp filters", Fix: "use a kernel built with CONFIG_SECCOMP_FILTER"}
	}
	if p.RequireLandlock && f.LandlockABI < sbinit.LandlockFullABI {
		return nil, nil, landlockMissing(f.LandlockABI)
	}
	// Every name in the spec (capabilities, rlimits, syscalls, mounts)
	// must be enforceable.
	cfg, err := initConfig(p, conv)
	if err != nil {
		return nil, nil, fmt.Errorf("check plan: %w", err)
	}
	if m != nil {
		cfg.KeepGroups = m.keepGroups
		if m.become != nil {
			cfg.BuildAs = &sbinit.ID{UID: m.become[0], GID: m.become[1]}
		}
	}
	if _, err := cgroupRunID(p.RunID); err != nil {
		return nil, nil, err
	}
	return cfg, m, nil
}

func cgroupRunID(id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("check plan: no run id: %w", ErrBadPlan)
	}
	return id, nil
}

// resources are the run's cgroup limits, read from its spec
// (specconv.ReadResources; zero for a spec without them, which every
// tier's Check refuses). The pids limit is the spec's: the planner put
// the init's spare threads above the tool's limit there
// (isolation.InitSpareThreads), so that a tool taking every pid cannot
// starve the init, and what explain shows is what the cgroup gets.
func resources(p *isolation.Plan) cgroup.Resources {
	r, err := specconv.ReadResources(p.Spec)
	if err != nil {
		return cgroup.Resources{}
	}
	return cgroup.Resources{MemoryBytes: r.MemoryBytes, Pids: r.Pids, CPUQuota: r.CPUQuota, CPUPeriod: r.CPUPeriod}
}

// Start builds the sandbox: cgroup, init in new namespaces, root, dropped
// credentials. On error nothing is left behind.
func (b *Backend) Start(ctx context.Context, p *isolation.Plan) (isolation.Sandbox, error) {
	cfg, m, err := b.check(ctx, p)
	if err != nil {
		return nil, err
	}
	g, handed, err := b.grants(ctx, p, m)
	if err != nil {
		return nil, err
	}
	sb, err := start(ctx, b.spawner(), p, b.Exe, b.features(ctx).cgroups, cfg, m, g)
	return withHanded(sb, err, handed)
}

// grants decides how p's write grants reach its tool (planGrantAccess),
// and hands them over to it where that is the way; the caller hands them
// back (withHanded).
func (b *Backend) grants(ctx context.Context, p *isolation.Plan, m *idMapping) (*grantAccess, *reown.Handed, error) {
	ids, err := probeHostIDs()
	if err != nil {
		return nil, nil, err
	}
	g, err := planGrantAccess(ids, p, m)
	if err != nil || g == nil {
		return nil, nil, err
	}
	g.exe = b.Exe
	if p.HostDir != "" {
		g.holds = filepath.Join(filepath.Dir(p.HostDir), reown.HoldsDir)
	}
	if !g.handOver {
		return g, nil, nil
	}
	h, err := handOver(ctx, b.Exe, m, g)
	if err != nil {
		return nil, nil, err
	}
	return g, h, nil
}

// withHanded gives the sandbox sb (started with err) the grants handed
// over for it, to hand back when it closes; if it did not start, they
// are handed back now.
func withHanded(sb isolation.Sandbox, err error, h *reown.Handed) (isolation.Sandbox, error) {
	if h == nil {
		return sb, err
	}
	if err != nil {
		return nil, errors.Join(err, h.Back())
	}
	sb.(*sandbox).handed = h
	return sb, nil
}

// StartUnconfined starts the init of the none tier: no namespaces, no new
// root, no credential change; commands run as host processes in their own
// sessions. The run's cgroup holds every process and enforces the plan's
// memory and pids limits where this host has a cgroup it may use;
// otherwise each command gets them as rlimits (RlimitConfine) and the
// init, their child subreaper, kills every descendant at the end. exe is
// the init binary ("" for the one this build carries, else
// /proc/self/exe).
func StartUnconfined(ctx context.Context, p *isolation.Plan, exe string) (isolation.Sandbox, error) {
	if p == nil || p.Spec == nil {
		return nil, fmt.Errorf("start: no plan or spec: %w", ErrBadPlan)
	}
	cwd := ""
	if p.Spec.Process != nil {
		cwd = p.Spec.Process.Cwd
	}
	cfg := &sbinit.Config{RunID: p.RunID, Setup: &sbinit.Setup{Cwd: cwd}, NewSession: true, KillTree: true}
	host, rl, err := OutsideLimits(p, true)
	if err != nil {
		return nil, err
	}
	if rl != nil {
		cfg.Confine = rl
		cfg.Confine.LimitsOnly = true
	}
	return StartOutside(ctx, p, exe, host, cfg)
}

// OutsideLimits is how the limits of p's spec hold on a run started
// outside namespaces (the none and landlock tiers): the cgroup hierarchy
// that holds them (host), or, where this process may use none, the
// rlimits that approximate them (RlimitConfine with sharedUID; nil when
// the spec has no limit). A CPU limit needs a cgroup: without one the run
// is refused.
func OutsideLimits(p *isolation.Plan, sharedUID bool) (host *cgroup.Host, rl *sbinit.Confine, err error) {
	if host, err = OutsideCgroup(p); err != nil {
		return nil, nil, err
	}
	rl, err = OutsideRlimits(p, sharedUID, host != nil)
	return host, rl, err
}

// OutsideCgroup is the cgroup hierarchy that holds the limits of p, a run
// started outside namespaces, as its spec says: nil when the spec names no
// cgroup (Linux.CgroupsPath; the planner found none sandboxed may use
// here, and rlimits approximate the limits); an error when it names one
// this host cannot give.
func OutsideCgroup(p *isolation.Plan) (*cgroup.Host, error) {
	if !specCgroup(p) {
		return nil, nil
	}
	host := UsableCgroup(PlanResources(p))
	if host == nil {
		return nil, &isolation.UnsupportedError{
			What: "the run's cgroup its plan names: this host has no cgroup hierarchy sandboxed may use for its limits (it had one when the run was planned)",
			Fix:  "run it again: planned here, its limits are held by rlimits",
		}
	}
	return host, nil
}

// CgroupHolds reports whether a cgroup hierarchy here can hold limits l
// of a run started outside namespaces (UsableCgroup): the planner's fact,
// the test OutsideCgroup makes again when the run starts.
func CgroupHolds(l isolation.Limits) bool {
	r := cgroup.Resources{MemoryBytes: l.MemoryBytes, Pids: l.Pids}
	if l.CPUs > 0 {
		r.CPUQuota, r.CPUPeriod = isolation.CPUQuota(l.CPUs), isolation.CPUPeriod
	}
	return UsableCgroup(r) != nil
}

// specCgroup reports whether p's spec names the run's cgroup.
func specCgroup(p *isolation.Plan) bool {
	return p != nil && p.Spec != nil && p.Spec.Linux != nil && p.Spec.Linux.CgroupsPath != ""
}

// PlanResources are the limits of p's spec, as a cgroup takes them (zero
// for a spec without them, which every tier's Check refuses).
func PlanResources(p *isolation.Plan) cgroup.Resources { return resources(p) }

// OutsideRlimits are the rlimits that approximate the limits of p's spec
// on a run started outside namespaces (RlimitConfine with sharedUID):
// nil when a cgroup holds them (inCgroup) or the spec has none. A CPU
// limit without a cgroup is refused: no rlimit stands in for it.
func OutsideRlimits(p *isolation.Plan, sharedUID, inCgroup bool) (*sbinit.Confine, error) {
	r := resources(p)
	if inCgroup || r == (cgroup.Resources{}) {
		return nil, nil
	}
	if r.CPUQuota > 0 {
		return nil, &isolation.UnsupportedError{
			What: fmt.Sprintf("a limit of %g CPUs without a cgroup sandboxed may use (no rlimit stands in for it)", float64(r.CPUQuota)/float64(r.CPUPeriod)),
			Fix:  "run where sandboxed may make a cgroup (sudo sandboxed setup --user NAME, or a writable cgroupfs), or without a CPU quota (the definition's sandboxed.cpus, the policy's limits.cpus)",
		}
	}
	// RLIMIT_NPROC counts the tool's uid's processes, which the init's
	// threads are not (another uid's, or the shared uid's tasks when the
	// command starts): the planner gave a spec without a cgroup the
	// tool's own limit, no spare threads (checkSpecPids).
	return RlimitConfine(r, sharedUID), nil
}

// UsableCgroup is the cgroup hierarchy that can hold limits r, or nil
// when there is none this process may use (a container's read-only
// cgroupfs) or r has no limit a cgroup would hold.
func UsableCgroup(r cgroup.Resources) *cgroup.Host {
	if r == (cgroup.Resources{}) {
		return nil
	}
	h := WritableCgroups()
	if h == nil || len(h.Missing(r)) > 0 {
		return nil
	}
	return h
}

// WritableCgroups is this host's cgroup hierarchy when this process may
// make cgroups in it, else nil (none, or a container's read-only
// cgroupfs).
func WritableCgroups() *cgroup.Host {
	h, err := cgroup.Detect()
	if err != nil || h.ReadOnly() {
		return nil
	}
	return h
}

// RlimitConfine is the Confine that approximates limits r where no cgroup
// holds them: RLIMIT_DATA of the memory limit (per process: several
// processes may each use that much), RLIMIT_NPROC of the pids limit (per
// uid across the kernel: with sharedUID, on top of what the uid runs
// already) and RLIMIT_CORE 0 (specconv's notes say so). Its identity and
// confinement are the caller's to fill.
func RlimitConfine(r cgroup.Resources, sharedUID bool) *sbinit.Confine {
	c := &sbinit.Confine{NprocLimit: r.Pids, SharedUID: sharedUID}
	if r.MemoryBytes > 0 {
		c.Rlimits = append(c.Rlimits, sbinit.Rlimit{Resource: unix.RLIMIT_DATA, Soft: uint64(r.MemoryBytes), Hard: uint64(r.MemoryBytes)})
	}
	c.Rlimits = append(c.Rlimits, sbinit.Rlimit{Resource: unix.RLIMIT_CORE})
	return c
}

// StartOutside starts an init with no namespaces and cfg (the none tier's,
// or the landlock tier's with its Confine) for plan p. host, when set,
// holds the run in a cgroup with the plan's limits; nil: none. The init
// is the commands' child subreaper, and dies with this process only after
// it killed every one of their descendants (it is not sent SIGKILL when
// its parent goes, which would leave them behind).
func StartOutside(ctx context.Context, p *isolation.Plan, exe string, host *cgroup.Host, cfg *sbinit.Config) (isolation.Sandbox, error) {
	if p == nil || p.Spec == nil || cfg == nil || cfg.BuildRoot {
		return nil, fmt.Errorf("start: no plan, spec or config, or a config that builds a root: %w", ErrBadPlan)
	}
	if _, err := cgroupRunID(p.RunID); err != nil {
		return nil, err
	}
	return start(ctx, nil, p, exe, host, cfg, nil, nil)
}

// start starts the init with cfg. A cfg that builds a root selects the
// process tier (namespaces, new root, dropped credentials) over the none
// tier, and goes after the skeleton of the root (the prepare frame), as a
// warm sandbox's does: the same steps in the same order. host is nil when
// the run needs no cgroup (none tier without limits); m is the run's user
// namespace, nil for none.
func start(ctx context.Context, sp *spawner, p *isolation.Plan, exe string, host *cgroup.Host, cfg *sbinit.Config, m *idMapping, g *grantAccess) (isolation.Sandbox, error) {
	if err := checkSpecPids(p); err != nil {
		return nil, err
	}
	var sk *sbinit.Skeleton
	if cfg.BuildRoot {
		s := cfg.Skeleton()
		sk = &s
	}
	// The frames wait in the socketpair for the init to start, unless the
	// init's namespace must be finished first (maps written by the setuid
	// helpers, mounts prepared here): it waits for them.
	afterStart := (m != nil && m.helper) || hostTrees(m, g, cfg)
	var l *launched
	var err error
	if afterStart {
		l, err = launch(ctx, sp, p.RunID, exe, host, resources(p), cfg.BuildRoot, m, nil, nil)
	} else {
		l, err = launch(ctx, sp, p.RunID, exe, host, resources(p), cfg.BuildRoot, m, sk, cfg)
	}
	if err != nil {
		return nil, err
	}
	l.cl.KillGrace = p.Limits.KillGrace
	if afterStart {
		if m != nil && m.helper {
			err = writeIDMaps(l.proc.pid, m)
		}
		if err == nil {
			err = l.configure(ctx, m, g, sk, cfg)
		}
		if err != nil {
			err = l.initFailed(err)
			l.destroy(ctx)
			return nil, fmt.Errorf("start sandbox %s: %w", p.RunID, err)
		}
	}
	return l.ready(ctx, p)
}

// checkSpecPids refuses a plan whose spec's pids limit does not hold the
// tool's and the init's spare threads where a cgroup holds it: the init
// shares the cgroup's pids limit, so it would take them from the tool, or
// leave a cgroup without one. Where the spec names no cgroup (a run
// outside namespaces with rlimits) the limit is RLIMIT_NPROC on the
// tool's uid, and must be the tool's own: the init's threads are not
// counted there.
func checkSpecPids(p *isolation.Plan) error {
	spec := isolation.SpecPids(p.Spec)
	switch {
	case p.Limits.Pids <= 0:
		return nil
	case specCgroup(p) && spec < p.Limits.Pids+isolation.InitSpareThreads:
		return fmt.Errorf("start: the spec's pids limit %d does not hold the tool's %d and the init's spare threads: %w", spec, p.Limits.Pids, ErrBadPlan)
	case !specCgroup(p) && spec != p.Limits.Pids:
		return fmt.Errorf("start: the spec names no cgroup, and its pids limit %d (RLIMIT_NPROC on the tool's uid) is not the tool's %d: %w", spec, p.Limits.Pids, ErrBadPlan)
	}
	return nil
}

// hostTrees reports whether the grants of cfg are prepared here (see
// preparedTrees): for an init that builds its root as another identity,
// which could not open their sources, idmapped where m says so, and for
// write grants idmapped to a reduced tool (g).
func hostTrees(m *idMapping, g *grantAccess, cfg *sbinit.Config) bool {
	return (m != nil && (m.idmapGrants || m.become != nil) || g.idmapsWrite()) && hasBinds(cfg.Setup)
}

// configure sends the started init, its user namespace's maps written,
// the skeleton sk (nil: it has it already) and cfg, with the grants
// prepared here where hostTrees says so. Those are made once the init
// has built the skeleton, so that they come after its mounts whether the
// sandbox was warm or not (mount ids order /proc/self/mountinfo).
func (l *launched) configure(ctx context.Context, m *idMapping, g *grantAccess, sk *sbinit.Skeleton, cfg *sbinit.Config) error {
	trees := hostTrees(m, g, cfg)
	if sk != nil {
		var err error
		if trees {
			err = l.cl.Prepare(ctx, sk)
		} else {
			err = l.cl.SendPrepare(sk)
		}
		if err != nil {
			return err
		}
	}
	if !trees {
		return l.cl.SendConfig(cfg)
	}
	fds, err := preparedTrees(l.proc.pid, cfg.Setup, m != nil && m.idmapGrants, g)
	if err != nil {
		return err
	}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	return l.cl.SendConfig(cfg, fds...)
}

// launched is a sandbox's init started in its cgroup and namespaces. It
// runs no command before it got its config and reported ready (ready).
type launched struct {
	runID string
	cg    cgroup.Group // nil: no cgroup
	cl    *sbinit.Client
	proc  *initProc
	// adopts: the init runs outside namespaces, and this process is a
	// child subreaper for it (holdSubreaper) until it is gone.
	adopts bool
}

// launch starts the init of run runID: its cgroup (with limits r) made
// first, then the init, born in it, in new namespaces when confined (with
// the user namespace m, nil for none). sk and cfg, when set, are sent at
// once; otherwise the init waits for them. host is nil when the run needs
// no cgroup. sp, when set, starts the init. On error nothing is left
// behind.
func launch(ctx context.Context, sp *spawner, runID, exe string, host *cgroup.Host, r cgroup.Resources, confined bool, m *idMapping, sk *sbinit.Skeleton, cfg *sbinit.Config) (*launched, error) {
	var cu cleanup.Cleanup
	defer cu.Clean()
	if !confined {
		// Before the init can die: its orphans come here (killAdopted).
		holdSubreaper()
		cu.Add(releaseSubreaper)
	}
	var cg cgroup.Group
	if host != nil {
		var err error
		if cg, err = host.New(runID, r); err != nil {
			return nil, fmt.Errorf("start sandbox %s: %w", runID, err)
		}
		cu.Add(func() {
			c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			_ = cg.Kill(c)
			_ = cg.Delete()
		})
	}
	ctl, child, err := sbinit.SocketPair()
	if err != nil {
		return nil, err
	}
	defer child.Close()
	cl := sbinit.NewClient(ctl)
	cu.Add(func() { cl.Close() })

	cached := false
	if exe == "" {
		// The small init this build carries, else this very binary.
		path, release, err := initbin.Exec(initCacheDir())
		if err != nil {
			return nil, fmt.Errorf("start sandbox %s: %w", runID, err)
		}
		defer release()
		exe = cmp.Or(path, "/proc/self/exe")
		cached = path != "" && !strings.HasPrefix(path, "/proc/")
	}
	cmd := initCmd(child, initAttrs(confined, m, os.Geteuid(), os.Getegid()))
	closeExe, err := setInitPath(cmd, exe)
	if err != nil {
		return nil, fmt.Errorf("start sandbox %s: %w", runID, err)
	}
	defer closeExe()
	if cg != nil && cg.Version() == 2 {
		// Born in the run's cgroup (and rooted there for its cgroup
		// namespace), before it runs a single instruction.
		cgFile, err := os.OpenFile(host.V2+cg.Path(), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("open cgroup %s: %w", cg.Path(), err)
		}
		defer cgFile.Close()
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(cgFile.Fd())
	}
	if sk != nil {
		if err := cl.SendPrepare(sk); err != nil {
			return nil, fmt.Errorf("start sandbox %s: %w", runID, err)
		}
	}
	if cfg != nil {
		if err := cl.SendConfig(cfg); err != nil {
			return nil, fmt.Errorf("start sandbox %s: %w", runID, err)
		}
	}
	mover, _ := cg.(cgroup.SelfMover)
	st := initStarter{sp: sp, mover: mover, dropGroups: m != nil && m.dropGroups}
	proc, err := st.startFallback(cmd, cached)
	if err != nil {
		return nil, launchFailure(runID, err, m != nil && os.Geteuid() != 0)
	}
	child.Close()
	cu.Release()
	return &launched{runID: runID, cg: cg, cl: cl, proc: proc, adopts: !confined}, nil
}

// initAttrs are the process attributes of a sandbox's init, decided from
// whether it is confined, its user namespace (m, nil for none) and the
// effective uid and gid of this process. It makes no system call.
func initAttrs(confined bool, m *idMapping, euid, egid int) *syscall.SysProcAttr {
	sys := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if !confined {
		// An init outside namespaces kills its commands' descendants
		// when its control socket closes, which this process's death
		// does; SIGKILL would leave them behind. SIGTERM it forwards.
		sys.Pdeathsig = syscall.SIGTERM
		return sys
	}
	// The namespaces every process-tier spec has (ConvertSpec refuses
	// one that says otherwise): a warm init is born before its plan.
	sys.Cloneflags = cloneFlags(specconv.Namespaces)
	if m == nil {
		if euid == 0 {
			// Root's supplementary groups are nothing to the init, which
			// has every capability until it drops them, and no command
			// may have them: it starts without any, rather than stop all
			// its threads to drop them (sbinit sets a command's own
			// groups, if any).
			sys.Credential = &syscall.Credential{Uid: 0, Gid: uint32(egid), Groups: []uint32{}}
		}
		return sys
	}
	// The init keeps its host identity (so it can execute the init from
	// the user's cache) and every capability of its namespace, as ambient
	// capabilities across the exec, until it has built the root (see
	// idMapping).
	sys.Cloneflags |= unix.CLONE_NEWUSER
	if !m.helper {
		sys.UidMappings = m.uids
		sys.GidMappings = m.gids
		sys.GidMappingsEnableSetgroups = false
	}
	sys.AmbientCaps = allCaps()
	return sys
}

// initCmd is the command that starts a sandbox's init with attributes sys,
// its control socket's end child as its fd 3. Its Path is set by
// setInitPath.
func initCmd(child *os.File, sys *syscall.SysProcAttr) *exec.Cmd {
	return &exec.Cmd{
		Args: []string{"sandboxed-init", sbinit.InitArg},
		// One processor for the Go runtime: the init does its work on
		// one locked thread and waits on the rest, and every thread the
		// runtime would start for more is one more to create, and to stop
		// each time the init changes its credentials on all of them. The
		// commands get their own environment (Command.Env).
		Env:        []string{"GOMAXPROCS=1"},
		ExtraFiles: []*os.File{child},
		// The init reports through the protocol; its stderr only matters
		// when it dies before that, and then it goes into the error.
		Stderr:      &tailBuffer{max: 4096},
		SysProcAttr: sys,
	}
}

// initStarter starts an init: through the spawner sp when there is one,
// else directly.
type initStarter struct {
	sp         *spawner
	mover      cgroup.SelfMover
	dropGroups bool
}

func (st initStarter) start(cmd *exec.Cmd) (*initProc, error) {
	if st.sp != nil {
		p, err := st.sp.start(cmd, st.mover, st.dropGroups)
		if !errors.Is(err, errSpawnerGone) {
			return p, err
		}
		// The request reached no spawner (the last one died between two
		// starts): once more, with a new one.
		if p, err = st.sp.start(cmd, st.mover, st.dropGroups); !errors.Is(err, errSpawnerGone) {
			return p, err
		}
	}
	return startDirect(cmd, st.mover, st.dropGroups)
}

// startFallback starts cmd; when its init is the cached one (cached) and
// would not run (a security module forbids executing from the cache,
// another build's gc removed it, ...), it starts it again from the sealed
// memory file, the init's other home.
func (st initStarter) startFallback(cmd *exec.Cmd, cached bool) (*initProc, error) {
	proc, err := st.start(cmd)
	if err == nil || !cached {
		return proc, err
	}
	f, oerr := initbin.Open()
	if oerr != nil {
		return nil, fmt.Errorf("%w (and from a memory file: %w)", err, oerr)
	}
	defer f.Close()
	first := err
	cmd = &exec.Cmd{Args: cmd.Args, Env: cmd.Env, ExtraFiles: cmd.ExtraFiles,
		Stderr: &tailBuffer{max: 4096}, SysProcAttr: cmd.SysProcAttr}
	closeMem, err := setInitPath(cmd, initbin.ExecPath(f))
	if err != nil {
		return nil, err
	}
	defer closeMem()
	if proc, err = st.start(cmd); err != nil {
		return nil, fmt.Errorf("%w (and from the cache: %w)", err, first)
	}
	return proc, nil
}

// launchFailure is the error of an init of run runID that did not start.
// An unprivileged user namespace (userns) refused with EPERM or EACCES is
// unsupported on this host, with the fix: a security module or a sysctl
// may forbid them even where the kernel has them.
func launchFailure(runID string, err error, userns bool) error {
	if userns && (errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)) {
		return &isolation.UnsupportedError{
			What: fmt.Sprintf("a user namespace for the sandbox (the kernel refused it: %v)", err),
			Fix:  "`sandboxed doctor` says why; where AppArmor restricts unprivileged user namespaces, " + cgroup.SetupFix() + " installs a profile for this binary",
		}
	}
	return fmt.Errorf("start sandbox %s: %w", runID, err)
}

// ready waits until the init, configured, reports it is ready, and
// returns the started sandbox of p. On error the init is destroyed.
func (l *launched) ready(ctx context.Context, p *isolation.Plan) (isolation.Sandbox, error) {
	if _, err := l.cl.WaitReady(ctx); err != nil {
		err = l.initFailed(err)
		l.destroy(ctx)
		return nil, fmt.Errorf("start sandbox %s: %w", l.runID, err)
	}
	sb := &sandbox{plan: p, cg: l.cg, cl: l.cl, proc: l.proc, adopts: l.adopts}
	if p.Observe {
		fd := l.cl.TakeListener()
		var err error
		if fd < 0 {
			err = fmt.Errorf("the init sent no watch listener: %w", ErrBadPlan)
		} else if sb.obs, err = startObserver(fd); err != nil {
			err = fmt.Errorf("observe: %w", err)
		}
		if err != nil {
			l.destroy(ctx)
			return nil, fmt.Errorf("start sandbox %s: %w", p.RunID, err)
		}
	}
	return sb, nil
}

// initFailed adds to err, an error of the init's protocol, what the init
// said on its stderr when it died before it could answer.
func (l *launched) initFailed(err error) error {
	if !errors.Is(err, sbinit.ErrInitGone) {
		return err
	}
	_ = l.proc.kill()
	<-l.proc.waited
	if tail := l.proc.stderr.String(); tail != "" {
		err = fmt.Errorf("%w: %s", err, tail)
	}
	return err
}

// destroy kills the init and everything in its cgroup, and removes the
// cgroup. It runs on a context of its own.
func (l *launched) destroy(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = l.proc.kill()
	<-l.proc.waited
	l.cl.Close()
	if l.cg != nil {
		_ = l.cg.Kill(cctx)
		_ = l.cg.Delete()
	}
	if l.adopts {
		killAdopted()
		releaseSubreaper()
		l.adopts = false
	}
}

// hasBinds reports whether s binds anything of the host (grants).
func hasBinds(s *sbinit.Setup) bool {
	if s == nil {
		return false
	}
	for _, m := range s.Mounts {
		if m.Source != "" {
			return true
		}
	}
	return false
}

// setInitPath makes exe the program cmd runs. An init in a memory file
// of this process (/proc/PID/fd/N) is passed to the child as one of its
// own descriptors and executed as /proc/self/fd/M: a child in a user
// namespace may not look into this process's descriptors. done closes
// this process's copy once the child started.
func setInitPath(cmd *exec.Cmd, exe string) (done func(), err error) {
	cmd.Path = exe
	rest, ok := strings.CutPrefix(exe, "/proc/"+strconv.Itoa(os.Getpid())+"/fd/")
	if !ok {
		return func() {}, nil
	}
	fd, err := strconv.Atoi(rest)
	if err != nil {
		return nil, fmt.Errorf("init path %s: %w", exe, err)
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, fmt.Errorf("pass the init's memory file: %w", err)
	}
	f := os.NewFile(uintptr(dup), "memfd:sandboxed-init")
	cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	cmd.Path = "/proc/self/fd/" + strconv.Itoa(2+len(cmd.ExtraFiles))
	return func() { f.Close() }, nil
}

// startInit starts cmd so that the init is inside the run's cgroup before
// it runs an instruction: on cgroup v2 it is cloned into it
// (CLONE_INTO_CGROUP, set up by the caller); on v1 (mover set) the
// starting thread moves itself into the cgroup, forks, and moves back.
// Moving another process would wait for an RCU grace period in the kernel;
// a thread moving itself does not.
//
// The starting thread is also the init's parent for Pdeathsig, which fires
// when that thread exits: it stays locked only while starting, and the
// runtime does not retire unlocked threads.
func startInit(cmd *exec.Cmd, mover cgroup.SelfMover, dropGroups bool) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if dropGroups {
			// The clone inherits this thread's credentials: it sheds its
			// supplementary groups for the start only.
			restore, err := sbinit.DropThreadGroups()
			if err != nil {
				runtime.UnlockOSThread()
				errc <- err
				return
			}
			defer func() {
				if restore() != nil {
					// A thread that lost its groups is retired with
					// this goroutine (still locked) rather than reused.
					return
				}
				runtime.UnlockOSThread()
			}()
			runtime.LockOSThread() // paired with the deferred unlock
		}
		if mover == nil {
			err := cmd.Start()
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		leave, stuck, err := mover.EnterSelf()
		if err != nil {
			if !stuck {
				runtime.UnlockOSThread()
			}
			// A stuck thread stays locked: it is retired with this
			// goroutine instead of running other code in the cgroup.
			errc <- err
			return
		}
		serr := cmd.Start()
		if err := leave(); err != nil {
			if serr == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
			errc <- err
			return
		}
		runtime.UnlockOSThread()
		if serr != nil {
			serr = fmt.Errorf("start sandbox init: %w", serr)
		}
		errc <- serr
	}()
	return <-errc
}

// initCacheDir is where the init binary is kept between runs; "" (no
// home) runs it from a memory file.
func initCacheDir() string {
	d, _ := xdg.CacheDir()
	return d
}

// initConfig is what the init needs of the plan: the spec as the tier's
// converter read it (not the spec itself, which costs a fresh process a
// millisecond to decode), and the egress socket, which is not the spec's.
func initConfig(p *isolation.Plan, conv *Converted) (*sbinit.Config, error) {
	setup := *conv.Setup
	setup.Mounts = append([]sbinit.Mount(nil), conv.Setup.Mounts...)
	if p.Egress != nil {
		if !filepath.IsAbs(p.Egress.ProxySocket) || filepath.Clean(p.Egress.ProxySocket) != p.Egress.ProxySocket {
			return nil, fmt.Errorf("egress proxy socket %q: not an absolute, clean path: %w", p.Egress.ProxySocket, ErrBadPlan)
		}
		setup.Mounts = append(setup.Mounts, sbinit.Mount{Source: p.Egress.ProxySocket, Destination: isolation.SandboxSocket, NoExec: true})
	}
	cfg := &sbinit.Config{
		RunID:          p.RunID,
		Setup:          &setup,
		BuildRoot:      true,
		DropPrivileges: true,
		NetworkUp:      true,
		TmpfsBytes:     conv.TmpfsBytes,
	}
	var err error
	if p.Observe {
		if cfg.Watch, err = watchProgram(); err != nil {
			return nil, fmt.Errorf("observe run: %w", err)
		}
		// An observed run changes nothing on the host: its read-only
		// grants take writes into a throwaway layer, so a tool that
		// writes where it reads runs on as it would with a write grant.
		for i := range setup.Mounts {
			if m := &setup.Mounts[i]; m.Source != "" && m.ReadOnly {
				m.Scratch, m.ReadOnly = true, false
			}
		}
	}
	cfg.Egress = sbinit.NewEgressRelay(p.Egress)
	minABI := 0
	if p.RequireLandlock {
		minABI = sbinit.LandlockFullABI
	}
	cfg.Landlock = sbinit.NewLandlock(cfg, minABI)
	return cfg, nil
}

// Landlock reports the Landlock ABI the sandbox's init enforced on itself
// and its commands (0: none; see sbinit.Landlock).
func (s *sandbox) Landlock() int { return s.cl.Landlock() }

type sandbox struct {
	plan *isolation.Plan
	cg   cgroup.Group
	cl   *sbinit.Client
	proc *initProc

	mu     sync.Mutex
	killed bool
	closed bool
	peak   int64
	final  *isolation.Stats // read just before the cgroup went away
	// obs records what an observed run touches (Plan.Observe).
	obs *observer
	// handed are the write grants handed to the tool for the run, handed
	// back by Close.
	handed *reown.Handed
	// adopts: see launched; Close ends it.
	adopts bool
}

// Exec runs cmd through the init.
func (s *sandbox) Exec(ctx context.Context, cmd isolation.Command, stdio isolation.Stdio) (isolation.Exit, error) {
	s.mu.Lock()
	gone := s.closed || s.killed
	s.mu.Unlock()
	if gone {
		return isolation.Exit{}, fmt.Errorf("exec in sandbox %s: killed or closed: %w", s.plan.RunID, isolation.ErrClosed)
	}
	exit, err := s.cl.Exec(ctx, cmd, stdio)
	if errors.Is(err, sbinit.ErrInitGone) && s.adopts {
		// An init killed outright killed nothing: what it started is
		// this process's now, to kill.
		killAdopted()
	}
	if errors.Is(err, sbinit.ErrInitGone) {
		s.mu.Lock()
		killed := s.killed
		s.mu.Unlock()
		if killed {
			// Kill took the whole sandbox down, the command with it.
			return isolation.Exit{Code: 128 + int(syscall.SIGKILL), Signal: int(syscall.SIGKILL)}, ctx.Err()
		}
		if st, serr := s.Stats(ctx); serr == nil && st.OOMKilled {
			// The OOM killer chose the init (memory no process owns,
			// such as a full /tmp, makes it the largest): the sandbox
			// and the command died of the memory limit.
			return isolation.Exit{Code: 128 + int(syscall.SIGKILL), Signal: int(syscall.SIGKILL)}, ctx.Err()
		}
		// The init's last words, if it said any before it died.
		t := time.NewTimer(time.Second)
		select {
		case <-s.proc.waited:
			if tail := s.proc.stderr.String(); tail != "" {
				err = fmt.Errorf("%w: %s", err, tail)
			}
		case <-t.C:
		}
		t.Stop()
	}
	return exit, err
}

// Kill sends SIGTERM to every process of the run (host pids, from the
// cgroup), waits up to grace for them to go, then kills the cgroup.
func (s *sandbox) Kill(ctx context.Context, grace time.Duration) error {
	s.mu.Lock()
	s.killed = true
	s.mu.Unlock()
	if s.cg == nil {
		// No cgroup (none tier without limits): the init signals what it
		// started, then the init itself goes.
		_ = s.cl.Signal(0, syscall.SIGTERM)
		t := time.NewTimer(grace)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		_ = s.cl.Signal(0, syscall.SIGKILL)
		return nil
	}
	_ = s.cg.Signal(syscall.SIGTERM)
	// The init forwards the SIGTERM and outlives it; wait for the rest.
	gctx, cancel := context.WithTimeout(ctx, grace)
	_ = waitEmpty(gctx, s.cg, s.proc.pid)
	cancel()
	if err := s.cg.Kill(ctx); err != nil {
		return fmt.Errorf("kill sandbox %s: %w", s.plan.RunID, err)
	}
	return nil
}

// waitEmpty waits until the cgroup has no process but except, or ctx ends.
func waitEmpty(ctx context.Context, cg cgroup.Group, except int) error {
	return cgroup.WaitEmpty(ctx, func() ([]int, error) {
		pids, err := cg.Procs()
		if err != nil {
			return nil, nil // gone, or unreadable: nothing left to wait for
		}
		return slices.DeleteFunc(pids, func(p int) bool { return p == except }), nil
	})
}

// Stats reads the cgroup's counters.
func (s *sandbox) Stats(ctx context.Context) (isolation.Stats, error) {
	st, err := s.counters(ctx)
	if err == nil && s.obs != nil {
		st.Accesses = s.obs.Accesses()
	}
	return st, err
}

// counters reads the cgroup's counters.
func (s *sandbox) counters(ctx context.Context) (isolation.Stats, error) {
	if s.cg == nil {
		return isolation.Stats{}, nil
	}
	s.mu.Lock()
	final := s.final
	s.mu.Unlock()
	if final != nil {
		return *final, nil
	}
	st, err := s.cg.Stats()
	if err != nil {
		return isolation.Stats{}, fmt.Errorf("stats of sandbox %s: %w", s.plan.RunID, err)
	}
	s.mu.Lock()
	if st.PeakMemoryBytes > s.peak {
		s.peak = st.PeakMemoryBytes
	}
	peak := s.peak
	s.mu.Unlock()
	return isolation.Stats{PeakMemoryBytes: peak, OOMKilled: st.OOMKilled, PidsLimitHit: st.PidsLimitHit}, nil
}

// Close ends the init (closing the control channel makes it kill
// everything), makes sure the cgroup is empty and removes it.
func (s *sandbox) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()

	// An init gone before its channel closes was killed outright.
	died := false
	select {
	case <-s.proc.waited:
		died = true
	default:
	}
	_ = s.cl.Close()
	t := time.NewTimer(time.Second)
	select {
	case <-s.proc.waited:
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
	var errs []error
	if s.cg != nil {
		if pids, err := s.cg.Procs(); err != nil || len(pids) > 0 {
			if err := s.cg.Kill(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	select {
	case <-s.proc.waited:
	case <-ctx.Done():
		_ = s.proc.kill()
		<-s.proc.waited
	}
	if s.adopts {
		// What an init killed outright left is here now. Only then: a
		// daemon of another child of this process (a credential helper's
		// agent) may have come here too, and is not the run's.
		if died {
			killAdopted()
		}
		releaseSubreaper()
		s.adopts = false
	}
	if s.obs != nil {
		s.obs.Close()
	}
	if s.cg != nil {
		// Stats stay readable after Close.
		if st, err := s.counters(ctx); err == nil {
			s.mu.Lock()
			s.final = &st
			s.mu.Unlock()
		}
		if err := s.cg.Delete(); err != nil {
			errs = append(errs, err)
		}
	}
	// The tool's processes are gone: what it holds in its grants goes
	// back to the user.
	if s.handed != nil {
		errs = append(errs, s.handed.Back())
		s.handed = nil
	}
	// Every mount of the run lives in its own mount namespace, gone with
	// its last process. Check the host's table anyway: a mount of the run
	// left here would outlive it, so it is detached and reported.
	if err := unmountLeftovers(s.plan.HostDir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close sandbox %s: %w", s.plan.RunID, err)
	}
	return nil
}

// unmountLeftovers detaches every host mount under dir (the run's host
// directory) and says which there were.
func unmountLeftovers(dir string) error {
	if dir == "" {
		return nil
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return fmt.Errorf("read the host's mount table: %w", err)
	}
	var left []string
	for _, m := range mounts {
		left = append(left, m.Mountpoint)
		_ = unix.Unmount(m.Mountpoint, unix.MNT_DETACH)
	}
	if len(left) > 0 {
		return fmt.Errorf("mounts of the run were left on the host (now detached): %s", strings.Join(left, ", "))
	}
	return nil
}

// GC kills and removes the cgroups of runs that are not live: not kept by
// keep, and abandoned. A run whose init still lives is not abandoned, even
// when keep does not know it: the init dies with its controller (control
// socket closed, parent-death signal), so a live init means another live
// controller, such as a second sandboxed on the same host. A cgroup younger
// than gcMinAge may belong to a run that is still starting.
func (b *Backend) GC(ctx context.Context, keep func(runID string) bool) ([]string, error) {
	f := b.features(ctx)
	if f.cgroups == nil {
		return nil, nil
	}
	return gcCgroups(ctx, f.cgroups, keep)
}

// gcMinAge protects cgroups of runs that are being started. A cgroup's
// age counts from when the kernel first showed its directory to anyone,
// so a first GC may only note it and a later one remove it.
var gcMinAge = 30 * time.Second

func gcCgroups(ctx context.Context, h *cgroup.Host, keep func(string) bool) ([]string, error) {
	ids, err := h.List()
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, id := range ids {
		if keep != nil && keep(id) {
			continue
		}
		cg, err := h.Load(id)
		if err != nil {
			continue
		}
		// Without a liveness answer, spare what may still be starting or
		// running; with one, a run that is not live is reaped at once (its
		// init outlives its controller only until it notices).
		if keep == nil {
			if age, err := h.Age(id); err != nil || age < gcMinAge {
				continue
			}
			if pids, err := cg.Procs(); err != nil || hasInit(pids) {
				continue
			}
		}
		if err := cg.Kill(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := cg.Delete(); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "cgroup "+cg.Path())
	}
	return removed, errors.Join(errs...)
}

// initCmdline is how a sandbox init shows in /proc/PID/cmdline.
var initCmdline = []byte("sandboxed-init\x00" + sbinit.InitArg + "\x00")

// hasInit reports whether one of pids is a sandbox init.
func hasInit(pids []int) bool {
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err == nil && bytes.HasPrefix(b, initCmdline) {
			return true
		}
	}
	return false
}

// tailBuffer keeps the first and the last max/2 bytes written to it: a
// Go runtime that dies says why first, then dumps its goroutines.
type tailBuffer struct {
	mu      sync.Mutex
	max     int
	head, b []byte
	cut     bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if room := t.max/2 - len(t.head); room > 0 {
		k := min(room, len(p))
		t.head = append(t.head, p[:k]...)
		p = p[k:]
	}
	t.b = append(t.b, p...)
	if len(t.b) > t.max/2 {
		t.b = t.b[len(t.b)-t.max/2:]
		t.cut = true
	}
	return n, nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	sep := ""
	if t.cut {
		sep = "\n...\n"
	}
	return strings.TrimSpace(string(t.head) + sep + string(t.b))
}
