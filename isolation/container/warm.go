package container

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
)

// Warm containers (isolation.Prestarter).
//
// A warm container is created and started with everything a container
// fixes at start: image (by id), runtime, user, capabilities, security
// options and seccomp profile, masked and read-only paths, rlimits,
// hostname, the tmpfs mounts and their sizes, no network, a read-only
// root, the init and its control socket. Its init dials in and waits for
// its configuration. Nothing of a run is in it: no environment (commands
// carry theirs), no grant, no egress socket, and the idle floor of
// limits (warmMemoryFloor, warmPidsFloor, no cpu quota).
//
// Grants and the egress socket reach it through mount propagation. Every
// bind of the plan is, in the warm container, a bind of an empty
// placeholder (directory or file, like the grant) under
// HostDir/.sandboxed-binds, a private shared mount of its own, made with
// rslave propagation at the grant's target. Claim stages each grant's
// source on its placeholder exactly as a cold Start stages it (opened
// without following symlinks, open_tree + move_mount, read-only when the
// grant is), so the mount propagates onto the container's placeholder;
// the staged mount is then made private, which cuts the container's copy
// loose from the host. Claim then checks through /proc/PID/root that each
// target is the pinned file, sets the run's memory, swap, pids and cpu
// limits (ContainerUpdate), and hands the init the run's configuration.
//
// What the tool sees differs from a cold start only in the mount table:
// under each grant lies the (empty, covered) placeholder mount. Its
// mounts' flags, capabilities, seccomp filter, no_new_privs, user, /proc
// masks and read-only root are the same.
//
// Staging needs root, so without root a plan with grants or egress starts
// cold; so does every plan on runsc (its gofer serves the binds from what
// it opened at start: mounts propagated later are not relied on to reach
// the sandbox).

// The idle floor of a warm container's limits, until a run claims it.
const (
	warmMemoryFloor = 32 << 20
	warmPidsFloor   = 32
)

// warmTemplate is what a warm key names: the container's configuration
// without anything of a run (see WarmKey).
type warmTemplate struct {
	Config     *container.Config     `json:"config"`
	HostConfig *container.HostConfig `json:"host_config"`
	// Placeholders are the indexes in HostConfig.Mounts of the binds
	// made at claim, and whether each is a directory.
	Placeholders []placeholder       `json:"placeholders"`
	Runtime      string              `json:"runtime"`
	Privilege    privilege.Privilege `json:"privilege"`
}

type placeholder struct {
	Mount int  `json:"mount"`
	Dir   bool `json:"dir"`
}

// WarmKey names the warm containers that can serve p: everything of its
// container's configuration but the environment, working directory, bind
// sources, egress socket and limits (see warmTemplate). ok is false for a
// plan a warm container cannot serve exactly: a runsc runtime, or grants
// or egress without root (staging needs it). The Backend remembers the
// configuration of each key it returned, for Prestart; nothing outside it
// changes.
func (b *Backend) WarmKey(p *isolation.Plan) (string, bool) {
	if b.checkUser(p) != nil || b.engineOutside(context.Background()) != nil {
		// Warm containers' grants are staged: not with an engine outside.
		return "", false
	}
	t, err := warmTemplateOf(p)
	if err != nil {
		return "", false
	}
	if len(t.Placeholders) > 0 && os.Geteuid() != 0 {
		return "", false
	}
	js, err := json.Marshal(t)
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(js)
	runtime := p.Runtime
	if runtime == "" {
		runtime = "default"
	}
	key := "container/" + runtime + "/" + string(t.Privilege) + "/" + t.Config.Image + "/" + hex.EncodeToString(sum[:12])
	b.warmMu.Lock()
	defer b.warmMu.Unlock()
	if b.templates == nil {
		b.templates = map[string][]byte{}
	}
	b.templates[key] = js
	return key, true
}

// warmTemplateOf is p's container configuration with the parts of a run
// taken out.
func warmTemplateOf(p *isolation.Plan) (*warmTemplate, error) {
	if p == nil {
		return nil, errors.New("no plan")
	}
	if p.Runtime == "runsc" {
		return nil, errors.New("runsc: binds at claim are not relied on to reach a gVisor sandbox")
	}
	// The init binary and HostDir are the same for every key: Prestart
	// fills them in.
	cp := *p
	cp.HostDir = "/"
	cfg, hc, err := translate(&cp, host{lstat: os.Lstat})
	if err != nil {
		return nil, err
	}
	t := &warmTemplate{Config: cfg, HostConfig: hc, Runtime: p.Runtime, Privilege: p.Privilege}
	cfg.Env = nil
	cfg.WorkingDir = "/"
	cfg.Labels = map[string]string{isolation.AnnotationRunID: "", isolation.AnnotationTool: ""}
	hc.Resources.Memory, hc.Resources.MemorySwap, hc.Resources.PidsLimit = 0, 0, nil
	hc.Resources.CPUQuota, hc.Resources.CPUPeriod = 0, 0
	for i := range hc.Mounts {
		m := &hc.Mounts[i]
		if m.Target == InitPath || m.Target == ControlSocket {
			m.Source = ""
			continue
		}
		dir := false
		if m.Target != isolation.SandboxSocket {
			fi, err := os.Lstat(m.Source)
			if err != nil {
				return nil, err
			}
			dir = fi.IsDir()
		}
		m.Source = ""
		m.BindOptions = &mount.BindOptions{Propagation: mount.PropagationRSlave}
		t.Placeholders = append(t.Placeholders, placeholder{Mount: i, Dir: dir})
	}
	// A grant staged at claim covers its whole placeholder in the
	// container, mounts the engine made inside it included: a bind or
	// tmpfs beneath another grant would show the outer grant's files
	// (writable, where the inner grant is read-only).
	var targets []string
	for _, m := range hc.Mounts {
		targets = append(targets, m.Target)
	}
	for dst := range hc.Tmpfs {
		targets = append(targets, dst)
	}
	for dst := range engineMounts {
		targets = append(targets, dst)
	}
	for _, ph := range t.Placeholders {
		outer := hc.Mounts[ph.Mount].Target
		for _, dst := range targets {
			if outer == "/" || strings.HasPrefix(dst, outer+"/") {
				return nil, fmt.Errorf("mount %s is beneath grant %s", dst, outer)
			}
		}
	}
	return t, nil
}

// template returns the configuration WarmKey remembered for key, a copy
// the caller may change.
func (b *Backend) template(key string) (*warmTemplate, error) {
	b.warmMu.Lock()
	js, ok := b.templates[key]
	b.warmMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("prestart a container for key %q: %w: this backend's WarmKey did not name it", key, isolation.ErrUnsupported)
	}
	var t warmTemplate
	if err := json.Unmarshal(js, &t); err != nil {
		return nil, fmt.Errorf("prestart a container for key %q: %w", key, err)
	}
	return &t, nil
}

// Prestart creates and starts a warm container for plans of key (see
// WarmKey) and waits until its init has dialled in.
func (b *Backend) Prestart(ctx context.Context, key, runID, hostDir string) (_ isolation.Warm, retErr error) {
	t, err := b.template(key)
	if err != nil {
		return nil, err
	}
	if !nameRE.MatchString(runID) || !filepath.IsAbs(hostDir) {
		return nil, fmt.Errorf("prestart a container: %w: run id %q or host dir %q", isolation.ErrUnsupported, runID, hostDir)
	}
	if err := b.checkInitBinary(); err != nil {
		return nil, err
	}
	if err := b.checkLocal(); err != nil {
		return nil, err
	}
	if t.Privilege == privilege.Elevated || t.Runtime != "" {
		info, err := b.engineInfo(ctx)
		if err != nil {
			return nil, err
		}
		if err := checkInfo(info, &isolation.Plan{Runtime: t.Runtime, Privilege: t.Privilege}); err != nil {
			return nil, err
		}
	}
	// The container is made from the image's id: the run that claims it
	// must see the image its name has then (Claim compares).
	img, err := b.api.ImageInspect(ctx, t.Config.Image)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, imageErr(t.Config.Image, err)
		}
		return nil, b.engineErr("inspect image "+t.Config.Image, err)
	}
	b.sawImage(t.Config.Image, img.ID)

	cfg, hc := t.Config, t.HostConfig
	cfg.Image = img.ID
	cfg.Labels[isolation.AnnotationRunID] = runID
	hc.Resources.Memory, hc.Resources.MemorySwap = warmMemoryFloor, warmMemoryFloor
	floor := int64(warmPidsFloor)
	hc.Resources.PidsLimit = &floor
	for i := range hc.Mounts {
		switch hc.Mounts[i].Target {
		case InitPath:
			hc.Mounts[i].Source = b.initBinary
		case ControlSocket:
			hc.Mounts[i].Source = filepath.Join(hostDir, controlSocketName)
		}
	}

	w := &warm{b: b, key: key, runID: runID, hostDir: hostDir, imageRef: t.Config.Image, imageID: img.ID, tmpl: t}
	w.s = &sandbox{api: b.api, name: containerName(runID)}
	defer func() {
		if retErr != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = w.Discard(cctx)
		}
	}()
	if len(t.Placeholders) > 0 {
		root := filepath.Join(hostDir, stagingDirName)
		w.s.stagingRoot = root
		if err := shareStagingRoot(root); err != nil {
			return nil, fmt.Errorf("prestart container %s: %w", w.s.name, err)
		}
		for _, ph := range t.Placeholders {
			p := filepath.Join(root, strconv.Itoa(ph.Mount))
			if err := makePlaceholder(p, ph.Dir); err != nil {
				return nil, fmt.Errorf("prestart container %s: %w", w.s.name, err)
			}
			w.s.staged = append(w.s.staged, p)
			hc.Mounts[ph.Mount].Source = p
		}
	}
	alive, err := b.launch(ctx, w.s, cfg, hc, hostDir, t.Runtime)
	if err != nil {
		return nil, err
	}
	w.pending, err = b.await(ctx, w.s.ln, alive)
	if err != nil {
		return nil, fmt.Errorf("start init in container %s: %w", w.s.name, err)
	}
	ins, err := b.api.ContainerInspect(ctx, w.s.id)
	if err != nil {
		return nil, b.engineErr("inspect container "+w.s.name, err)
	}
	if ins.State != nil {
		w.s.pid = ins.State.Pid
	}
	return w, nil
}

// warm is a started container no run has claimed yet.
type warm struct {
	b                 *Backend
	key, runID        string
	hostDir           string
	imageRef, imageID string
	tmpl              *warmTemplate
	// s holds the container, its control socket and placeholders; its
	// plan and init come with the claim.
	s       *sandbox
	pending pendingInit

	mu   sync.Mutex
	used bool // claimed or discarded
}

func (w *warm) RunID() string { return w.runID }
func (w *warm) Key() string   { return w.key }

// take marks w used; it reports false when it already was.
func (w *warm) take() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.used {
		return false
	}
	w.used = true
	return true
}

// Claim stages p's grants and egress socket on the placeholders, sets p's
// limits and hands the init p's configuration. On error the container is
// destroyed.
func (w *warm) Claim(ctx context.Context, p *isolation.Plan) (_ isolation.Sandbox, retErr error) {
	if !w.take() {
		return nil, fmt.Errorf("claim container %s: %w: already claimed or discarded", w.s.name, isolation.ErrClosed)
	}
	s := w.s
	defer func() {
		if retErr != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = w.close(cctx)
		}
	}()
	if p == nil || p.RunID != w.runID || p.HostDir != w.hostDir {
		return nil, fmt.Errorf("claim container %s: %w: the plan is not of run %s in %s", s.name, isolation.ErrUnsupported, w.runID, w.hostDir)
	}
	if key, ok := w.b.WarmKey(p); !ok || key != w.key {
		return nil, fmt.Errorf("claim container %s: %w: the plan's warm key is not %s", s.name, isolation.ErrUnsupported, w.key)
	}
	if id, err := w.b.imageID(ctx, imageOf(p)); err != nil {
		return nil, err
	} else if id != w.imageID {
		return nil, fmt.Errorf("claim container %s: %w: image %s changed since the container started", s.name, isolation.ErrUnsupported, imageOf(p))
	}
	_, hc, err := translate(p, w.b.host(os.Lstat))
	if err != nil {
		return nil, err
	}
	s.plan = p
	s.cwd = p.Spec.Process.Cwd

	// The limits go to the engine while the grants are staged.
	update := make(chan error, 1)
	go func() {
		_, err := w.b.api.ContainerUpdate(ctx, s.id, container.UpdateConfig{Resources: container.Resources{
			Memory:     hc.Resources.Memory,
			MemorySwap: hc.Resources.MemorySwap,
			CPUQuota:   hc.Resources.CPUQuota,
			CPUPeriod:  hc.Resources.CPUPeriod,
			PidsLimit:  hc.Resources.PidsLimit,
		}})
		update <- err
	}()
	stageErr := w.stage(hc.Mounts)
	if err := <-update; err != nil {
		return nil, w.b.engineErr("set the limits of container "+s.name, err)
	}
	if stageErr != nil {
		return nil, stageErr
	}
	if from, to := w.b.handOverIDs(p); to != nil {
		// As a cold start does (Start): the write grants are the tool's
		// uid's for the run, back to their owner in Close.
		var staged []mount.Mount
		origins := map[string]string{}
		for i, ph := range w.tmpl.Placeholders {
			m := hc.Mounts[ph.Mount]
			origins[w.s.staged[i]] = m.Source
			m.Source = w.s.staged[i]
			staged = append(staged, m)
		}
		s.handed, err = handOver(staged, func(string) bool { return false }, from, to, grantHolds(p), origins)
		if err != nil {
			return nil, err
		}
	}
	init, err := w.pending.handshake(ctx, p)
	w.pending = nil // the init's channel is the client's now
	if err != nil {
		return nil, fmt.Errorf("start init in container %s: %w", s.name, err)
	}
	s.init = init
	return s, nil
}

// stage mounts the sources of ms (p's translated mounts) on the
// placeholders and checks the container sees them.
func (w *warm) stage(ms []mount.Mount) error {
	if len(ms) != len(w.tmpl.HostConfig.Mounts) {
		return fmt.Errorf("claim container %s: %w: the plan's mounts are not the key's", w.s.name, isolation.ErrUnsupported)
	}
	var pins []bindIdentity
	for i, ph := range w.tmpl.Placeholders {
		m := ms[ph.Mount]
		id, err := stageOnto(m.Source, m.Target, w.s.staged[i], ph.Dir, m.ReadOnly)
		if err != nil {
			return fmt.Errorf("claim container %s: stage bind source %s: %w", w.s.name, m.Source, err)
		}
		pins = append(pins, id)
	}
	if len(pins) == 0 {
		return nil
	}
	if err := verifyBinds(pins, w.s.pid); err != nil {
		return fmt.Errorf("claim container %s: %w", w.s.name, err)
	}
	return nil
}

// imageID is the id image ref names now: what Check last saw (a run's
// Check comes just before its claim), else the engine's answer.
func (b *Backend) imageID(ctx context.Context, ref string) (string, error) {
	b.warmMu.Lock()
	id, ok := b.imageIDs[ref]
	b.warmMu.Unlock()
	if ok {
		return id, nil
	}
	img, err := b.api.ImageInspect(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", imageErr(ref, err)
		}
		return "", b.engineErr("inspect image "+ref, err)
	}
	return img.ID, nil
}

// sawImage records the id Check found for image ref.
func (b *Backend) sawImage(ref, id string) {
	b.warmMu.Lock()
	defer b.warmMu.Unlock()
	if b.imageIDs == nil {
		b.imageIDs = map[string]string{}
	}
	b.imageIDs[ref] = id
}

// Discard destroys a warm container no run claimed. It is idempotent.
func (w *warm) Discard(ctx context.Context) error {
	if !w.take() {
		return nil
	}
	return w.close(ctx)
}

func (w *warm) close(ctx context.Context) error {
	var errs []error
	if w.pending != nil {
		errs = append(errs, w.pending.Close())
		w.pending = nil
	}
	return errors.Join(append(errs, w.s.Close(ctx))...)
}
