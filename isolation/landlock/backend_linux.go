package landlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/internal/reown"
	"github.com/sandboxed-dev/sandboxed/internal/tier"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/isolation/seccomp"
)

// Backend is the landlock tier.
type Backend struct {
	// Exe is the binary executed as the init; empty means the init this
	// build carries (package initbin), else /proc/self/exe. It must call
	// sbinit.Main early.
	Exe string
	// ABI, when set, stands in for the kernel's Landlock ABI
	// (sbinit.LandlockABI) in Check: tests of the refusals.
	ABI func() int
	// Process, when set, starts the inits of warm sandboxes (Prestart)
	// through its spawner: a resident controller's process tier, whose
	// spawner saves the controller a fork of itself per sandbox. Nil: a
	// process-tier backend of its own, without one.
	Process *process.Backend
}

// New returns the landlock-tier backend.
func New() *Backend { return &Backend{} }

var _ isolation.Backend = (*Backend)(nil)

// Tier reports isolation.TierLandlock.
func (b *Backend) Tier() isolation.Tier { return isolation.TierLandlock }

// Check refuses a plan this host cannot enforce in this tier, with the
// reason and the way out. It reads the host and changes nothing.
func (b *Backend) Check(ctx context.Context, p *isolation.Plan) error {
	_, err := b.check(p)
	return err
}

// checked is what Check proved of a plan, for Start.
type checked struct {
	grants []grant
	setup  *sbinit.Setup // rlimits and the compiled seccomp filter
	root   bool          // sandboxed runs as root: the tool gets a uid of its own
}

func (b *Backend) check(p *isolation.Plan) (*checked, error) {
	if p == nil || p.Spec == nil || p.Spec.Process == nil {
		return nil, fmt.Errorf("check plan: no spec or process: %w", ErrBadPlan)
	}
	if p.Tier != isolation.TierLandlock {
		return nil, fmt.Errorf("check plan: tier %q: %w", p.Tier, ErrBadPlan)
	}
	if p.RunID == "" || strings.ContainsAny(p.RunID, "/\x00") {
		return nil, fmt.Errorf("check plan: run id %q: %w", p.RunID, ErrBadPlan)
	}
	if p.Observe {
		return nil, isolation.ObserveUnsupported(p.Tier)
	}
	if err := checkEgress(p.Egress); err != nil {
		return nil, err
	}
	if p.Privilege == privilege.Elevated {
		return nil, &isolation.UnsupportedError{What: "elevated in the landlock tier (without a user namespace, root in the sandbox would be root in the container)", Fix: "run it in the process or container tier"}
	}
	if !filepath.IsAbs(p.Scratch) || filepath.Clean(p.Scratch) != p.Scratch {
		return nil, fmt.Errorf("check plan: scratch directory %q is not an absolute, clean path: %w", p.Scratch, ErrBadPlan)
	}
	if p.Spec.Linux == nil || !hasSeccompRules(p.Spec.Linux.Seccomp, p.Egress != nil) {
		return nil, fmt.Errorf("check plan: its seccomp profile does not start with the landlock tier's rules (SeccompRules, network %t): %w", p.Egress != nil, ErrBadPlan)
	}
	if !seccomp.Supported() {
		return nil, &isolation.UnsupportedError{What: "seccomp filters", Fix: "use a kernel built with CONFIG_SECCOMP_FILTER"}
	}
	conv, err := ConvertSpec(p)
	if err != nil {
		return nil, err
	}
	if conv.RunID != p.RunID {
		return nil, fmt.Errorf("check plan: the spec is of run %q, the plan of %q: %w", conv.RunID, p.RunID, ErrBadPlan)
	}
	grants := conv.Grants
	abi := sbinit.LandlockABI()
	if b.ABI != nil {
		abi = b.ABI()
	}
	root := os.Geteuid() == 0
	if err := checkUser(p.Spec.Process.User, root, os.Getuid(), os.Getgid()); err != nil {
		return nil, err
	}
	if r := abiRefusal(abi, !root, p.AcceptGaps); r != nil {
		return nil, r.err()
	}
	for _, g := range grants {
		if err := checkGrant(g, root, grantOwner(p), holdsDir(p)); err != nil {
			return nil, err
		}
	}
	if err := checkExcepts(grants, p.Scratch); err != nil {
		return nil, err
	}
	return &checked{grants: grants, setup: conv.Setup, root: root}, nil
}

// checkEgress refuses the network of a plan this tier cannot give: the
// tool's connect() calls are supervised (sbinit.Connect), which reaches
// the run's proxy (its port, and the localhost grants' ports through its
// forwarding) and nothing else. The proxy's TLS termination for
// credentials and HTTP rules needs its CA in the tool's system trust
// bundle, which only a mount could put there.
func checkEgress(e *isolation.Egress) error {
	if e == nil {
		return nil
	}
	for _, port := range e.LocalhostPorts {
		if port < 1 || port > 65535 || port == e.ProxyPort {
			return fmt.Errorf("check plan: localhost port %d: %w", port, ErrBadPlan)
		}
	}
	if len(e.Credentials) > 0 || len(e.HTTP) > 0 || e.CABundle != "" {
		return &isolation.UnsupportedError{
			What: "credentials and HTTP rules in the landlock tier (the proxy terminates TLS for their hosts with a CA the tool must trust, and this tier cannot mount a trust bundle over the system's)",
			Fix:  "run the tool where namespaces can be made (the process or container tier), or without the credentials and HTTP rules",
		}
	}
	if e.ProxyPort < 1 || e.ProxyPort > 65535 || !filepath.IsAbs(e.ProxySocket) {
		return fmt.Errorf("check plan: egress proxy port %d, socket %q: %w", e.ProxyPort, e.ProxySocket, ErrBadPlan)
	}
	return nil
}

// abiRefusal is the refusal of a run on a kernel of Landlock ABI abi, nil
// when the tier can run it there: files need ABI 1; a tool that shares
// the invoking user's uid needs signal scoping (ABI 6) unless the gap is
// accepted. TCP rules (ABI 4) are not needed: without egress no socket
// can be made, and with it every connect() is the init's to answer
// (ABI 4 adds a second wall: the tool's own TCP connect and bind are
// refused by Landlock too).
func abiRefusal(abi int, sharedUID bool, accept []string) *refusal {
	if abi < 1 {
		return &refusal{what: "Landlock (this kernel has none: nothing would keep the tool from the container's files)",
			fix: "use Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK=y and landlock in the lsm= boot parameter, or run where namespaces can be made (the process tier)"}
	}
	if abi < 6 && sharedUID && !slices.Contains(accept, tier.GapSignals) {
		return &refusal{gap: tier.GapSignals,
			what: fmt.Sprintf("signal scoping for a tool running as your own uid (Landlock ABI 6; this kernel has ABI %d: the tool could signal your other processes)", abi),
			fix:  "use Linux 6.12 or later, run sandboxed as root (the tool then gets a uid of its own), or accept the gap in the policy (isolation.landlock-gaps: [" + tier.GapSignals + "])"}
	}
	return nil
}

// checkUser refuses a spec user this tier cannot run the tool as: as
// root (it can change the uid), anything but a uid and gid of the run's
// own (ToolID: never an account's, never 0); without root (it cannot), any
// but this process's own ids (uid, gid).
func checkUser(u specs.User, root bool, uid, gid int) error {
	switch {
	case root && (!IsToolID(u.UID) || u.GID != u.UID):
		return &isolation.UnsupportedError{
			What: fmt.Sprintf("uid %d, gid %d in the landlock tier as root (the tool runs as a uid and gid of the run's own, %d-%d, never an account's)", u.UID, u.GID, ToolIDBase, ToolIDBase+ToolIDCount-1),
			Fix:  "plan the run with sandbox.Plan, which gives it landlock.ToolID",
		}
	case !root && (int(u.UID) != uid || int(u.GID) != gid):
		return &isolation.UnsupportedError{
			What: fmt.Sprintf("uid %d, gid %d in the landlock tier without root (it cannot change the uid: the tool runs as yours, %d:%d)", u.UID, u.GID, uid, gid),
			Fix:  "plan the run with sandbox.Plan as this user, or run sandboxed as root (the tool then gets a uid of its own)",
		}
	}
	return nil
}

// grantOwner is whose files p's write grants hold (Plan.GrantOwner; root
// when the plan does not say).
func grantOwner(p *isolation.Plan) reown.Owner {
	if o := p.GrantOwner; o != nil {
		return reown.Owner{UID: int(o.UID), GID: int(o.GID)}
	}
	return reown.Owner{}
}

// holdsDir is where p's runs hold the grants they were handed: the
// runtime directory's grants folder; "" for none.
func holdsDir(p *isolation.Plan) string {
	if p.HostDir == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(p.HostDir), reown.HoldsDir)
}

// checkGrant refuses a grant the commands could not use as planned: a
// destination that is not the host path (nothing is mounted: the tool
// sees the host's tree), or, as root, a write grant the tool's own uid
// could not write even handed to it for the run: one that owner (the
// grants' owner) may not write, and others may not either. A grant that
// another run was handed (its hold in holds records it; that run may be
// live, its turn first, or killed, and the hand-over hands it back first)
// is judged as it was before that hand-over.
func checkGrant(g grant, root bool, owner reown.Owner, holds string) error {
	if g.dest != g.source {
		real, err := filepath.EvalSymlinks(g.dest)
		if err != nil || real != g.source {
			return &isolation.UnsupportedError{
				What: fmt.Sprintf("the grant of %s at %s (without mounts the tool sees host paths where they are)", g.source, g.dest),
				Fix:  "grant the path where it is on the host",
			}
		}
	}
	if !root || !g.write {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Stat(g.source, &st); err != nil {
		return fmt.Errorf("write grant %s: %w", g.source, err)
	}
	if rec := reown.Recorded(holds, g.source); rec != nil && rec.From == owner && int(st.Uid) == rec.To.UID && rec.Folder.Ino == st.Ino && rec.Folder.Dev == st.Dev {
		st.Uid, st.Mode = uint32(owner.UID), rec.Folder.Mode
	}
	if st.Mode&0o002 == 0 && (int(st.Uid) != owner.UID || st.Mode&0o200 == 0) {
		return &isolation.UnsupportedError{
			What: fmt.Sprintf("the write grant of %s in the landlock tier as root (the tool runs as an unprivileged uid of its own, handed what uid %d owns there for the run, and uid %d may not write there: mode %o, owner %d)", g.source, owner.UID, owner.UID, st.Mode&0o7777, st.Uid),
			Fix:  fmt.Sprintf("grant a directory uid %d may write, run the job as a non-root user (docker run --user UID, runAsUser), or run where namespaces can be made (the process tier)", owner.UID),
		}
	}
	return nil
}

// connectFilter is the supervised connect's filter
// (seccomp.ConnectProfile), compiled once and encoded for the init.
var connectFilter = sync.OnceValues(func() ([]byte, error) {
	prog, err := seccomp.Compile(seccomp.ConnectProfile())
	if err != nil {
		return nil, fmt.Errorf("compile the supervised connect's filter: %w", err)
	}
	return sbinit.EncodeProgram(prog), nil
})

// compiled caches the filter of each profile by its pointer (the planner
// shares one profile per privilege).
var compiled sync.Map

func compiledFilter(pr *specs.LinuxSeccomp) ([]bpf.RawInstruction, error) {
	if v, ok := compiled.Load(pr); ok {
		return v.([]bpf.RawInstruction), nil
	}
	prog, err := seccomp.Compile(pr)
	if err != nil {
		return nil, err
	}
	compiled.Store(pr, prog)
	return prog, nil
}

// Start starts the run's init, outside every confinement, and makes the
// run's scratch directory for the tool. On error nothing is left behind.
func (b *Backend) Start(ctx context.Context, p *isolation.Plan) (isolation.Sandbox, error) {
	c, err := b.check(p)
	if err != nil {
		return nil, err
	}
	host, err := process.OutsideCgroup(p)
	if err != nil {
		return nil, err
	}
	return startWith(p, c, host != nil, func(cfg *sbinit.Config) (isolation.Sandbox, error) {
		return process.StartOutside(ctx, p, b.Exe, host, cfg)
	})
}

// startWith makes the run's scratch directory and the init's config —
// the tool's uid, its confinement, and its limits as rlimits unless a
// cgroup holds them (inCgroup) — and starts the init with it by start. On
// error nothing is left behind.
func startWith(p *isolation.Plan, c *checked, inCgroup bool, start func(*sbinit.Config) (isolation.Sandbox, error)) (_ isolation.Sandbox, retErr error) {
	conf := &sbinit.Confine{
		Landlock: &sbinit.Landlock{Paths: commandPaths(c.grants, p.Scratch), MinABI: 1},
		Seccomp:  c.setup.Seccomp,
		Rlimits:  c.setup.Rlimits,
	}
	// The spec's ids (check: the run's own as root, else this process's).
	uid, gid := int(p.Spec.Process.User.UID), int(p.Spec.Process.User.GID)
	if c.root {
		if uidInUse(uid) {
			return nil, fmt.Errorf("start sandbox %s: uid %d, the run's own (landlock.ToolID), is in use by another process: run it again (another run has another uid)", p.RunID, uid)
		}
		conf.SetID, conf.UID, conf.GID = true, uint32(uid), uint32(gid)
	}
	if err := os.Mkdir(p.Scratch, 0o700); err != nil {
		return nil, fmt.Errorf("start sandbox %s: scratch directory: %w", p.RunID, err)
	}
	defer func() {
		if retErr != nil {
			_ = removeTree(p.Scratch)
		}
	}()
	if c.root {
		if err := os.Lchown(p.Scratch, uid, gid); err != nil {
			return nil, fmt.Errorf("start sandbox %s: scratch directory: %w", p.RunID, err)
		}
	}
	// The tool's uid is not the write grants' owner's: they are its for
	// the run, and come back in Close.
	var handed *reown.Handed
	if c.root {
		h, err := handGrants(p, c.grants, uid)
		if err != nil {
			return nil, fmt.Errorf("start sandbox %s: %w", p.RunID, err)
		}
		handed = h
		defer func() {
			if retErr != nil {
				_ = handed.Back()
			}
		}()
	}
	rl, err := process.OutsideRlimits(p, !c.root, inCgroup)
	if err != nil {
		return nil, err
	}
	if rl != nil {
		conf.Rlimits = mergeRlimits(conf.Rlimits, rl.Rlimits)
		conf.NprocLimit, conf.SharedUID = rl.NprocLimit, rl.SharedUID
	}
	cfg := &sbinit.Config{RunID: p.RunID, Setup: &sbinit.Setup{Cwd: p.Spec.Process.Cwd}, NewSession: true, KillTree: true, Confine: conf}
	if e := p.Egress; e != nil {
		filter, err := connectFilter()
		if err != nil {
			return nil, fmt.Errorf("start sandbox %s: %w", p.RunID, err)
		}
		cfg.Connect = &sbinit.Connect{Filter: filter, ProxyPort: e.ProxyPort, LocalhostPorts: e.LocalhostPorts, Socket: e.ProxySocket}
	}
	sb, err := start(cfg)
	if err != nil {
		return nil, err
	}
	return &sandbox{Sandbox: sb, scratch: p.Scratch, handed: handed}, nil
}

// handGrants hands the write grants among gs from their owner to the
// tool's uid for the run (reown.HandOver), holding each in the runtime
// directory's folder of holds.
func handGrants(p *isolation.Plan, gs []grant, uid int) (*reown.Handed, error) {
	var paths []string
	for _, g := range gs {
		if g.write {
			paths = append(paths, g.source)
		}
	}
	if len(paths) == 0 {
		return nil, nil
	}
	holds := holdsDir(p)
	// Each run's tool has a uid of its own here: a run sharing a grant
	// with another would find it handed to the other's uid, and neither
	// would hand the other's files back. Runs of one grant take turns.
	return reown.HandOverAlone(paths, grantOwner(p), reown.Owner{UID: uid, GID: uid}, holds)
}

// mergeRlimits is base with each of extra, which replaces a limit of the
// same resource.
func mergeRlimits(base, extra []sbinit.Rlimit) []sbinit.Rlimit {
	out := slices.DeleteFunc(slices.Clone(base), func(r sbinit.Rlimit) bool {
		return slices.ContainsFunc(extra, func(e sbinit.Rlimit) bool { return e.Resource == r.Resource })
	})
	return append(out, extra...)
}

// uidInUse reports whether a process this one can see runs as uid: the
// owner of /proc/PID is its effective uid (a stat each, where reading
// every status file would cost a run milliseconds).
func uidInUse(uid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range ents {
		if c := e.Name()[0]; c < '0' || c > '9' {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name(), &st) == nil && int(st.Uid) == uid {
			return true
		}
	}
	return false
}

// sandbox is a started run: the init's sandbox, and the scratch
// directory, removed once the init has killed every process of the run.
type sandbox struct {
	isolation.Sandbox
	scratch string
	// handed are the write grants handed to the tool's uid (as root).
	handed *reown.Handed
}

// scratchDirs are the scratch directories in this host's temporary
// directory, where ScratchDir puts a run's: /tmp when TMPDIR is not an
// absolute path.
func scratchDirs() []string {
	dirs, _ := filepath.Glob(filepath.Join(filepath.Dir(ScratchDir(os.TempDir(), "")), ScratchPrefix+"*"))
	return dirs
}

// Close ends the run, hands its write grants back and removes its
// scratch directory.
func (s *sandbox) Close(ctx context.Context) error {
	err := s.Sandbox.Close(ctx)
	err = errors.Join(err, s.handed.Back())
	if rerr := removeTree(s.scratch); rerr != nil {
		err = errors.Join(err, fmt.Errorf("remove scratch directory: %w", rerr))
	}
	return err
}

// removeTree removes dir and everything in it, making the directories the
// tool left unreadable or unwritable to their owner writable first. It
// follows no symlink: the directories are opened one by one beneath dir
// with O_NOFOLLOW, so a tool process that swaps a directory for a link to
// elsewhere while this runs gets nothing outside dir changed.
func removeTree(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	// Twice: a directory the first pass could not enter is writable now.
	for range 2 {
		_ = chmodDirs(unix.AT_FDCWD, filepath.Clean(dir), 0)
	}
	return os.RemoveAll(dir)
}

// maxRemoveDepth bounds chmodDirs's descent.
const maxRemoveDepth = 256

// chmodDirs makes the directory name (beneath the directory parent) and
// every directory under it rwx for its owner, opening each with
// O_NOFOLLOW; the mode is set through the descriptor's /proc/self/fd
// entry, which names the directory that was opened, never a link.
func chmodDirs(parent int, name string, depth int) error {
	if depth > maxRemoveDepth {
		return fmt.Errorf("%s: deeper than %d directories", name, maxRemoveDepth)
	}
	pfd, err := unix.Openat(parent, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	self := fmt.Sprintf("/proc/self/fd/%d", pfd)
	_ = unix.Chmod(self, 0o700)
	fd, err := unix.Open(self, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	entries, err := f.ReadDir(-1)
	for _, e := range entries {
		if e.Type().IsDir() {
			_ = chmodDirs(fd, e.Name(), depth+1)
		}
	}
	return err
}

// GC removes the cgroups of dead runs (shared with the process and none
// tiers, which name them alike) and the scratch directories that runs of
// a crashed controller left in this host's temporary directory. With a
// nil keep no scratch directory is removed: any may be a live run's.
func (b *Backend) GC(ctx context.Context, keep func(runID string) bool) ([]string, error) {
	removed, err := process.New().GC(ctx, keep)
	if keep == nil {
		return removed, err
	}
	for _, d := range scratchDirs() {
		id := strings.TrimPrefix(filepath.Base(d), ScratchPrefix)
		if !isolation.RunIDPattern.MatchString(id) || keep(id) {
			continue
		}
		if rerr := removeTree(d); rerr != nil {
			err = errors.Join(err, fmt.Errorf("remove scratch directory %s: %w", d, rerr))
			continue
		}
		removed = append(removed, "scratch directory "+d)
	}
	return removed, err
}
