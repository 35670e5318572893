package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"

	sandboxed "github.com/sandboxed-dev/sandboxed"
	"github.com/sandboxed-dev/sandboxed/internal/dockerapi"
	"github.com/sandboxed-dev/sandboxed/isolation"
)

// DefaultImage is the runner image the container tier uses when a plan
// names none, and the name `sandboxed images build` tags by default.
const DefaultImage = isolation.DefaultImage

// BuildCommand is the command that builds DefaultImage; error messages
// quote it. BuildCommandFor gives the command for another name.
const BuildCommand = "sandboxed images build"

// Labels on every image this package makes.
const (
	// LabelKind is "runner" on runner images and "base" on imported bases.
	LabelKind = "dev.sandboxed.image"
	// LabelHash is the content hash of a runner image: Dockerfile.runner,
	// the package list and the base image id.
	LabelHash = "dev.sandboxed.image.hash"
	// LabelBase is the id of the image a runner image was built on.
	LabelBase = "dev.sandboxed.image.base"
	// LabelBaseRef is the reference the runner was built FROM, for display.
	LabelBaseRef = "dev.sandboxed.image.base-ref"
)

// Kinds of images, the values of LabelKind.
const (
	KindRunner = "runner"
	KindBase   = "base"
)

// Suite is the Debian release of the locally made base.
const Suite = "bookworm"

// Packages are the Debian packages of the locally made base: what tools find
// inside the runner image besides the essential set of a minbase system.
var Packages = []string{
	"bash", "ca-certificates", "coreutils", "curl", "findutils",
	"grep", "jq", "python3", "sed", "wget",
}

// BuildCommandFor returns the command that builds the image name.
func BuildCommandFor(name string) string {
	if name == "" || name == DefaultImage {
		return BuildCommand
	}
	return BuildCommand + " --image " + name
}

// Event is one step of build progress, for display.
type Event struct {
	Stage   string `json:"stage"` // check, debootstrap, import, build, done
	Message string `json:"message"`
}

// String renders the event as one line for a terminal: "stage: message".
func (e Event) String() string { return e.Stage + ": " + e.Message }

// BuildOptions say what to build. The zero value builds DefaultImage on a
// locally made Debian base.
type BuildOptions struct {
	// Image is the name to tag; DefaultImage when empty.
	Image string
	// Base is an existing image to build on instead of making one.
	Base string
	// CacheDir holds the root filesystem tarballs of made bases; when
	// empty, $XDG_CACHE_HOME/sandboxed, else ~/.cache/sandboxed.
	CacheDir string
	// Mirror is the Debian mirror for debootstrap; when empty, the first
	// bookworm main entry of /etc/apt/sources.list and sources.list.d.
	Mirror string
	// Force rebuilds even when the image is up to date.
	Force bool
	// Progress, when set, receives progress as it happens.
	Progress func(Event)
}

// Result is what Build did.
type Result struct {
	Image   string        `json:"image"`
	ID      string        `json:"id"`
	Hash    string        `json:"hash"`
	Base    string        `json:"base"`
	BaseID  string        `json:"base_id"`
	Built   bool          `json:"built"` // false: it was up to date
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Image describes one image this package made.
type Image struct {
	ID       string    `json:"id"`
	Tags     []string  `json:"tags"`
	Kind     string    `json:"kind"`
	Hash     string    `json:"hash,omitempty"`
	BaseID   string    `json:"base_id,omitempty"`
	Created  time.Time `json:"created"`
	Size     int64     `json:"size"`
	UpToDate bool      `json:"up_to_date"`
}

// engine is the part of the Docker client this package uses.
type engine interface {
	ImageInspect(ctx context.Context, ref string) (image.InspectResponse, error)
	ImageList(ctx context.Context, opts image.ListOptions) ([]image.Summary, error)
	ImageImport(ctx context.Context, src image.ImportSource, ref string, opts image.ImportOptions) (io.ReadCloser, error)
	ImageBuild(ctx context.Context, buildContext io.Reader, opts build.ImageBuildOptions) (build.ImageBuildResponse, error)
	ImageRemove(ctx context.Context, ref string, opts image.RemoveOptions) ([]image.DeleteResponse, error)
}

// Connect returns a Docker client for DOCKER_HOST (and the other DOCKER_*
// variables) with API version negotiation. It makes no request.
func Connect() (*dockerapi.Client, error) {
	c, err := dockerapi.FromEnv()
	if err != nil {
		return nil, fmt.Errorf("configure docker client: %w", err)
	}
	return c, nil
}

// EngineError wraps an engine error: when the engine cannot be reached it
// becomes ErrEngine with how to fix it.
func EngineError(op string, err error) error {
	if err == nil {
		return nil
	}
	if dockerapi.IsConnectionFailed(err) {
		host := dockerapi.DefaultHost
		return fmt.Errorf("%s: %w at %s: %s: %v", op, ErrEngine, host, dockerapi.EngineFix(err), err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// RunnerHash is the content hash of a runner image built on baseID.
func RunnerHash(baseID string) string {
	h := sha256.New()
	h.Write(sandboxed.DockerfileRunner)
	h.Write([]byte{0})
	pkgs := append([]string(nil), Packages...)
	sort.Strings(pkgs)
	h.Write([]byte(strings.Join(pkgs, ",")))
	h.Write([]byte{0})
	h.Write([]byte(baseID))
	return hex.EncodeToString(h.Sum(nil))
}

// Build builds the runner image, unless it is already up to date.
func Build(ctx context.Context, opts BuildOptions) (*Result, error) {
	c, err := Connect()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	b := &builder{api: c, opts: opts, makeRootfs: makeRootfs}
	return b.build(ctx)
}

// List returns the images this package made, runners first.
func List(ctx context.Context) ([]Image, error) {
	c, err := Connect()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return list(ctx, c)
}

// Inspect describes the image name, which must be a runner image. It fails
// with ErrNotFound, naming the command that builds it, when it is missing.
func Inspect(ctx context.Context, name string) (*Image, error) {
	c, err := Connect()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return inspect(ctx, c, name)
}

// NotFoundError is the error for a missing image name.
func NotFoundError(name string) error {
	if name == "" {
		name = DefaultImage
	}
	return fmt.Errorf("find image %s: %w on the Docker engine: run: %s", name, ErrNotFound, BuildCommandFor(name))
}

func inspect(ctx context.Context, api engine, name string) (*Image, error) {
	if name == "" {
		name = DefaultImage
	}
	ii, err := api.ImageInspect(ctx, name)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, NotFoundError(name)
		}
		return nil, EngineError("inspect image "+name, err)
	}
	im := FromInspect(ii)
	return &im, nil
}

// FromInspect describes an image from the engine's inspect answer; Kind is
// empty for images this package did not make.
func FromInspect(ii image.InspectResponse) Image {
	im := Image{ID: ii.ID, Tags: ii.RepoTags, Size: ii.Size}
	if t, err := time.Parse(time.RFC3339Nano, ii.Created); err == nil {
		im.Created = t
	}
	var labels map[string]string
	if ii.Config != nil {
		labels = ii.Config.Labels
	}
	im.Kind = labels[LabelKind]
	im.Hash = labels[LabelHash]
	im.BaseID = labels[LabelBase]
	im.UpToDate = upToDate(labels)
	return im
}

func upToDate(labels map[string]string) bool {
	switch labels[LabelKind] {
	case KindRunner:
		return labels[LabelHash] != "" && labels[LabelHash] == RunnerHash(labels[LabelBase])
	case KindBase:
		return labels[LabelHash] == baseKey()
	}
	return false
}

func list(ctx context.Context, api engine) ([]Image, error) {
	sums, err := api.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelKind))})
	if err != nil {
		return nil, EngineError("list images", err)
	}
	out := make([]Image, 0, len(sums))
	for _, s := range sums {
		out = append(out, Image{
			ID:       s.ID,
			Tags:     s.RepoTags,
			Kind:     s.Labels[LabelKind],
			Hash:     s.Labels[LabelHash],
			BaseID:   s.Labels[LabelBase],
			Created:  time.Unix(s.Created, 0).UTC(),
			Size:     s.Size,
			UpToDate: upToDate(s.Labels),
		})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind == KindRunner
		}
		return out[i].Created.After(out[j].Created)
	})
	return out, nil
}

type builder struct {
	api        engine
	opts       BuildOptions
	makeRootfs func(ctx context.Context, tarball, mirror string, progress func(Event)) error
}

func (b *builder) progress(stage, format string, args ...any) {
	if b.opts.Progress != nil {
		b.opts.Progress(Event{Stage: stage, Message: fmt.Sprintf(format, args...)})
	}
}

func (b *builder) build(ctx context.Context) (*Result, error) {
	start := time.Now()
	name := b.opts.Image
	if name == "" {
		name = DefaultImage
	}
	res := &Result{Image: name}

	baseRef, baseID, err := b.base(ctx)
	if err != nil {
		return nil, err
	}
	res.Base, res.BaseID = baseRef, baseID
	res.Hash = RunnerHash(baseID)

	var oldID string
	switch cur, err := b.api.ImageInspect(ctx, name); {
	case err == nil:
		oldID = cur.ID
		if cur.Config != nil && cur.Config.Labels[LabelHash] == res.Hash && !b.opts.Force {
			res.ID = cur.ID
			res.Elapsed = time.Since(start)
			b.progress("done", "%s is up to date (%s)", name, shortID(cur.ID))
			return res, nil
		}
	case cerrdefs.IsNotFound(err):
	default:
		return nil, EngineError("inspect image "+name, err)
	}

	b.progress("build", "building %s from Dockerfile.runner on %s", name, baseRef)
	id, err := b.buildRunner(ctx, name, baseRef, baseID, res.Hash)
	if err != nil {
		return nil, err
	}
	res.ID, res.Built = id, true
	if oldID != "" && oldID != id {
		// The old image lost its tag; remove it unless something uses it.
		_, _ = b.api.ImageRemove(ctx, oldID, image.RemoveOptions{PruneChildren: true})
	}
	res.Elapsed = time.Since(start)
	b.progress("done", "built %s (%s) in %s", name, shortID(id), res.Elapsed.Round(time.Second))
	return res, nil
}

// base returns the reference and id of the image to build on, making and
// importing the Debian base when none is given and none is cached.
func (b *builder) base(ctx context.Context) (ref, id string, err error) {
	if b.opts.Base != "" {
		ii, err := b.api.ImageInspect(ctx, b.opts.Base)
		if err != nil {
			if cerrdefs.IsNotFound(err) {
				return "", "", fmt.Errorf("find base image %s: %w on the Docker engine: load it first or omit --base to make a Debian base locally", b.opts.Base, ErrNotFound)
			}
			return "", "", EngineError("inspect base image "+b.opts.Base, err)
		}
		return b.opts.Base, ii.ID, nil
	}

	key := baseKey()
	ref = BaseImageName()
	ii, err := b.api.ImageInspect(ctx, ref)
	switch {
	case err == nil && ii.Config != nil && ii.Config.Labels[LabelHash] == key:
		b.progress("check", "base %s present (%s)", ref, shortID(ii.ID))
		return ref, ii.ID, nil
	case err == nil, cerrdefs.IsNotFound(err):
	default:
		return "", "", EngineError("inspect base image "+ref, err)
	}

	cache, err := cacheDir(b.opts.CacheDir)
	if err != nil {
		return "", "", err
	}
	unlock, err := lockCache(cache)
	if err != nil {
		return "", "", err
	}
	defer unlock()
	// Another build may have imported the base while this one waited.
	if ii, err := b.api.ImageInspect(ctx, ref); err == nil && ii.Config != nil && ii.Config.Labels[LabelHash] == key {
		return ref, ii.ID, nil
	}
	tarball := rootfsTarball(cache)
	if _, err := statFile(tarball); err != nil {
		mirror := b.opts.Mirror
		if mirror == "" {
			if mirror, err = DetectMirror(Suite); err != nil {
				return "", "", err
			}
		}
		b.progress("debootstrap", "making a Debian %s root filesystem from %s (takes minutes; cached in %s)", Suite, mirror, cache)
		if err := b.makeRootfs(ctx, tarball, mirror, b.opts.Progress); err != nil {
			return "", "", err
		}
	} else {
		b.progress("check", "using cached root filesystem %s", tarball)
	}

	b.progress("import", "importing %s as %s", tarball, ref)
	id, err = b.importBase(ctx, tarball, ref, key)
	if err != nil {
		return "", "", err
	}
	return ref, id, nil
}

func (b *builder) importBase(ctx context.Context, tarball, ref, key string) (string, error) {
	f, err := openFile(tarball)
	if err != nil {
		return "", fmt.Errorf("open root filesystem %s: %w", tarball, err)
	}
	defer f.Close()
	rc, err := b.api.ImageImport(ctx, image.ImportSource{Source: f, SourceName: "-"}, ref, image.ImportOptions{
		Message: "sandboxed runner base: debian " + Suite + " minbase",
		Changes: []string{
			fmt.Sprintf("LABEL %s=%s %s=%s", LabelKind, KindBase, LabelHash, key),
			"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		},
	})
	if err != nil {
		return "", EngineError("import base image "+ref, err)
	}
	if err := readMessages(rc, nil); err != nil {
		rc.Close()
		return "", fmt.Errorf("import base image %s: %w: %w", ref, ErrBuild, err)
	}
	rc.Close()
	ii, err := b.api.ImageInspect(ctx, ref)
	if err != nil {
		return "", EngineError("inspect imported base "+ref, err)
	}
	return ii.ID, nil
}

func (b *builder) buildRunner(ctx context.Context, name, baseRef, baseID, hash string) (string, error) {
	bctx, err := buildContext(sandboxed.DockerfileRunner)
	if err != nil {
		return "", err
	}
	baseArg := baseRef
	resp, err := b.api.ImageBuild(ctx, bctx, build.ImageBuildOptions{
		Tags:        []string{name},
		Dockerfile:  "Dockerfile",
		BuildArgs:   map[string]*string{"BASE": &baseArg},
		Labels:      map[string]string{LabelKind: KindRunner, LabelHash: hash, LabelBase: baseID, LabelBaseRef: baseRef},
		Remove:      true,
		ForceRemove: true,
		NetworkMode: "none",
		Version:     build.BuilderV1,
	})
	if err != nil {
		return "", EngineError("build image "+name, err)
	}
	defer resp.Body.Close()
	if err := readMessages(resp.Body, func(line string) { b.progress("build", "%s", line) }); err != nil {
		return "", fmt.Errorf("build image %s: %w: %w", name, ErrBuild, err)
	}
	ii, err := b.api.ImageInspect(ctx, name)
	if err != nil {
		return "", EngineError("inspect built image "+name, err)
	}
	if ii.Config == nil || ii.Config.Labels[LabelHash] != hash {
		return "", fmt.Errorf("build image %s: %w: the tagged image does not carry the expected hash", name, ErrBuild)
	}
	return ii.ID, nil
}

// BaseImageName is the name of the locally made base image; its tag names
// the suite and the package-list key, so a changed list makes a new base.
func BaseImageName() string {
	return "sandboxed-runner-base:" + Suite + "-" + baseKey()[:12]
}

// baseKey identifies a made base: suite, variant and package list.
func baseKey() string {
	pkgs := append([]string(nil), Packages...)
	sort.Strings(pkgs)
	sum := sha256.Sum256([]byte("debootstrap\x00minbase\x00" + Suite + "\x00" + strings.Join(pkgs, ",")))
	return hex.EncodeToString(sum[:])
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
