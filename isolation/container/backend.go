package container

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/api/types/volume"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sandboxed-dev/sandboxed/images"
	"github.com/sandboxed-dev/sandboxed/internal/dockerapi"
	"github.com/sandboxed-dev/sandboxed/internal/hostsetup"
	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/internal/reown"
	"github.com/sandboxed-dev/sandboxed/internal/xdg"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/initbin"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
)

// engine is the part of the Docker client the backend uses. A hand-written
// fake implements it in the unit tests.
type engine interface {
	ContainerCreate(ctx context.Context, config *container.Config, hostConfig *container.HostConfig, networkingConfig *network.NetworkingConfig, platform *ocispec.Platform, containerName string) (container.CreateResponse, error)
	ContainerStart(ctx context.Context, containerID string, options container.StartOptions) error
	ContainerKill(ctx context.Context, containerID, signal string) error
	ContainerRemove(ctx context.Context, containerID string, options container.RemoveOptions) error
	ContainerUpdate(ctx context.Context, containerID string, updateConfig container.UpdateConfig) (container.UpdateResponse, error)
	ContainerInspect(ctx context.Context, containerID string) (container.InspectResponse, error)
	ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error)
	ImageInspect(ctx context.Context, ref string) (image.InspectResponse, error)
	Info(ctx context.Context) (system.Info, error)
	ServerVersion(ctx context.Context) (types.Version, error)
	ClientVersion() string
	DaemonHost() string
	// For an engine that cannot see this process's paths (copy.go).
	VolumeCreate(ctx context.Context, options volume.CreateOptions) (volume.Volume, error)
	VolumeRemove(ctx context.Context, volumeID string, force bool) error
	VolumeList(ctx context.Context, options volume.ListOptions) (volume.ListResponse, error)
	CopyToContainer(ctx context.Context, containerID, dstPath string, content io.Reader, options container.CopyToContainerOptions) error
	ContainerAttach(ctx context.Context, containerID string, options container.AttachOptions) (types.HijackedResponse, error)
}

// Backend makes container-tier sandboxes through the Docker Engine API.
// It is safe for concurrent use.
type Backend struct {
	api engine
	// initBinary is the static sandboxed binary bind-mounted as init.
	initBinary string
	// connect accepts the init's connection on ln and hands it the plan.
	connect connectFunc
	// gcStaged detaches the host's staged binds of runs keep says are
	// gone (gcStaged; tests with a fake engine replace it, so that they
	// never unmount what real runs on the host staged).
	gcStaged func(keep func(runID string) bool) ([]string, error)
	// await waits for a warm container's init to dial in (awaitInit;
	// tests with a fake engine replace it).
	await awaitFunc
	// stream speaks to the init of a run copied to an engine that cannot
	// see this process's paths (streamInit; tests replace it).
	stream streamFunc

	warmMu    sync.Mutex
	templates map[string][]byte // warm key -> its warmTemplate, as JSON
	imageIDs  map[string]string // image name -> the id Check last found

	ownClient bool // Close closes api

	infoMu sync.Mutex
	info   *system.Info // the engine's info, once it answered

	binOnce sync.Once
	binErr  error

	// outside is the engine's view when it runs this process's own
	// container (engineOutside), found once.
	outsideOnce sync.Once
	outside     *outside
	outsideErr  error
	// vm is the engine's view when it runs its containers in a VM
	// (engineVM), found once it answered.
	vmMu    sync.Mutex
	vmKnown bool
	vm      *outside
}

// Option configures a Backend.
type Option func(*Backend)

// WithInitBinary sets the static binary that runs as the container's init;
// the default is the init this build carries (see checkInitBinary), else
// os.Executable(). It must call sbinit's entry point.
func WithInitBinary(path string) Option { return func(b *Backend) { b.initBinary = path } }

// WithClient makes the backend use c instead of a client configured from
// DOCKER_HOST. The caller keeps ownership of c.
func WithClient(c *dockerapi.Client) Option { return func(b *Backend) { b.api = c } }

// New returns a container backend talking to the engine at DOCKER_HOST (the
// default socket when unset), negotiating the API version. It makes no
// request: an engine that is down shows in Check and Start.
func New(opts ...Option) (*Backend, error) {
	if err := platformUnsupported(); err != nil {
		return nil, err
	}
	b := &Backend{connect: connectInit, gcStaged: gcStaged, await: awaitInit, stream: streamInit}
	for _, o := range opts {
		o(b)
	}
	if b.api == nil {
		c, err := images.Connect()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", isolation.ErrUnsupported, err)
		}
		b.api, b.ownClient = c, true
	}
	return b, nil
}

// Tier reports isolation.TierContainer.
func (b *Backend) Tier() isolation.Tier { return isolation.TierContainer }

// Close releases the backend's engine connection, unless WithClient gave
// it.
func (b *Backend) Close() error {
	if c, ok := b.api.(io.Closer); ok && b.ownClient {
		return c.Close()
	}
	return nil
}

// engineInfo returns the engine's info. The first answer is kept for the
// Backend's life (runtimes and security options change only with a daemon
// restart); a failure is not, so an engine started later is seen.
func (b *Backend) engineInfo(ctx context.Context) (system.Info, error) {
	b.infoMu.Lock()
	defer b.infoMu.Unlock()
	if b.info != nil {
		return *b.info, nil
	}
	info, err := b.api.Info(ctx)
	if err != nil {
		return system.Info{}, b.engineErr("ask the Docker engine", err)
	}
	b.info = &info
	return info, nil
}

// engineErr turns an engine error into one that says what to do. An engine
// that cannot be reached is ErrUnsupported: the run is refused, never run
// in a weaker tier.
func (b *Backend) engineErr(op string, err error) error {
	var ce *dockerapi.ConnectionError
	if errors.As(err, &ce) {
		what := "is unreachable"
		if ce.Denied() {
			what = "does not let this user in"
		}
		return fmt.Errorf("%s: %w", op, &isolation.UnsupportedError{
			What: "the container tier: the Docker engine at " + b.api.DaemonHost() + " " + what,
			Fix:  dockerapi.EngineFix(err),
		})
	}
	return fmt.Errorf("%s: %w", op, err)
}

// imageErr is the error for a missing runner image.
func imageErr(name string, err error) error {
	if name == "" {
		name = images.DefaultImage
	}
	return fmt.Errorf("%w: %w", &isolation.UnsupportedError{
		What: "the container tier: image " + name + " is missing",
		Fix:  "run: " + images.BuildCommandFor(name),
	}, images.ErrNotFound)
}

// checkLocal refuses an engine on another machine: bind sources, the init
// binary and the control socket are paths of this host.
func (b *Backend) checkLocal() error {
	if h := b.api.DaemonHost(); !strings.HasPrefix(h, "unix://") {
		return &isolation.UnsupportedError{
			What: "the container tier with the Docker engine at " + h,
			Fix:  "use a local engine on a Unix socket (unset DOCKER_HOST or set it to unix:///var/run/docker.sock): mounts and the init's socket are paths of this host",
		}
	}
	return nil
}

// checkOutside plans, when the engine runs this process's own container
// (engineOutside), the copy of the bind sources in hc it cannot see at
// the same paths (planCopy); nil when it sees them all, or shares this
// process's paths. A write grant it cannot see is refused.
func (b *Backend) checkOutside(ctx context.Context, hc *container.HostConfig, lstat func(string) (os.FileInfo, error)) (*copyPlan, error) {
	o := b.engineOutside(ctx)
	if b.outsideErr != nil {
		return nil, b.outsideErr
	}
	if o == nil {
		return nil, nil
	}
	visible := o.visible
	if o.vm != nil {
		// No socket crosses the VM's shares, even one in a share.
		visible = func(src string) bool {
			return !slices.ContainsFunc(hc.Mounts, func(m mount.Mount) bool { return m.Source == src && streamed(m) }) && o.vm.visible(src)
		}
	}
	return planCopy(hc, visible, lstat)
}

// checkInitBinary finds the init binary, unless WithInitBinary named it:
// the small init this build carries, kept in the user's cache directory
// (package initbin), else (also under SELinux) this executable. It refuses one that is not a
// static ELF: it must run in any image. Every use of initBinary comes
// after it.
func (b *Backend) checkInitBinary() error {
	b.binOnce.Do(func() {
		if b.initBinary == "" && initbin.Embedded() && !selinuxEnforcing() {
			if dir, err := xdg.CacheDir(); err == nil {
				b.initBinary, _ = initbin.Cached(dir)
			}
		}
		if b.initBinary == "" {
			exe, err := os.Executable()
			if err != nil {
				b.binErr = fmt.Errorf("find the sandboxed binary: %w", err)
				return
			}
			b.initBinary = exe
		}
		f, err := elf.Open(b.initBinary)
		if err != nil {
			b.binErr = fmt.Errorf("check init binary %s: %w: %w", b.initBinary, isolation.ErrUnsupported, err)
			return
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				b.binErr = &isolation.UnsupportedError{
					What: "the container tier: " + b.initBinary + " is dynamically linked",
					Fix:  "build sandboxed with CGO_ENABLED=0 so it runs inside any image",
				}
				return
			}
		}
	})
	return b.binErr
}

// selinuxEnforcing reports whether SELinux enforces its policy here. A
// container's domain may not execute a file from a home directory's cache,
// so the container tier then mounts the sandboxed binary itself (installed
// where programs live, and labelled so) as the init.
func selinuxEnforcing() bool {
	b, err := os.ReadFile("/sys/fs/selinux/enforce")
	return err == nil && strings.TrimSpace(string(b)) == "1"
}

// Check refuses a plan this engine cannot enforce in full: an engine that
// is down, a missing image or runtime, an elevated run without user
// namespace remapping, seccomp unavailable. It creates nothing of the run
// (the first call may write the init into the cache; see
// checkInitBinary).
func (b *Backend) Check(ctx context.Context, p *isolation.Plan) error {
	if p == nil {
		return fmt.Errorf("check plan: %w: no plan", isolation.ErrUnsupported)
	}
	if p.Observe {
		return isolation.ObserveUnsupported(p.Tier)
	}
	// Check needs no host directory (a plan checked on its own may have
	// none); translate only needs it absolute.
	cp := *p
	if cp.HostDir == "" {
		cp.HostDir = "/"
	}
	if err := b.checkInitBinary(); err != nil {
		return err
	}
	if err := checkReducedGrants(p); err != nil {
		return err
	}
	_, hc, err := translate(&cp, b.host(nil))
	if err != nil {
		return err
	}
	if err := b.checkLocal(); err != nil {
		return err
	}
	if _, err := b.checkOutside(ctx, hc, nil); err != nil {
		return err
	}
	// The engine's info costs milliseconds: ask it only when the plan
	// needs more than an explicit seccomp profile (the engine refuses to
	// create a container with one it cannot load), or when the engine's
	// own default profile must be on.
	if p.Runtime != "" || p.Privilege == privilege.Elevated || p.Spec.Linux == nil || p.Spec.Linux.Seccomp == nil || rootsOwnID(p) {
		info, err := b.engineInfo(ctx)
		if err != nil {
			return err
		}
		if err := checkInfo(info, p); err != nil {
			return err
		}
	}
	if err := b.checkUser(p); err != nil {
		return err
	}
	img, err := b.api.ImageInspect(ctx, imageOf(p))
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return imageErr(imageOf(p), err)
		}
		return b.engineErr("inspect image "+imageOf(p), err)
	}
	b.sawImage(imageOf(p), img.ID)
	return nil
}

// checkInfo checks what the plan needs of the engine's features.
func checkInfo(info system.Info, p *isolation.Plan) error {
	if p.Runtime != "" {
		if _, ok := info.Runtimes[p.Runtime]; !ok {
			return &isolation.UnsupportedError{
				What: "runtime " + p.Runtime + " (the engine has " + strings.Join(runtimeNames(info), ", ") + ")",
				Fix:  "install it and register it in /etc/docker/daemon.json (for runsc: sudo sandboxed setup --runtime runsc), or choose another runtime",
			}
		}
		if missing := hostsetup.MissingRuntimeArgs(p.Runtime, info.Runtimes[p.Runtime].Args); len(missing) > 0 {
			return &isolation.UnsupportedError{
				What: "runtime " + p.Runtime + " registered without " + strings.Join(missing, " ") + " (the egress bridge needs host Unix sockets; without --oci-seccomp gVisor ignores the plan's seccomp filter)",
				Fix:  "add them to its runtimeArgs in /etc/docker/daemon.json and reload dockerd, or remove the entry and run: sudo sandboxed setup --runtime " + p.Runtime,
			}
		}
	}
	if !hasSecOpt(info, "seccomp") && p.Runtime != "runsc" {
		return &isolation.UnsupportedError{What: "seccomp in the Docker engine", Fix: "use an engine built with seccomp support"}
	}
	if p.Privilege == privilege.Elevated && !hasSecOpt(info, "userns") && p.Runtime != "runsc" {
		return &isolation.UnsupportedError{
			What: "an elevated run in a container: root there would be host root",
			Fix:  `enable user namespace remapping ("userns-remap": "default" in /etc/docker/daemon.json) and restart Docker, or use the runsc runtime`,
		}
	}
	return nil
}

func hasSecOpt(info system.Info, name string) bool {
	for _, o := range info.SecurityOptions {
		if o == "name="+name || strings.HasPrefix(o, "name="+name+",") {
			return true
		}
	}
	return false
}

func runtimeNames(info system.Info) []string {
	var out []string
	for n := range info.Runtimes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func imageOf(p *isolation.Plan) string {
	if p.Image == "" {
		return images.DefaultImage
	}
	return p.Image
}

func (b *Backend) host(lstat func(string) (os.FileInfo, error)) host {
	return host{InitBinary: b.initBinary, lstat: lstat}
}

// checkUser refuses a spec user this tier cannot run as the spec says.
// As root, a same-as-user tool at uid 0 where uid 0 in the container is
// host uid 0 (the engine does not remap user namespaces, as far as this
// backend has asked it: Check asks first): the planner gives root's tools
// the id reserved for sandboxed (process.ReservedID), as the process tier
// maps them, so that no tool is host root. And that reserved id where the
// engine remaps user namespaces, whose range does not map it.
func (b *Backend) checkUser(p *isolation.Plan) error {
	if !rootSameAsUser(p) {
		return nil
	}
	id, err := process.ReservedID()
	return userRefusal(p.Spec.Process.User.UID, b.remaps(), id, err)
}

// userRefusal is checkUser's refusal of root's same-as-user tool at uid,
// nil when it may run so: reserved is the id reserved for sandboxed, or
// reservedErr why this host has none.
func userRefusal(uid uint32, remaps bool, reserved int, reservedErr error) error {
	switch {
	case uid == 0 && !remaps && reservedErr != nil:
		return reservedErr
	case uid == 0 && !remaps:
		return &isolation.UnsupportedError{
			What: "uid 0 for a same-as-user tool in a container of an engine that does not remap user namespaces (it would be host root)",
			Fix:  fmt.Sprintf("plan the run with sandbox.Plan, which gives root's tools the id reserved for sandboxed (%d)", reserved),
		}
	case remaps && reservedErr == nil && int(uid) == reserved:
		return &isolation.UnsupportedError{
			What: fmt.Sprintf("uid %d, the id reserved for root's tools, in a container of an engine that remaps user namespaces (its range does not map that id)", uid),
			Fix:  "run the tool as reduced (execution-privilege: reduced), run sandboxed through sudo from your own account (the tool then runs as you), or use the process tier",
		}
	}
	return nil
}

// remaps reports whether the engine remaps user namespaces, as far as
// this backend has asked it (Check asks before a run of root's
// same-as-user tool).
func (b *Backend) remaps() bool {
	b.infoMu.Lock()
	defer b.infoMu.Unlock()
	return b.info != nil && hasSecOpt(*b.info, "userns")
}

// checkReducedGrants refuses a reduced run whose tool could not write a
// write grant of its (without root this tier cannot hand one to it), with
// the uid that needs access and the fix.
func checkReducedGrants(p *isolation.Plan) error {
	for _, g := range isolation.ReducedGrantAccess(p, os.Geteuid(), os.Stat) {
		if !g.Writable {
			return &isolation.UnsupportedError{What: "a write grant its reduced tool can write (" + g.Text + ")", Fix: g.Fix}
		}
	}
	return nil
}

// rootSameAsUser reports whether p runs a same-as-user tool of root's:
// sandboxed runs as root (its tools' user is the plan's, the reserved id
// without sudo; see checkUser).
func rootSameAsUser(p *isolation.Plan) bool {
	return p != nil && os.Geteuid() == 0 && (p.Privilege == privilege.SameAsUser || p.Privilege == "") &&
		p.Spec != nil && p.Spec.Process != nil
}

// rootsOwnID reports whether p runs root's same-as-user tool as uid 0 or
// as the id reserved for sandboxed: whether it may run so depends on the
// engine's user namespace remapping (checkUser).
func rootsOwnID(p *isolation.Plan) bool {
	if !rootSameAsUser(p) {
		return false
	}
	uid := p.Spec.Process.User.UID
	id, err := process.ReservedID()
	return uid == 0 || (err == nil && int(uid) == id)
}

// handOverIDs are the ids a run's write grants are handed from (their
// owner, Plan.GrantOwner) and to (the uid the tool runs as) for the run,
// nil when the tool writes as their owner or this process cannot hand
// them over: root's same-as-user tool runs as the reserved id (the spec's
// user, checkUser); a reduced tool as nobody, while the grants are the
// invoking user's. Both need root and an engine that does not remap user
// namespaces.
func (b *Backend) handOverIDs(p *isolation.Plan) (from, to *hostsetup.Owner) {
	if os.Geteuid() != 0 || b.remaps() || p == nil || p.Spec == nil || p.Spec.Process == nil {
		return nil, nil
	}
	switch p.Privilege {
	case privilege.SameAsUser, "":
		u := p.Spec.Process.User
		to = &hostsetup.Owner{UID: int(u.UID), GID: int(u.GID)}
	case privilege.Reduced:
		to = &hostsetup.Owner{UID: privilege.NobodyID, GID: privilege.NobodyID}
	default:
		return nil, nil
	}
	from = &hostsetup.Owner{}
	if g := p.GrantOwner; g != nil {
		from = &hostsetup.Owner{UID: int(g.UID), GID: int(g.GID)}
	}
	if *from == *to {
		return nil, nil
	}
	return from, to
}

// grantHolds is where p's runs hold the grants they were handed: the
// runtime directory's grants folder.
func grantHolds(p *isolation.Plan) string {
	if p.HostDir == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(p.HostDir), hostsetup.GrantHoldsDir)
}

// handOver gives the write grants among ms (the container's mounts, their
// sources staged) from from to to for the run (reown.HandOver), holding
// each in holds; Close hands them back. origins name the grant each
// staged source is a bind of, where gc hands it back after a crash.
func handOver(ms []mount.Mount, ours func(string) bool, from, to *hostsetup.Owner, holds string, origins map[string]string) (*reown.Handed, error) {
	var paths []string
	for _, m := range ms {
		if m.Type == mount.TypeBind && !m.ReadOnly && !ours(m.Source) {
			paths = append(paths, m.Source)
		}
	}
	return reown.HandOver(paths, *from, *to, holds, reown.Via{Origins: origins})
}

// ourSource reports whether a bind source is sandboxed's own (the init
// binary, a socket in the run's host directory) rather than a grant (the
// grants' staged sources are in the host directory's staging directory).
func ourSource(src, initBinary, hostDir string) bool {
	return src == initBinary || (strings.HasPrefix(src, hostDir+"/") && !strings.HasPrefix(src, hostDir+"/"+stagingDirName+"/"))
}

// Start creates and starts the run's container with the init as its
// entrypoint, and waits until the init has connected and taken the plan.
// On error nothing is left behind. Plan.HostDir must exist.
func (b *Backend) Start(ctx context.Context, p *isolation.Plan) (_ isolation.Sandbox, retErr error) {
	if err := b.checkInitBinary(); err != nil {
		return nil, err
	}
	if err := b.checkUser(p); err != nil {
		return nil, err
	}
	if err := checkReducedGrants(p); err != nil {
		return nil, err
	}
	cfg, hc, err := translate(p, b.host(os.Lstat))
	if err != nil {
		return nil, err
	}
	if err := b.checkLocal(); err != nil {
		return nil, err
	}
	copied, err := b.checkOutside(ctx, hc, os.Lstat)
	if err != nil {
		return nil, err
	}
	// An engine outside this container cannot see mounts made in it, nor
	// can its pids be read here (see outside).
	inside := b.engineOutside(ctx) == nil
	if p.Privilege == privilege.Elevated || p.Runtime != "" {
		info, err := b.engineInfo(ctx)
		if err != nil {
			return nil, err
		}
		if err := checkInfo(info, p); err != nil {
			return nil, err
		}
	}

	// The grants' sources are pinned, and as root staged under the run's
	// host directory; the init binary and the control socket are
	// sandboxed's own.
	pins, staged, err := pinBinds(hc.Mounts, func(src string) bool {
		return src == b.initBinary || strings.HasPrefix(src, p.HostDir+"/")
	}, p.HostDir, os.Geteuid() == 0 && inside)
	if err != nil {
		return nil, err
	}

	s := &sandbox{api: b.api, plan: p, name: containerName(p.RunID), staged: staged}
	defer func() {
		if retErr != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = s.Close(cctx)
		}
	}()
	if from, to := b.handOverIDs(p); to != nil {
		// The tool does not run as its write grants' owner: they are its
		// uid's for the run and come back to their owner in Close.
		origins := map[string]string{}
		for i, st := range staged {
			origins[st] = pins[i].source
		}
		s.handed, err = handOver(hc.Mounts, func(src string) bool { return ourSource(src, b.initBinary, p.HostDir) }, from, to, grantHolds(p), origins)
		if err != nil {
			return nil, err
		}
	}
	if copied != nil {
		if err := b.launchCopied(ctx, s, cfg, hc, p, copied); err != nil {
			return nil, err
		}
	} else {
		alive, err := b.launch(ctx, s, cfg, hc, p.HostDir, p.Runtime)
		if err != nil {
			return nil, err
		}
		if s.init, err = b.connect(ctx, s.ln, p, alive); err != nil {
			return nil, fmt.Errorf("start init in container %s: %w", s.name, err)
		}
	}
	// Under runsc the container's files are not visible through the host's
	// /proc/PID/root; the staging mounts, made from descriptors opened
	// without following symlinks, stand in for the check there.
	if p.Runtime == "runsc" || !inside {
		pins = nil
	}
	if err := b.verifyStarted(ctx, s.id, pins); err != nil {
		return nil, err
	}
	return s, nil
}

// launch listens on the control socket in hostDir, then creates and
// starts s's container from cfg and hc. It returns the check that the
// container still runs, for the wait on its init. What it made is s's, for
// s.Close, even on error.
func (b *Backend) launch(ctx context.Context, s *sandbox, cfg *container.Config, hc *container.HostConfig, hostDir, runtime string) (alive func(context.Context) error, err error) {
	sock := filepath.Join(hostDir, controlSocketName)
	_ = os.Remove(sock) // a leftover of a crashed run with this id
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on control socket %s: %w", sock, err)
	}
	ln.SetUnlinkOnClose(true)
	s.ln = ln
	// Any uid inside may dial it; HostDir (0700) keeps host users out.
	if err := os.Chmod(sock, 0o666); err != nil {
		return nil, fmt.Errorf("open control socket %s: %w", sock, err)
	}

	if err := b.create(ctx, s, cfg, hc); err != nil {
		return nil, err
	}
	if err := b.api.ContainerStart(ctx, s.id, container.StartOptions{}); err != nil {
		return nil, b.engineErr("start container "+s.name, err)
	}
	return func(ctx context.Context) error {
		ins, err := b.api.ContainerInspect(ctx, s.id)
		if err != nil {
			return b.engineErr("inspect container "+s.name, err)
		}
		if ins.State != nil && !ins.State.Running {
			hint := "check that " + b.initBinary + " is the static sandboxed binary and runs in image " + cfg.Image
			if runtime == "runsc" {
				hint = "runsc must let the sandbox dial host Unix sockets: add --host-uds=open to its runtimeArgs in /etc/docker/daemon.json"
			}
			return fmt.Errorf("%w: container %s exited (code %d%s) before its init connected: %s",
				isolation.ErrUnsupported, s.name, ins.State.ExitCode, suffix(ins.State.Error), hint)
		}
		return nil
	}, nil
}

// create creates s's container from cfg and hc.
func (b *Backend) create(ctx context.Context, s *sandbox, cfg *container.Config, hc *container.HostConfig) error {
	// From here Close removes the container by name even when the answer
	// to create was lost (a cancelled context after the engine made it).
	s.ref = s.name
	created, err := b.api.ContainerCreate(ctx, cfg, hc, nil, nil, s.name)
	if err != nil {
		switch {
		case cerrdefs.IsNotFound(err):
			return imageErr(cfg.Image, err)
		case cerrdefs.IsConflict(err):
			return fmt.Errorf("create container %s: %w (a container of run %s exists: run sandboxed gc)", s.name, err, cfg.Labels[isolation.AnnotationRunID])
		}
		return b.engineErr("create container "+s.name, err)
	}
	s.id, s.ref = created.ID, created.ID
	return nil
}

// GC removes containers labelled with a run id for which keep is false,
// and returns their names.
//
// keep knows the runs of one state directory only, so GC also spares what
// is plainly in use by another controller: a running container (its init
// exits as soon as its controller's end of the control socket closes, so a
// crashed controller leaves an exited container) unless it is older than
// gcRunningAfter, and a container just created and not yet started.
func (b *Backend) GC(ctx context.Context, keep func(runID string) bool) ([]string, error) {
	list, err := b.api.ContainerList(ctx, container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", isolation.AnnotationRunID)),
	})
	if err != nil {
		return nil, b.engineErr("list containers", err)
	}
	var removed []string
	var errs []error
	now := time.Now()
	left := map[string]bool{} // runs with a container spared
	for _, c := range list {
		run := c.Labels[isolation.AnnotationRunID]
		if keep != nil && keep(run) {
			continue
		}
		// Without a liveness answer, spare containers that may belong to
		// runs in progress; with one, a run that is not live is reaped.
		if keep == nil && !reapable(c, now) {
			left[run] = true
			continue
		}
		name := c.ID
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		if err := removeContainer(ctx, b.api, c.ID); err != nil {
			left[run] = true
			errs = append(errs, fmt.Errorf("remove container %s: %w", name, err))
			continue
		}
		removed = append(removed, "container "+name+" (run "+run+")")
	}
	// The volumes of copied runs, once their containers are gone.
	vols, err := b.gcVolumes(ctx, keep, left)
	removed = append(removed, vols...)
	errs = append(errs, err)
	// Staged binds of runs that are gone, once their containers are.
	reaped, err := b.gcStaged(keep)
	removed = append(removed, reaped...)
	errs = append(errs, err)
	return removed, errors.Join(errs...)
}

// GC's grace periods; see GC.
const (
	gcRunningAfter = time.Hour
	gcCreatedGrace = time.Minute
)

// reapable reports whether GC may remove the container c of a run that is
// not live in this controller's view.
func reapable(c container.Summary, now time.Time) bool {
	age := now.Sub(time.Unix(c.Created, 0))
	switch c.State {
	case "running", "paused", "restarting":
		return age > gcRunningAfter
	case "created":
		return age > gcCreatedGrace
	}
	return true
}

// suffix formats an optional engine message after a comma.
func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ", " + msg
}

// removeContainer force-removes a container with its volumes and returns
// once it is gone. A removal the engine has in progress already (its own
// auto-remove, or another caller's) is waited for, not reported.
func removeContainer(ctx context.Context, api engine, id string) error {
	err := api.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err == nil || cerrdefs.IsNotFound(err) {
		return nil
	}
	if !cerrdefs.IsConflict(err) {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if _, ierr := api.ContainerInspect(ctx, id); cerrdefs.IsNotFound(ierr) {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return err
}
