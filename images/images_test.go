package images

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"

	sandboxed "github.com/sandboxed-dev/sandboxed"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

func TestMirrorOneLine(t *testing.T) {
	text := `# comment
deb-src http://src.example/debian bookworm main
deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm-updates main
deb http://other.example/debian bookworm contrib
deb [ trusted=yes ] http://mirror.example/debian bookworm main contrib # trailing
`
	if got := mirrorOneLine(text, "bookworm"); got != "http://mirror.example/debian" {
		t.Errorf("mirrorOneLine = %q", got)
	}
	if got := mirrorOneLine(text, "trixie"); got != "" {
		t.Errorf("mirrorOneLine(trixie) = %q, want none", got)
	}
}

func TestMirrorDeb822(t *testing.T) {
	text := `Types: deb
URIs: http://security.example/debian-security
Suites: bookworm-security
Components: main

Types: deb
URIs: http://disabled.example/debian
Suites: bookworm
Components: main
Enabled: no

Types: deb deb-src
# http://snapshot.example/archive
URIs: http://deb.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
`
	if got := mirrorDeb822(text, "bookworm"); got != "http://deb.example/debian" {
		t.Errorf("mirrorDeb822 = %q", got)
	}
}

func TestRunnerHash(t *testing.T) {
	a, b := RunnerHash("sha256:aaa"), RunnerHash("sha256:bbb")
	if a == b || len(a) != 64 || a != RunnerHash("sha256:aaa") {
		t.Errorf("RunnerHash: %q %q", a, b)
	}
	labels := map[string]string{LabelKind: KindRunner, LabelBase: "sha256:aaa", LabelHash: a}
	if !upToDate(labels) {
		t.Error("an image labelled with the current hash is not up to date")
	}
	labels[LabelHash] = b
	if upToDate(labels) {
		t.Error("an image with another hash is up to date")
	}
	if !strings.HasPrefix(BaseImageName(), "sandboxed-runner-base:"+Suite+"-") {
		t.Errorf("BaseImageName = %q", BaseImageName())
	}
}

func TestBuildCommandFor(t *testing.T) {
	if BuildCommandFor("") != "sandboxed images build" || BuildCommandFor(DefaultImage) != BuildCommand {
		t.Error("default image command")
	}
	if got := BuildCommandFor("x/y:1"); got != "sandboxed images build --image x/y:1" {
		t.Errorf("BuildCommandFor = %q", got)
	}
	err := NotFoundError("")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "run: sandboxed images build") {
		t.Errorf("NotFoundError = %v", err)
	}
}

func TestBuildContext(t *testing.T) {
	r, err := buildContext(sandboxed.DockerfileRunner)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(r)
	h, err := tr.Next()
	if err != nil || h.Name != "Dockerfile" {
		t.Fatalf("first entry %v, %v", h, err)
	}
	body, _ := io.ReadAll(tr)
	if string(body) != string(sandboxed.DockerfileRunner) {
		t.Error("Dockerfile content differs")
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("build context has more than the Dockerfile: %v", err)
	}
}

// TestDockerfileRunner checks the promises of Dockerfile.runner.
func TestDockerfileRunner(t *testing.T) {
	df := string(sandboxed.DockerfileRunner)
	for _, want := range []string{"ARG BASE", "FROM ${BASE}", "USER 65534:65534", "bash", "curl", "jq", "python3", "ca-certificates"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile.runner lacks %q", want)
		}
	}
	for _, bad := range []string{"apt-get", "apk ", "pip ", "wget ", "ADD http"} {
		if strings.Contains(df, bad) {
			t.Errorf("Dockerfile.runner has %q: no step may need the network", bad)
		}
	}
}

func TestReadMessages(t *testing.T) {
	var lines []string
	err := readMessages(strings.NewReader(`{"stream":"Step 1/2\n"}{"status":"ok"}`), func(l string) { lines = append(lines, l) })
	if err != nil || strings.Join(lines, "|") != "Step 1/2|ok" {
		t.Errorf("lines %q, err %v", lines, err)
	}
	err = readMessages(strings.NewReader(`{"stream":"x"}{"errorDetail":{"message":"boom"},"error":"boom"}`), nil)
	if err == nil || err.Error() != "boom" {
		t.Errorf("error stream: %v", err)
	}
}

// fakeEngine is a hand-written engine holding images by reference.
type fakeEngine struct {
	mu      sync.Mutex
	images  map[string]image.InspectResponse
	calls   []string
	buildFn func(opts build.ImageBuildOptions) error
}

func (f *fakeEngine) record(s string) { f.mu.Lock(); f.calls = append(f.calls, s); f.mu.Unlock() }

func (f *fakeEngine) ImageInspect(_ context.Context, ref string) (image.InspectResponse, error) {
	f.record("inspect " + ref)
	if ii, ok := f.images[ref]; ok {
		return ii, nil
	}
	return image.InspectResponse{}, fmt.Errorf("no such image %s: %w", ref, cerrdefs.ErrNotFound)
}

func (f *fakeEngine) ImageList(context.Context, image.ListOptions) ([]image.Summary, error) {
	var out []image.Summary
	for _, ii := range f.images {
		out = append(out, image.Summary{ID: ii.ID, Labels: ii.Config.Labels})
	}
	return out, nil
}

func (f *fakeEngine) ImageImport(_ context.Context, src image.ImportSource, ref string, opts image.ImportOptions) (io.ReadCloser, error) {
	f.record("import " + ref)
	_, _ = io.Copy(io.Discard, src.Source)
	labels := map[string]string{}
	for _, c := range opts.Changes {
		if rest, ok := strings.CutPrefix(c, "LABEL "); ok {
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				labels[k] = v
			}
		}
	}
	f.images[ref] = image.InspectResponse{ID: "sha256:base", Config: &dockerspec.DockerOCIImageConfig{}}
	f.images[ref].Config.Labels = labels
	return io.NopCloser(strings.NewReader(`{"status":"sha256:base"}`)), nil
}

func (f *fakeEngine) ImageBuild(_ context.Context, r io.Reader, opts build.ImageBuildOptions) (build.ImageBuildResponse, error) {
	f.record("build " + *opts.BuildArgs["BASE"])
	_, _ = io.Copy(io.Discard, r)
	if f.buildFn != nil {
		if err := f.buildFn(opts); err != nil {
			return build.ImageBuildResponse{Body: io.NopCloser(strings.NewReader(`{"error":"` + err.Error() + `"}`))}, nil
		}
	}
	ii := image.InspectResponse{ID: "sha256:runner-" + opts.Labels[LabelHash][:8], Config: &dockerspec.DockerOCIImageConfig{}}
	ii.Config.Labels = opts.Labels
	f.images[opts.Tags[0]] = ii
	return build.ImageBuildResponse{Body: io.NopCloser(strings.NewReader(`{"stream":"Successfully built\n"}`))}, nil
}

func (f *fakeEngine) ImageRemove(_ context.Context, ref string, _ image.RemoveOptions) ([]image.DeleteResponse, error) {
	f.record("remove " + ref)
	return nil, nil
}

func TestBuildMakesBaseOnceAndSkipsWhenUpToDate(t *testing.T) {
	f := &fakeEngine{images: map[string]image.InspectResponse{}}
	cache := t.TempDir()
	made := 0
	var events []Event
	b := &builder{api: f, opts: BuildOptions{CacheDir: cache, Mirror: "http://mirror.example/debian", Progress: func(e Event) { events = append(events, e) }},
		makeRootfs: func(_ context.Context, tarball, mirror string, _ func(Event)) error {
			made++
			if mirror != "http://mirror.example/debian" {
				t.Errorf("mirror %q", mirror)
			}
			return os.WriteFile(tarball, []byte("rootfs"), 0o644)
		}}
	res, err := b.build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Built || made != 1 || res.Base != BaseImageName() || res.BaseID != "sha256:base" || res.Hash != RunnerHash("sha256:base") {
		t.Fatalf("first build: %+v, rootfs made %d times", res, made)
	}
	if len(events) == 0 || events[len(events)-1].Stage != "done" {
		t.Errorf("progress events %+v", events)
	}

	// Second build: base and runner are up to date, nothing is made.
	f.calls = nil
	res2, err := b.build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res2.Built || res2.ID != res.ID || made != 1 {
		t.Errorf("second build: %+v, rootfs made %d times", res2, made)
	}
	for _, c := range f.calls {
		if strings.HasPrefix(c, "build") || strings.HasPrefix(c, "import") {
			t.Errorf("up-to-date build called %q", c)
		}
	}

	// Base image gone but tarball cached: import again, no debootstrap.
	delete(f.images, BaseImageName())
	if _, err := b.build(context.Background()); err != nil {
		t.Fatal(err)
	}
	if made != 1 {
		t.Errorf("rootfs made again though cached in %s", cache)
	}

	// Force rebuilds.
	b.opts.Force = true
	f.calls = nil
	res4, err := b.build(context.Background())
	if err != nil || !res4.Built {
		t.Errorf("forced build: %+v, %v", res4, err)
	}
}

func TestBuildOnGivenBase(t *testing.T) {
	f := &fakeEngine{images: map[string]image.InspectResponse{"debian:12": {ID: "sha256:deb", Config: &dockerspec.DockerOCIImageConfig{}}}}
	b := &builder{api: f, opts: BuildOptions{Base: "debian:12", Image: "my/runner:1", CacheDir: t.TempDir()},
		makeRootfs: func(context.Context, string, string, func(Event)) error {
			t.Fatal("made a rootfs with --base")
			return nil
		}}
	res, err := b.build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Image != "my/runner:1" || res.BaseID != "sha256:deb" || !res.Built {
		t.Errorf("build on base: %+v", res)
	}
	if got := f.images["my/runner:1"].Config.Labels[LabelBase]; got != "sha256:deb" {
		t.Errorf("runner base label %q", got)
	}

	b.opts.Base = "missing:1"
	if _, err := b.build(context.Background()); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing base: %v", err)
	}

	b.opts.Base = "debian:12"
	b.opts.Force = true
	f.buildFn = func(build.ImageBuildOptions) error { return errors.New("runner base lacks jq") }
	if _, err := b.build(context.Background()); !errors.Is(err, ErrBuild) || !strings.Contains(err.Error(), "lacks jq") {
		t.Errorf("failing build: %v", err)
	}
}

func TestListAndInspect(t *testing.T) {
	f := &fakeEngine{images: map[string]image.InspectResponse{}}
	b := &builder{api: f, opts: BuildOptions{CacheDir: t.TempDir(), Mirror: "m"},
		makeRootfs: func(_ context.Context, tarball, _ string, _ func(Event)) error {
			return os.WriteFile(tarball, nil, 0o644)
		}}
	if _, err := b.build(context.Background()); err != nil {
		t.Fatal(err)
	}
	list, err := list(context.Background(), f)
	if err != nil || len(list) != 2 || list[0].Kind != KindRunner || !list[0].UpToDate || list[1].Kind != KindBase || !list[1].UpToDate {
		t.Errorf("list = %+v, %v", list, err)
	}
	im, err := inspect(context.Background(), f, "")
	if err != nil || !im.UpToDate {
		t.Errorf("inspect = %+v, %v", im, err)
	}
	if _, err := inspect(context.Background(), f, "nope:1"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), BuildCommandFor("nope:1")) {
		t.Errorf("inspect missing: %v", err)
	}
}

func TestCacheDir(t *testing.T) {
	x := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", x)
	d, err := cacheDir("")
	if err != nil || d != filepath.Join(x, "sandboxed") {
		t.Errorf("cacheDir = %q, %v", d, err)
	}
	if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("cache dir mode: %v %v", fi, err)
	}
}

func TestRunStreamsLinesAndKeepsTheTail(t *testing.T) {
	var lines []string
	err := run(context.Background(), nil, func(l string) { lines = append(lines, l) }, "sh", "-c", "echo one; echo two >&2")
	if err != nil || strings.Join(lines, ",") != "one,two" && strings.Join(lines, ",") != "two,one" {
		t.Errorf("lines %q, err %v", lines, err)
	}
	err = run(context.Background(), nil, nil, "sh", "-c", "echo why; exit 3")
	if err == nil || !strings.Contains(err.Error(), "why") {
		t.Errorf("failing command: %v, want its output in the error", err)
	}
}

// TestMakeRootfsNeedsRoot: a user is refused with the way out (--base).
// As root the call runs as a user on a thread of its own, so the refusal
// shows on root machines too.
func TestMakeRootfsNeedsRoot(t *testing.T) {
	testenv.Unprivileged(t, func() {
		err := makeRootfs(context.Background(), filepath.Join(t.TempDir(), "r.tar"), "http://m", nil)
		if !errors.Is(err, ErrBuild) || !strings.Contains(err.Error(), "--base") {
			t.Errorf("makeRootfs as non-root: %v", err)
		}
	})
}
