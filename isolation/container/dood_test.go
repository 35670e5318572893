package container

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/hostsetup"
	"github.com/sandboxed-dev/sandboxed/isolation"
)

// An engine outside this container sees a path only through a bind from
// its host at the same path; the deepest bind decides. /dev/null it has
// itself.
func TestOutsideVisible(t *testing.T) {
	o := &outside{self: "ci-job", binds: []container.MountPoint{
		{Source: "/srv/ci", Destination: "/srv/ci"},
		{Source: "/var/lib/other", Destination: "/srv/ci/cache"},
		{Source: "/home/runner/work", Destination: "/builds"},
		{Source: "/var/run/docker.sock", Destination: "/var/run/docker.sock"},
	}}
	for path, want := range map[string]bool{
		"/srv/ci":              true,
		"/srv/ci/run/x":        true,
		"/srv/ci/cache/init":   false, // bound from elsewhere
		"/srv/cix":             false,
		"/builds/project":      false, // another path on the host
		"/run/sandboxed/RUN":   false,
		"/var/run/docker.sock": true,
		"/dev/null":            true,
	} {
		if got := o.visible(path); got != want {
			t.Errorf("visible(%s) = %t, want %t", path, got, want)
		}
	}
}

// A volume or a tmpfs of the CI container inside a bind from the host
// hides the host's path there: what is in it is copied, not bound.
func TestOutsideOfHidesVolumes(t *testing.T) {
	ins := container.InspectResponse{
		ContainerJSONBase: &container.ContainerJSONBase{Name: "/ci-job", HostConfig: &container.HostConfig{Tmpfs: map[string]string{"/srv/ci/tmp": ""}}},
		Mounts: []container.MountPoint{
			{Type: mount.TypeBind, Source: "/srv/ci", Destination: "/srv/ci"},
			{Type: mount.TypeVolume, Name: "cache", Source: "/var/lib/docker/volumes/cache/_data", Destination: "/srv/ci/cache"},
		},
	}
	o := outsideOf(ins)
	for path, want := range map[string]bool{"/srv/ci/src": true, "/srv/ci/cache/x": false, "/srv/ci/tmp/x": false} {
		if got := o.visible(path); got != want {
			t.Errorf("visible(%s) = %t, want %t", path, got, want)
		}
	}
}

// planCopy copies the read-only binds the engine cannot see, drops the
// sockets the stream carries, keeps what it sees, refuses a write grant it
// cannot see, and leaves out of a copy what another mount covers.
func TestPlanCopy(t *testing.T) {
	visible := func(p string) bool { return p == "/dev/null" || strings.HasPrefix(p, "/srv/ci/") }
	dirs := map[string]bool{"/builds/p": true, "/builds/p/sub": true, "/srv/ci/w": true}
	fifo := filepath.Join(t.TempDir(), "fifo")
	must(t, syscall.Mkfifo(fifo, 0o600))
	file := filepath.Join(t.TempDir(), "file")
	must(t, os.WriteFile(file, nil, 0o600))
	lstat := func(p string) (os.FileInfo, error) {
		switch {
		case dirs[p]:
			return os.Lstat("/")
		case strings.HasSuffix(p, ".sock"):
			return os.Lstat(fifo)
		}
		return os.Lstat(file)
	}
	base := func(extra ...mount.Mount) *container.HostConfig {
		return &container.HostConfig{Tmpfs: map[string]string{"/tmp": "", "/builds/p/.secrets": ""}, Mounts: append([]mount.Mount{
			bindMount("/usr/local/bin/sandboxed", InitPath, true),
			bindMount("/run/sandboxed/r1/init.sock", ControlSocket, false),
		}, extra...)}
	}
	tests := []struct {
		name    string
		hc      *container.HostConfig
		items   []copyItem
		hollow  []hollowPoint
		drop    []int
		refused string
	}{
		{name: "all seen", hc: &container.HostConfig{Mounts: []mount.Mount{bindMount("/srv/ci/x", "/x", true), bindMount("/dev/null", "/x/.env", true)}}},
		{
			name: "a read grant with masks, a nested grant, a visible write grant",
			hc: base(bindMount("/builds/p", "/work", true), bindMount("/dev/null", "/work/.env", true),
				bindMount("/builds/p/sub", "/work/sub", true), bindMount("/srv/ci/w", "/out", false)),
			items: []copyItem{
				{mount: 0, source: "/usr/local/bin/sandboxed"},
				{mount: 2, source: "/builds/p", dir: true, skip: []string{".env", "sub"}},
				{mount: 4, source: "/builds/p/sub", dir: true},
			},
			hollow: []hollowPoint{{name: "1/.env"}, {name: "1/sub", dir: true}},
		},
		{
			name: "a tmpfs mask in the grant",
			hc:   base(bindMount("/builds/p", "/builds/p", true)),
			items: []copyItem{
				{mount: 0, source: "/usr/local/bin/sandboxed"},
				{mount: 2, source: "/builds/p", dir: true, skip: []string{".secrets"}},
			},
			hollow: []hollowPoint{{name: "1/.secrets", dir: true}},
		},
		{
			name:  "a socket it sees goes with the one it does not",
			hc:    &container.HostConfig{Mounts: []mount.Mount{bindMount("/srv/ci/run/init.sock", ControlSocket, false), bindMount("/builds/p", "/p", true)}},
			items: []copyItem{{mount: 1, source: "/builds/p", dir: true}},
			drop:  []int{0},
		},
		{name: "a socket granted", hc: base(bindMount("/builds/agent.sock", "/agent.sock", true)), refused: "special file (a socket, a device or a pipe) the Docker engine cannot see (it runs outside this container and resolves paths on its own host): /builds/agent.sock"},
		{name: "a write grant it cannot see", hc: base(bindMount("/builds/p", "/work", false), bindMount("/builds/q", "/q", false)), refused: "/builds/p, /builds/q"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cp, err := planCopy(tc.hc, visible, lstat)
			if tc.refused != "" {
				if !errors.Is(err, isolation.ErrUnsupported) || !strings.Contains(err.Error(), tc.refused) || !strings.Contains(err.Error(), "same path") {
					t.Fatalf("err = %v, want a refusal naming %s with the fix", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.items == nil {
				if cp != nil {
					t.Fatalf("plan %+v, want none", cp)
				}
				return
			}
			if tc.drop != nil && !reflect.DeepEqual(cp.drop, tc.drop) {
				t.Errorf("drop %v, want %v", cp.drop, tc.drop)
			}
			if !reflect.DeepEqual(cp.items, tc.items) || !reflect.DeepEqual(cp.hollow, tc.hollow) {
				t.Errorf("items %+v hollow %+v\nwant  %+v hollow %+v", cp.items, cp.hollow, tc.items, tc.hollow)
			}
		})
	}
}

// copiedBackend is a test backend whose engine runs outside this process's
// container and sees none of its paths, with a real init binary to copy.
func copiedBackend(t *testing.T, f *fakeEngine, in *fakeInit) *Backend {
	b := newTestBackend(t, f, in, nil)
	b.initBinary = filepath.Join(t.TempDir(), "sandboxed")
	must(t, os.WriteFile(b.initBinary, []byte("init"), 0o755))
	b.outsideOnce.Do(func() {})
	b.outside = &outside{self: "ci-job"}
	return b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// From a CI container whose engine sees none of its paths, a run with a
// read grant gets the init and the grant copied into a volume of its own
// (never the masked secret's content), the container binds them from the
// volume, the init speaks over the attached streams, and Close removes
// the container, then the volume.
func TestStartCopied(t *testing.T) {
	f, in := newFakeEngine(), newFakeInit()
	b := copiedBackend(t, f, in)
	grant := t.TempDir()
	must(t, os.WriteFile(filepath.Join(grant, "in.txt"), []byte("hello"), 0o644))
	must(t, os.WriteFile(filepath.Join(grant, ".env"), []byte("TOKEN=secret"), 0o600))
	p := planIn(t)
	p.Spec.Mounts = append(p.Spec.Mounts, []specs.Mount{
		{Destination: "/work", Type: "bind", Source: grant, Options: []string{"rbind", "ro"}},
		{Destination: "/work/.env", Type: "bind", Source: "/dev/null", Options: []string{"bind", "ro"}},
	}...)
	p.Egress = &isolation.Egress{ProxySocket: filepath.Join(p.HostDir, "egress.sock"), ProxyPort: 3128}
	sb, err := b.Start(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	hc, cfg := f.created.hc, f.created.cfg
	var binds []string
	for _, m := range hc.Mounts {
		binds = append(binds, m.Source+":"+m.Target)
	}
	data := "/var/lib/docker/volumes/sandboxed-r1/_data"
	wantBinds := []string{data + "/0/sandboxed:" + InitPath, data + "/1:/work", "/dev/null:/work/.env"}
	if !reflect.DeepEqual(binds, wantBinds) {
		t.Errorf("binds %q, want %q (no sockets; copies from the volume)", binds, wantBinds)
	}
	if !slices.Contains(cfg.Entrypoint, "--stdio") || !cfg.OpenStdin || !cfg.StdinOnce || hc.Tmpfs[streamDir] == "" {
		t.Errorf("entrypoint %q stdin %t/%t tmpfs %q: want the init on its attached streams and a tmpfs for the egress socket", cfg.Entrypoint, cfg.OpenStdin, cfg.StdinOnce, hc.Tmpfs)
	}
	copied := f.copied["sandboxed-r1-copy:/copy/1"]
	if !slices.Contains(copied, "in.txt 5") || slices.ContainsFunc(copied, func(e string) bool { return strings.Contains(e, ".env") }) {
		t.Errorf("grant copied as %q: want in.txt and never .env", copied)
	}
	if hollow := f.copied["sandboxed-r1-copy:/copy"]; !slices.Contains(hollow, "1/.env 0") {
		t.Errorf("mount points %q: want an empty 1/.env", hollow)
	}
	if err := sb.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"volume create sandboxed-r1", "create sandboxed-r1-copy",
		"copy sandboxed-r1-copy /copy", "copy sandboxed-r1-copy /copy/0", "copy sandboxed-r1-copy /copy/1", "copy sandboxed-r1-copy /copy",
		"remove sandboxed-r1-copy force=true volumes=true",
		"create sandboxed-r1", "attach cid-sandboxed-r1", "start cid-sandboxed-r1",
		"remove cid-sandboxed-r1 force=true volumes=true", "volume remove sandboxed-r1 force=true",
	}
	if got := f.Calls(); !reflect.DeepEqual(got, want) {
		t.Errorf("engine calls\n%q\nwant\n%q", got, want)
	}
	if in.closed != 1 {
		t.Errorf("init closed %d times", in.closed)
	}
}

// A write grant the engine cannot see is refused before anything is
// made; a copy that fails leaves nothing behind.
func TestStartCopiedRefusesAndCleansUp(t *testing.T) {
	f := newFakeEngine()
	b := copiedBackend(t, f, newFakeInit())
	p := planIn(t)
	dir := t.TempDir()
	p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: "/out", Type: "bind", Source: dir, Options: []string{"rbind", "rw"}})
	if err := b.Check(context.Background(), p); !errors.Is(err, isolation.ErrUnsupported) || !strings.Contains(err.Error(), dir) {
		t.Errorf("Check: %v, want the write grant refused by name", err)
	}
	if _, err := b.Start(context.Background(), p); !errors.Is(err, isolation.ErrUnsupported) {
		t.Errorf("Start: %v", err)
	}
	if calls := f.Calls(); slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, "create") || strings.HasPrefix(c, "volume") }) {
		t.Errorf("refused run made %q", calls)
	}

	// A grant over the cap is refused with the fix, not blamed on the
	// engine.
	f = newFakeEngine()
	b = copiedBackend(t, f, newFakeInit())
	p.Spec.Mounts[len(p.Spec.Mounts)-1].Options = []string{"rbind", "ro"}
	must(t, os.WriteFile(filepath.Join(dir, "big"), []byte("12345"), 0o644))
	defer func(n int64) { copyMaxBytes = n }(copyMaxBytes)
	copyMaxBytes = 3
	if _, err := b.Start(context.Background(), p); !errors.Is(err, isolation.ErrUnsupported) || !strings.Contains(err.Error(), "more than 3 bytes") || !strings.Contains(err.Error(), "same path") {
		t.Errorf("Start over the cap: %v", err)
	}
	if !slices.Contains(f.removed, "sandboxed-r1-copy") || !slices.Equal(f.volumesRemoved, []string{"sandboxed-r1"}) {
		t.Errorf("after a copy over the cap: removed %q, volumes removed %q", f.removed, f.volumesRemoved)
	}
	copyMaxBytes = 1 << 30

	f = newFakeEngine()
	f.copyErr = errors.New("disk full")
	b = copiedBackend(t, f, newFakeInit())
	if _, err := b.Start(context.Background(), p); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Start: %v", err)
	}
	if !slices.Contains(f.removed, "sandboxed-r1-copy") || !slices.Equal(f.volumesRemoved, []string{"sandboxed-r1"}) {
		t.Errorf("after a failed copy: removed %q, volumes removed %q", f.removed, f.volumesRemoved)
	}

	// A staging container whose create answer was lost (Ctrl-C) is
	// removed by name, then the volume.
	f = newFakeEngine()
	f.createErr = context.Canceled
	b = copiedBackend(t, f, newFakeInit())
	if _, err := b.Start(context.Background(), p); err == nil {
		t.Fatal("Start with a lost create answer: no error")
	}
	if !slices.Contains(f.removed, "sandboxed-r1-copy") || !slices.Equal(f.volumesRemoved, []string{"sandboxed-r1"}) {
		t.Errorf("after a lost create answer: removed %q, volumes removed %q", f.removed, f.volumesRemoved)
	}
}

// GC removes the volumes of runs that are not live, and without a
// liveness answer those of runs no container is left of.
func TestGCVolumes(t *testing.T) {
	f := newFakeEngine()
	f.list = []container.Summary{{ID: "c", Names: []string{"/sandboxed-busy"}, State: "running", Labels: map[string]string{isolation.AnnotationRunID: "busy"}}}
	f.volumeList = []*volume.Volume{
		{Name: "sandboxed-busy", Labels: map[string]string{isolation.AnnotationRunID: "busy"}},
		{Name: "sandboxed-gone", Labels: map[string]string{isolation.AnnotationRunID: "gone"}},
	}
	f.list[0].Created = 1 << 40 // just made: spared without liveness answers
	b := newTestBackend(t, f, newFakeInit(), nil)
	got, err := b.GC(context.Background(), nil)
	if err != nil || !slices.Equal(f.volumesRemoved, []string{"sandboxed-gone"}) || !slices.Contains(got, "volume sandboxed-gone (run gone)") {
		t.Errorf("GC without keep: removed %q, reported %q, %v", f.volumesRemoved, got, err)
	}
	f.volumesRemoved = nil
	if _, err := b.GC(context.Background(), func(id string) bool { return id == "gone" }); err != nil || !slices.Equal(f.volumesRemoved, []string{"sandboxed-busy"}) {
		t.Errorf("GC with keep: removed %q, %v", f.volumesRemoved, err)
	}
}

// doctor says when the engine runs this process's container, and what
// that means for grants.
func TestProbeSaysEngineOutside(t *testing.T) {
	b := copiedBackend(t, newFakeEngine(), newFakeInit())
	r, err := b.Probe(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(r.Checks(), func(c hostsetup.Check) bool { return c.Name == "engine's paths" })
	if r.Outside != "ci-job" || i < 0 || !strings.Contains(r.Checks()[i].Detail, "copied into a volume") || !strings.Contains(r.Checks()[i].Fix, "same path") {
		t.Errorf("Probe outside %q, checks %+v", r.Outside, r.Checks())
	}
}
