package container

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/mount"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
)

var _ isolation.Prestarter = (*Backend)(nil)

// TestWarmKey: plans that differ only in what a claim applies share a
// key; anything a container fixes at start makes another.
func TestWarmKey(t *testing.T) {
	b := newTestBackend(t, newFakeEngine(), newFakeInit(), nil)
	base := basePlan()
	key, ok := b.WarmKey(base)
	if !ok || !strings.HasPrefix(key, "container/default/same-as-user/") {
		t.Fatalf("WarmKey(base) = %q, %v", key, ok)
	}
	same := map[string]func(p *isolation.Plan){
		"run id and host dir": func(p *isolation.Plan) {
			p.RunID, p.HostDir = "r2", "/run/sandboxed/r2"
			p.Spec.Annotations[isolation.AnnotationRunID] = "r2"
		},
		"tool":              func(p *isolation.Plan) { p.Tool = "other" },
		"environment":       func(p *isolation.Plan) { p.Spec.Process.Env = []string{"SECRET=1"} },
		"working directory": func(p *isolation.Plan) { p.Spec.Process.Cwd = "/elsewhere" },
		"memory, pids, cpu": func(p *isolation.Plan) {
			p.Spec = baseSpec("r1", 1<<30, 0.5, 64<<20)
			setPids(p, 7)
		},
	}
	for name, change := range same {
		p := basePlan()
		change(p)
		if k, ok := b.WarmKey(p); !ok || k != key {
			t.Errorf("%s: key %q, %v; want the base's %q", name, k, ok, key)
		}
	}
	differ := map[string]func(p *isolation.Plan){
		"image":     func(p *isolation.Plan) { p.Image = "other:1" },
		"privilege": func(p *isolation.Plan) { p.Privilege = privilege.Reduced },
		"user":      func(p *isolation.Plan) { p.Spec.Process.User.UID = 1002 },
		"hostname":  func(p *isolation.Plan) { p.Spec.Hostname = "other" },
		"tmp size":  func(p *isolation.Plan) { p.Spec.Mounts = isolation.SkeletonMounts(1 << 20) },
		"rlimits": func(p *isolation.Plan) {
			p.Spec.Process.Rlimits = []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: 64, Hard: 64}}
		},
		"masked paths": func(p *isolation.Plan) {
			p.Spec.Linux = &specs.Linux{Namespaces: p.Spec.Linux.Namespaces, Resources: p.Spec.Linux.Resources, MaskedPaths: []string{"/proc/x"}}
		},
	}
	seen := map[string]string{key: "base"}
	for name, change := range differ {
		p := basePlan()
		change(p)
		k, ok := b.WarmKey(p)
		if !ok {
			t.Errorf("%s: no key", name)
			continue
		}
		if other, dup := seen[k]; dup {
			t.Errorf("%s: key %q is also %s's", name, k, other)
		}
		seen[k] = name
	}
	refused := map[string]func(p *isolation.Plan){
		"runsc":        func(p *isolation.Plan) { p.Runtime = "runsc" },
		"no limits":    func(p *isolation.Plan) { p.Spec.Linux.Resources.Memory = nil },
		"process tier": func(p *isolation.Plan) { p.Tier = isolation.TierProcess },
		"missing source": func(p *isolation.Plan) {
			p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: "/d", Type: "bind", Source: "/nonexistent-source"})
		},
	}
	for name, change := range refused {
		p := basePlan()
		change(p)
		if k, ok := b.WarmKey(p); ok {
			t.Errorf("%s: key %q, want none (cold start)", name, k)
		}
	}
	if _, ok := b.WarmKey(nil); ok {
		t.Error("WarmKey(nil) has a key")
	}
}

// TestWarmKeyBinds: bind targets, read-only flags and kinds are in the
// key, sources are not; without root there is no key for a grant.
func TestWarmKeyBinds(t *testing.T) {
	b := newTestBackend(t, newFakeEngine(), newFakeInit(), nil)
	d1, d2 := t.TempDir(), t.TempDir()
	file := filepath.Join(d1, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	with := func(src, dst string, opts ...string) *isolation.Plan {
		p := basePlan()
		p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: dst, Type: "bind", Source: src, Options: opts})
		return p
	}
	k1, ok := b.WarmKey(with(d1, "/data", "ro"))
	if os.Geteuid() != 0 {
		if ok {
			t.Fatalf("without root a grant has key %q: it cannot be staged", k1)
		}
		return
	}
	if !ok {
		t.Fatal("no key for a grant")
	}
	if k, _ := b.WarmKey(with(d2, "/data", "ro")); k != k1 {
		t.Errorf("another source: key %q, want %q", k, k1)
	}
	for name, p := range map[string]*isolation.Plan{
		"target":    with(d1, "/other", "ro"),
		"writable":  with(d1, "/data", "rw"),
		"file kind": with(file, "/data", "ro"),
	} {
		if k, ok := b.WarmKey(p); !ok || k == k1 {
			t.Errorf("%s: key %q, %v; want another than %q", name, k, ok, k1)
		}
	}
	nested := basePlan()
	nested.Spec.Mounts = []specs.Mount{
		{Destination: "/data", Type: "bind", Source: d1, Options: []string{"rw"}},
		{Destination: "/data/sub", Type: "bind", Source: d2, Options: []string{"ro"}},
	}
	if k, ok := b.WarmKey(nested); ok {
		t.Errorf("a grant beneath another: key %q, want none (the outer grant would cover it)", k)
	}
	tmpfs := basePlan()
	tmpfs.Spec.Mounts = []specs.Mount{
		{Destination: "/data", Type: "bind", Source: d1, Options: []string{"ro"}},
		{Destination: "/data/cache", Type: "tmpfs"},
	}
	if k, ok := b.WarmKey(tmpfs); ok {
		t.Errorf("a tmpfs beneath a grant: key %q, want none", k)
	}
	eg := basePlan()
	eg.Egress = &isolation.Egress{ProxySocket: "/run/sandboxed/r1/egress.sock", ProxyPort: 3128}
	if k, ok := b.WarmKey(eg); !ok || k == k1 {
		t.Errorf("egress: key %q, %v", k, ok)
	}
}

// TestWarmPrestartClaim: the warm container holds nothing of a run; the
// claim sets the run's limits and serves the run.
func TestWarmPrestartClaim(t *testing.T) {
	f, in := newFakeEngine(), newFakeInit()
	b := newTestBackend(t, f, in, nil)
	p := planIn(t)
	key, ok := b.WarmKey(p)
	if !ok {
		t.Fatal("no key")
	}
	w, err := b.Prestart(context.Background(), key, p.RunID, p.HostDir)
	if err != nil {
		t.Fatal(err)
	}
	if w.RunID() != p.RunID || w.Key() != key {
		t.Errorf("warm %s %s", w.RunID(), w.Key())
	}
	cfg, hc := f.created.cfg, f.created.hc
	if len(cfg.Env) != 0 || cfg.WorkingDir != "/" || cfg.Labels[isolation.AnnotationRunID] != p.RunID || cfg.Image != "sha256:img" {
		t.Errorf("warm config: env %q, cwd %q, labels %v, image %q", cfg.Env, cfg.WorkingDir, cfg.Labels, cfg.Image)
	}
	if hc.Memory != warmMemoryFloor || *hc.PidsLimit != warmPidsFloor || hc.CPUQuota != 0 {
		t.Errorf("warm limits: memory %d pids %d cpu %d, want the idle floor", hc.Memory, *hc.PidsLimit, hc.CPUQuota)
	}
	if hc.Mounts[0].Source != b.initBinary || hc.Mounts[1].Source != filepath.Join(p.HostDir, controlSocketName) {
		t.Errorf("warm mounts %+v", hc.Mounts)
	}
	cold, coldHC, err := translate(p, b.host(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != cold.User || !reflect.DeepEqual(hc.SecurityOpt, coldHC.SecurityOpt) || !reflect.DeepEqual(hc.CapAdd, coldHC.CapAdd) ||
		!reflect.DeepEqual(hc.Tmpfs, coldHC.Tmpfs) || !hc.ReadonlyRootfs || hc.NetworkMode != "none" {
		t.Errorf("warm host config differs from a cold start's in what is fixed at start:\n%+v\n%+v", hc, coldHC)
	}

	sb, err := w.Claim(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.updated) != 1 || f.updated[0].Memory != p.Limits.MemoryBytes || f.updated[0].MemorySwap != p.Limits.MemoryBytes ||
		*f.updated[0].PidsLimit != p.Limits.Pids+sbinit.SpareThreads || f.updated[0].CPUQuota != isolation.CPUQuota(p.Limits.CPUs) || f.updated[0].CPUPeriod != isolation.CPUPeriod {
		t.Errorf("claim updated %+v, want the plan's limits", f.updated)
	}
	if _, err := sb.Exec(context.Background(), isolation.Command{Args: []string{"true"}}, isolation.Stdio{}); err != nil {
		t.Fatal(err)
	}
	if got := in.execs[0].Cwd; got != p.Spec.Process.Cwd {
		t.Errorf("a command without a cwd runs in %q, want the plan's %q", got, p.Spec.Process.Cwd)
	}
	if _, err := w.Claim(context.Background(), p); !errors.Is(err, isolation.ErrClosed) {
		t.Errorf("second claim: %v, want ErrClosed", err)
	}
	if err := sb.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Discard(context.Background()); err != nil {
		t.Errorf("Discard after a claim: %v", err)
	}
	want := []string{"image sandboxed-runner:latest", "create sandboxed-r1", "start cid-sandboxed-r1", "inspect cid-sandboxed-r1",
		"update cid-sandboxed-r1", "remove cid-sandboxed-r1 force=true volumes=true"}
	if got := f.Calls(); !reflect.DeepEqual(got, want) {
		t.Errorf("engine calls %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(p.HostDir, controlSocketName)); !os.IsNotExist(err) {
		t.Errorf("control socket left behind: %v", err)
	}
}

// TestWarmClaimFailureDestroys: a claim that cannot serve the plan exactly
// destroys the container; the caller starts the run cold.
func TestWarmClaimFailureDestroys(t *testing.T) {
	for name, c := range map[string]struct {
		plan   func(p *isolation.Plan)
		engine func(f *fakeEngine)
	}{
		"another run":    {plan: func(p *isolation.Plan) { p.RunID = "r9" }},
		"another key":    {plan: func(p *isolation.Plan) { p.Privilege = privilege.Reduced }},
		"image rebuilt":  {engine: func(f *fakeEngine) { f.imageID = "sha256:new" }},
		"limits refused": {engine: func(f *fakeEngine) { f.updateErr = errors.New("no") }},
		"grant vanished": {plan: func(p *isolation.Plan) {
			p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: "/d", Type: "bind", Source: "/nonexistent"})
		}},
		"host dir differs": {plan: func(p *isolation.Plan) { p.HostDir = "/elsewhere" }},
	} {
		t.Run(name, func(t *testing.T) {
			f, in := newFakeEngine(), newFakeInit()
			b := newTestBackend(t, f, in, nil)
			p := planIn(t)
			key, _ := b.WarmKey(p)
			w, err := b.Prestart(context.Background(), key, p.RunID, p.HostDir)
			if err != nil {
				t.Fatal(err)
			}
			if c.plan != nil {
				c.plan(p)
			}
			if c.engine != nil {
				c.engine(f)
				if err := b.Check(context.Background(), p); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := w.Claim(context.Background(), p); err == nil {
				t.Fatal("claim succeeded")
			}
			if !reflect.DeepEqual(f.removed, []string{"cid-sandboxed-r1"}) || in.closed != 1 {
				t.Errorf("after a failed claim: removed %v, init closed %d times", f.removed, in.closed)
			}
			if err := w.Discard(context.Background()); err != nil || len(f.removed) != 1 {
				t.Errorf("Discard after a failed claim: %v, removed %v", err, f.removed)
			}
		})
	}
}

// TestWarmDiscard: Discard removes the container and its socket, once.
func TestWarmDiscard(t *testing.T) {
	f, in := newFakeEngine(), newFakeInit()
	b := newTestBackend(t, f, in, nil)
	p := planIn(t)
	key, _ := b.WarmKey(p)
	w, err := b.Prestart(context.Background(), key, p.RunID, p.HostDir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := w.Discard(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(f.removed, []string{"cid-sandboxed-r1"}) || in.closed != 1 {
		t.Errorf("removed %v, init closed %d times", f.removed, in.closed)
	}
	if _, err := w.Claim(context.Background(), p); !errors.Is(err, isolation.ErrClosed) {
		t.Errorf("claim after Discard: %v", err)
	}
	if entries, _ := os.ReadDir(p.HostDir); len(entries) != 0 {
		t.Errorf("left in the host dir: %v", entries)
	}
}

// TestWarmPrestartFailures: a key this backend did not name, an engine
// that fails: nothing is left.
func TestWarmPrestartFailures(t *testing.T) {
	f, in := newFakeEngine(), newFakeInit()
	b := newTestBackend(t, f, in, nil)
	p := planIn(t)
	if _, err := b.Prestart(context.Background(), "container/x", p.RunID, p.HostDir); !errors.Is(err, isolation.ErrUnsupported) {
		t.Errorf("unknown key: %v", err)
	}
	key, _ := b.WarmKey(p)
	f.startErr = errors.New("boom")
	if _, err := b.Prestart(context.Background(), key, p.RunID, p.HostDir); err == nil {
		t.Fatal("Prestart succeeded with a failing start")
	}
	if !reflect.DeepEqual(f.removed, []string{"cid-sandboxed-r1"}) {
		t.Errorf("removed %v", f.removed)
	}
	if entries, _ := os.ReadDir(p.HostDir); len(entries) != 0 {
		t.Errorf("left in the host dir: %v", entries)
	}
}

// TestWarmTemplatePlaceholders: every bind but the init's and the control
// socket's becomes an rslave placeholder.
func TestWarmTemplatePlaceholders(t *testing.T) {
	d := t.TempDir()
	p := basePlan()
	p.Egress = &isolation.Egress{ProxySocket: "/run/sandboxed/r1/egress.sock", ProxyPort: 3128}
	p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: "/data", Type: "bind", Source: d, Options: []string{"ro"}})
	tm, err := warmTemplateOf(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Placeholders) != 2 || tm.Placeholders[0].Dir || !tm.Placeholders[1].Dir {
		t.Fatalf("placeholders %+v", tm.Placeholders)
	}
	for _, ph := range tm.Placeholders {
		m := tm.HostConfig.Mounts[ph.Mount]
		if m.Source != "" || m.BindOptions.Propagation != mount.PropagationRSlave {
			t.Errorf("placeholder mount %+v", m)
		}
	}
	if m := tm.HostConfig.Mounts[tm.Placeholders[1].Mount]; m.Target != "/data" || !m.ReadOnly {
		t.Errorf("grant placeholder %+v", m)
	}
}
