package container

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/system"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sandboxed-dev/sandboxed/internal/dockerapi"

	"github.com/sandboxed-dev/sandboxed/images"
	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/internal/testenv"
	"github.com/sandboxed-dev/sandboxed/isolation"
)

func planIn(t *testing.T) *isolation.Plan {
	p := basePlan()
	p.HostDir = t.TempDir()
	return p
}

func TestStartExecClose(t *testing.T) {
	f, in := newFakeEngine(), newFakeInit()
	in.exit = isolation.Exit{Code: 3}
	b := newTestBackend(t, f, in, nil)
	p := planIn(t)
	sb, err := b.Start(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p.HostDir, controlSocketName)); err != nil {
		t.Errorf("control socket: %v", err)
	}
	ex, err := sb.Exec(context.Background(), isolation.Command{Name: "main", Args: []string{"true"}}, isolation.Stdio{})
	if err != nil || ex.Code != 3 {
		t.Fatalf("Exec = %+v, %v", ex, err)
	}
	if err := sb.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := sb.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	want := []string{"create sandboxed-r1", "start cid-sandboxed-r1", "remove cid-sandboxed-r1 force=true volumes=true"}
	if got := f.Calls(); !reflect.DeepEqual(got, want) {
		t.Errorf("engine calls %q, want %q (create+start, then one forced remove)", got, want)
	}
	if in.closed != 1 {
		t.Errorf("init closed %d times", in.closed)
	}
	if _, err := os.Stat(filepath.Join(p.HostDir, controlSocketName)); !os.IsNotExist(err) {
		t.Errorf("control socket left behind: %v", err)
	}
	if _, err := sb.Exec(context.Background(), isolation.Command{Args: []string{"true"}}, isolation.Stdio{}); !errors.Is(err, isolation.ErrClosed) {
		t.Errorf("Exec after Close: %v, want ErrClosed", err)
	}
}

// TestStartFailuresLeaveNothing: whatever step fails, the container (if
// made) is removed and the socket is gone.
func TestStartFailuresLeaveNothing(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name       string
		setup      func(f *fakeEngine)
		connectErr error
		removed    bool
		is         error
	}{
		// A failed create may still have made the container (a cancelled
		// request): it is removed by name.
		{"create fails", func(f *fakeEngine) { f.createErr = boom }, nil, true, boom},
		{"image missing", func(f *fakeEngine) { f.createErr = errNotFound }, nil, true, images.ErrNotFound},
		{"start fails", func(f *fakeEngine) { f.startErr = boom }, nil, true, boom},
		{"init never connects", func(f *fakeEngine) {}, context.DeadlineExceeded, true, context.DeadlineExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeEngine()
			tc.setup(f)
			b := newTestBackend(t, f, newFakeInit(), tc.connectErr)
			p := planIn(t)
			_, err := b.Start(context.Background(), p)
			if !errors.Is(err, tc.is) {
				t.Fatalf("Start: %v, want %v", err, tc.is)
			}
			if got := len(f.removed) == 1; got != tc.removed {
				t.Errorf("removed %v, want %v (calls %q)", f.removed, tc.removed, f.Calls())
			}
			if _, err := os.Stat(filepath.Join(p.HostDir, controlSocketName)); !os.IsNotExist(err) {
				t.Errorf("control socket left behind: %v", err)
			}
		})
	}
}

func TestImageMissingSaysHowToFix(t *testing.T) {
	f := newFakeEngine()
	f.createErr = errNotFound
	b := newTestBackend(t, f, newFakeInit(), nil)
	_, err := b.Start(context.Background(), planIn(t))
	if !errors.Is(err, isolation.ErrUnsupported) || !errors.Is(err, images.ErrNotFound) {
		t.Fatalf("Start: %v, want ErrUnsupported and images.ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), "run: sandboxed images build") {
		t.Errorf("error %q does not say how to fix", err)
	}

	f = newFakeEngine()
	f.imageErr = errNotFound
	b = newTestBackend(t, f, newFakeInit(), nil)
	err = b.Check(context.Background(), planIn(t))
	if !errors.Is(err, isolation.ErrUnsupported) || !strings.Contains(err.Error(), images.BuildCommand) {
		t.Fatalf("Check: %v", err)
	}
}

// TestEngineUnreachable uses a real client on a socket nobody listens on.
func TestEngineUnreachable(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "docker.sock")
	c, err := dockerapi.New("unix://"+sock, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := New(WithClient(c), WithInitBinary("/usr/local/bin/sandboxed"))
	if err != nil {
		t.Fatal(err)
	}
	b.binOnce.Do(func() {})
	p := planIn(t)
	for name, err := range map[string]error{
		"Check": b.Check(context.Background(), p),
		"Start": func() error { _, err := b.Start(context.Background(), p); return err }(),
		"GC":    func() error { _, err := b.GC(context.Background(), nil); return err }(),
	} {
		if !errors.Is(err, isolation.ErrUnsupported) || !strings.Contains(err.Error(), "systemctl start docker") {
			t.Errorf("%s: %v, want ErrUnsupported saying how to start the engine", name, err)
		}
	}
	r, err := b.Probe(context.Background(), "")
	if err != nil || r.Reachable || r.OK() || len(r.Problems) == 0 {
		t.Errorf("Probe = %+v, %v", r, err)
	}
	if c := r.Checks(); len(c) != 1 || c[0].OK || !strings.Contains(c[0].Fix, "systemctl start docker") {
		t.Errorf("Checks of an unreachable engine = %+v", c)
	}
}

func TestCheckEngineFeatures(t *testing.T) {
	tests := []struct {
		name string
		info func(i *system.Info)
		plan func(p *isolation.Plan)
		want string // "" for accepted
	}{
		{"defaults", func(i *system.Info) {}, func(p *isolation.Plan) {}, ""},
		{"runtime missing", func(i *system.Info) {}, func(p *isolation.Plan) { p.Runtime = "runsc" }, "runtime runsc"},
		{"runtime present", func(i *system.Info) {
			i.Runtimes["runsc"] = system.RuntimeWithStatus{Runtime: system.Runtime{Args: []string{"--host-uds=open", "--oci-seccomp"}}}
		}, func(p *isolation.Plan) { p.Runtime = "runsc" }, ""},
		{"runsc without oci-seccomp", func(i *system.Info) {
			i.Runtimes["runsc"] = system.RuntimeWithStatus{Runtime: system.Runtime{Args: []string{"--host-uds=open"}}}
		}, func(p *isolation.Plan) { p.Runtime = "runsc" }, "--oci-seccomp"},
		{"runsc without host uds", func(i *system.Info) {
			i.Runtimes["runsc"] = system.RuntimeWithStatus{Runtime: system.Runtime{Args: []string{"--oci-seccomp"}}}
		}, func(p *isolation.Plan) { p.Runtime = "runsc" }, "--host-uds=open"},
		{"no seccomp", func(i *system.Info) { i.SecurityOptions = nil }, func(p *isolation.Plan) {}, "seccomp"},
		{"elevated without userns remap", func(i *system.Info) {}, func(p *isolation.Plan) { p.Privilege = privilege.Elevated }, "userns-remap"},
		{"elevated with userns remap", func(i *system.Info) { i.SecurityOptions = append(i.SecurityOptions, "name=userns") }, func(p *isolation.Plan) { p.Privilege = privilege.Elevated }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeEngine()
			tc.info(&f.info)
			b := newTestBackend(t, f, newFakeInit(), nil)
			p := planIn(t)
			tc.plan(p)
			err := b.Check(context.Background(), p)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case tc.want != "" && (!errors.Is(err, isolation.ErrUnsupported) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Check: %v, want ErrUnsupported about %q", err, tc.want)
			}
			if tc.want != "" && tc.name != "no seccomp" {
				// Start refuses the same plan before creating anything
				// (seccomp support is Check's alone: Start skips the
				// engine's info unless the plan needs a runtime or root).
				if _, err := b.Start(context.Background(), p); err == nil || len(f.removed) != 0 || strings.Contains(strings.Join(f.Calls(), " "), "create") {
					t.Errorf("Start: %v, calls %q", err, f.Calls())
				}
			}
		})
	}
}

func TestKillTermsThenKills(t *testing.T) {
	f, in := newFakeEngine(), newFakeInit()
	in.block = make(chan struct{})
	b := newTestBackend(t, f, in, nil)
	sb, err := b.Start(context.Background(), planIn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	execDone := make(chan error, 1)
	go func() {
		_, err := sb.Exec(context.Background(), isolation.Command{Args: []string{"sleep", "9"}}, isolation.Stdio{})
		execDone <- err
	}()
	for { // wait for the Exec to be running
		in.mu.Lock()
		n := len(in.execs)
		in.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	if err := sb.Kill(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("Kill waited the whole grace though the command ended")
	}
	<-execDone
	if !reflect.DeepEqual(in.signals, []syscall.Signal{syscall.SIGTERM}) {
		t.Errorf("init signals %v, want SIGTERM", in.signals)
	}
	if !reflect.DeepEqual(f.killed, []string{"cid-sandboxed-r1"}) || !strings.Contains(strings.Join(f.Calls(), ","), "kill cid-sandboxed-r1 KILL") {
		t.Errorf("calls %q, want a SIGKILL of the container", f.Calls())
	}
	if _, err := sb.Exec(context.Background(), isolation.Command{Args: []string{"true"}}, isolation.Stdio{}); !errors.Is(err, isolation.ErrClosed) {
		t.Errorf("Exec after Kill: %v", err)
	}
	// A container already gone is not an error for Kill.
	f.killErr = fmt.Errorf("gone: %w", cerrdefs.ErrNotFound)
	if err := sb.Kill(context.Background(), 0); err != nil {
		t.Errorf("second Kill: %v", err)
	}
}

func TestCloseRemovesInEveryOutcome(t *testing.T) {
	for _, name := range []string{"after exec", "after kill", "remove fails", "already gone"} {
		t.Run(name, func(t *testing.T) {
			f, in := newFakeEngine(), newFakeInit()
			b := newTestBackend(t, f, in, nil)
			sb, err := b.Start(context.Background(), planIn(t))
			if err != nil {
				t.Fatal(err)
			}
			switch name {
			case "after exec":
				_, _ = sb.Exec(context.Background(), isolation.Command{Args: []string{"true"}}, isolation.Stdio{})
			case "after kill":
				_ = sb.Kill(context.Background(), 0)
			case "remove fails":
				f.removeErr = errors.New("engine busy")
			case "already gone":
				f.removeErr = fmt.Errorf("no such container: %w", cerrdefs.ErrNotFound)
			}
			err = sb.Close(context.Background())
			if (name == "remove fails") != (err != nil) {
				t.Errorf("Close: %v", err)
			}
			if len(f.removed) != 1 || in.closed != 1 {
				t.Errorf("removed %v, init closed %d", f.removed, in.closed)
			}
		})
	}
}

func TestStats(t *testing.T) {
	f := newFakeEngine()
	f.state.OOMKilled = true
	b := newTestBackend(t, f, newFakeInit(), nil)
	sb, err := b.Start(context.Background(), planIn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	st, err := sb.Stats(context.Background())
	if err != nil || !st.OOMKilled {
		t.Fatalf("Stats = %+v, %v; want OOMKilled from the engine", st, err)
	}
}

func TestGC(t *testing.T) {
	f := newFakeEngine()
	now := time.Now().Unix()
	f.list = []container.Summary{
		{ID: "a", Names: []string{"/sandboxed-live"}, State: "exited", Labels: map[string]string{isolation.AnnotationRunID: "live"}},
		{ID: "b", Names: []string{"/sandboxed-dead1"}, State: "exited", Created: now, Labels: map[string]string{isolation.AnnotationRunID: "dead1"}},
		{ID: "c", Names: []string{"/sandboxed-dead2"}, State: "running", Created: now - 7200, Labels: map[string]string{isolation.AnnotationRunID: "dead2"}},
		// In use by another controller: running, or just created.
		{ID: "d", Names: []string{"/sandboxed-other"}, State: "running", Created: now - 60, Labels: map[string]string{isolation.AnnotationRunID: "other"}},
		{ID: "e", Names: []string{"/sandboxed-new"}, State: "created", Created: now, Labels: map[string]string{isolation.AnnotationRunID: "new"}},
	}
	b := newTestBackend(t, f, newFakeInit(), nil)
	// Without liveness answers, what may be in use is spared.
	got, err := b.GC(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.removed, []string{"a", "b", "c"}) || len(got) != 3 || !strings.Contains(got[1], "dead1") {
		t.Errorf("GC without keep removed %v, reported %q", f.removed, got)
	}
	// With them, every run that is not live is reaped, whatever its age.
	f.removed = nil
	got, err = b.GC(context.Background(), func(id string) bool { return id == "live" })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.removed, []string{"b", "c", "d", "e"}) || len(got) != 4 {
		t.Errorf("GC with keep removed %v, reported %q", f.removed, got)
	}
}

func TestProbe(t *testing.T) {
	f := newFakeEngine()
	f.info.Runtimes["runsc"] = system.RuntimeWithStatus{Runtime: system.Runtime{Args: []string{"--host-uds=open", "--oci-seccomp"}}}
	b := newTestBackend(t, f, newFakeInit(), nil)
	r, err := b.Probe(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Reachable || r.ServerVersion != "20.10.24" || r.APIVersion != "1.41" || !r.Runsc || !r.Seccomp || !r.ImagePresent || r.Image != images.DefaultImage {
		t.Errorf("Probe = %+v", r)
	}
	// The fake image carries no labels: it is not an up-to-date runner.
	if r.ImageUpToDate || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], images.BuildCommand) {
		t.Errorf("Probe problems %q", r.Problems)
	}
	checks := r.Checks()
	if len(checks) != 6 {
		t.Fatalf("Checks = %+v", checks)
	}
	for _, c := range checks {
		// All pass; the image is present but out of date, which runs
		// survive, and says how to rebuild.
		if !c.OK || c.Name == "runner image" && c.Fix != "run: "+images.BuildCommand {
			t.Errorf("check %+v", c)
		}
	}
}

func TestInitBinaryMustBeStatic(t *testing.T) {
	sh, err := filepathEval("/bin/sh")
	testenv.Need(t, "/bin/sh (a dynamically linked binary)", err)
	b, err := New(func(b *Backend) { b.api = newFakeEngine() }, WithInitBinary(sh))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.checkInitBinary(); !errors.Is(err, isolation.ErrUnsupported) || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("checkInitBinary(%s) = %v, want dynamically linked refused", sh, err)
	}
}

func filepathEval(p string) (string, error) { return filepath.EvalSymlinks(p) }

func TestRemoteEngineRefused(t *testing.T) {
	f := newFakeEngine()
	f.host = "tcp://10.0.0.5:2376"
	b := newTestBackend(t, f, newFakeInit(), nil)
	p := planIn(t)
	if err := b.Check(context.Background(), p); !errors.Is(err, isolation.ErrUnsupported) || !strings.Contains(err.Error(), "local engine") {
		t.Errorf("Check: %v", err)
	}
	if _, err := b.Start(context.Background(), p); !errors.Is(err, isolation.ErrUnsupported) || len(f.Calls()) != 0 {
		t.Errorf("Start: %v, calls %q", err, f.Calls())
	}
}

func TestCheckBeforeHostDir(t *testing.T) {
	b := newTestBackend(t, newFakeEngine(), newFakeInit(), nil)
	p := planIn(t)
	p.HostDir = ""
	if err := b.Check(context.Background(), p); err != nil {
		t.Errorf("Check without HostDir: %v (the controller sets it after Check)", err)
	}
	if _, err := b.Start(context.Background(), p); !errors.Is(err, isolation.ErrUnsupported) {
		t.Errorf("Start without HostDir: %v", err)
	}
}

// TestCheckSkipsInfoWithAProfile: with an explicit seccomp profile (which
// the engine refuses to load if it cannot), Check asks only for the image.
func TestCheckSkipsInfoWithAProfile(t *testing.T) {
	f := newFakeEngine()
	b := newTestBackend(t, f, newFakeInit(), nil)
	p := planIn(t)
	p.Spec.Linux = &specs.Linux{Namespaces: p.Spec.Linux.Namespaces, Resources: p.Spec.Linux.Resources, Seccomp: &specs.LinuxSeccomp{DefaultAction: specs.ActAllow}}
	if err := b.Check(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if got := f.Calls(); !reflect.DeepEqual(got, []string{"image " + images.DefaultImage}) {
		t.Errorf("engine calls %q, want only the image inspect", got)
	}
}

// A removal the engine already has in progress (its auto-remove, another
// caller's) is waited for until the container is gone, not reported; one
// that never ends is.
func TestRemoveContainerInProgress(t *testing.T) {
	inProgress := fmt.Errorf("removal of container c1 is already in progress: %w", cerrdefs.ErrConflict)
	f := &fakeEngine{removeErr: inProgress, inspectErr: fmt.Errorf("no such container: %w", cerrdefs.ErrNotFound)}
	if err := removeContainer(context.Background(), f, "c1"); err != nil {
		t.Errorf("gone after a removal in progress: %v", err)
	}
	f = &fakeEngine{removeErr: inProgress}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := removeContainer(ctx, f, "c1"); !cerrdefs.IsConflict(err) {
		t.Errorf("still there: %v", err)
	}
	f = &fakeEngine{removeErr: fmt.Errorf("no such container: %w", cerrdefs.ErrNotFound)}
	if err := removeContainer(context.Background(), f, "c1"); err != nil {
		t.Errorf("already gone: %v", err)
	}
}
