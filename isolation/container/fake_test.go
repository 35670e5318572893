package container

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/api/types/volume"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// fakeEngine is a hand-written engine: it records calls and answers from
// its fields.
type fakeEngine struct {
	mu    sync.Mutex
	calls []string

	createErr, startErr, removeErr, killErr, imageErr, infoErr, updateErr, inspectErr error
	imageID                                                                           string // "sha256:img" when empty
	updated                                                                           []container.Resources
	info                                                                              system.Info
	state                                                                             container.State
	list                                                                              []container.Summary

	created struct {
		cfg  *container.Config
		hc   *container.HostConfig
		name string
	}
	removed []string
	killed  []string
	host    string

	// volumes made and removed, and what was copied where (container
	// and path -> the tar's entries, name and size).
	volumes, volumesRemoved []string
	volumeList              []*volume.Volume
	copied                  map[string][]string
	copyErr                 error
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{
		info: system.Info{
			SecurityOptions: []string{"name=seccomp,profile=default"},
			Runtimes:        map[string]system.RuntimeWithStatus{"runc": {}},
		},
		state: container.State{Running: true, Pid: 0},
	}
}

func (f *fakeEngine) record(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}

func (f *fakeEngine) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeEngine) ContainerCreate(_ context.Context, cfg *container.Config, hc *container.HostConfig, _ *network.NetworkingConfig, _ *ocispec.Platform, name string) (container.CreateResponse, error) {
	f.record("create " + name)
	if f.createErr != nil {
		return container.CreateResponse{}, f.createErr
	}
	f.created.cfg, f.created.hc, f.created.name = cfg, hc, name
	return container.CreateResponse{ID: "cid-" + name}, nil
}

func (f *fakeEngine) ContainerStart(_ context.Context, id string, _ container.StartOptions) error {
	f.record("start " + id)
	return f.startErr
}

func (f *fakeEngine) ContainerKill(_ context.Context, id, sig string) error {
	f.record("kill " + id + " " + sig)
	f.mu.Lock()
	f.killed = append(f.killed, id)
	f.mu.Unlock()
	return f.killErr
}

func (f *fakeEngine) ContainerRemove(_ context.Context, id string, o container.RemoveOptions) error {
	f.record(fmt.Sprintf("remove %s force=%v volumes=%v", id, o.Force, o.RemoveVolumes))
	f.mu.Lock()
	f.removed = append(f.removed, id)
	f.mu.Unlock()
	return f.removeErr
}

func (f *fakeEngine) ContainerInspect(_ context.Context, id string) (container.InspectResponse, error) {
	f.record("inspect " + id)
	if f.inspectErr != nil {
		return container.InspectResponse{}, f.inspectErr
	}
	st := f.state
	return container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{ID: id, State: &st}}, nil
}

func (f *fakeEngine) ContainerList(_ context.Context, _ container.ListOptions) ([]container.Summary, error) {
	f.record("list")
	return f.list, nil
}

func (f *fakeEngine) ImageInspect(_ context.Context, ref string) (image.InspectResponse, error) {
	f.record("image " + ref)
	if f.imageErr != nil {
		return image.InspectResponse{}, f.imageErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.imageID != "" {
		return image.InspectResponse{ID: f.imageID}, nil
	}
	return image.InspectResponse{ID: "sha256:img"}, nil
}

func (f *fakeEngine) ContainerUpdate(_ context.Context, id string, u container.UpdateConfig) (container.UpdateResponse, error) {
	f.record("update " + id)
	f.mu.Lock()
	f.updated = append(f.updated, u.Resources)
	f.mu.Unlock()
	return container.UpdateResponse{}, f.updateErr
}

func (f *fakeEngine) Info(context.Context) (system.Info, error) {
	f.record("info")
	return f.info, f.infoErr
}

func (f *fakeEngine) ServerVersion(context.Context) (types.Version, error) {
	return types.Version{Version: "20.10.24", APIVersion: "1.41"}, nil
}
func (f *fakeEngine) ClientVersion() string { return "1.41" }

// DaemonHost is the system engine's socket unless host is set: an engine
// on this kernel, not one in a VM (mayRunInVM).
func (f *fakeEngine) DaemonHost() string {
	if f.host != "" {
		return f.host
	}
	return "unix:///var/run/docker.sock"
}

func (f *fakeEngine) VolumeCreate(_ context.Context, o volume.CreateOptions) (volume.Volume, error) {
	f.record("volume create " + o.Name)
	f.mu.Lock()
	f.volumes = append(f.volumes, o.Name)
	f.mu.Unlock()
	return volume.Volume{Name: o.Name, Driver: o.Driver, Labels: o.Labels, Mountpoint: "/var/lib/docker/volumes/" + o.Name + "/_data"}, nil
}

func (f *fakeEngine) VolumeRemove(_ context.Context, id string, force bool) error {
	f.record(fmt.Sprintf("volume remove %s force=%v", id, force))
	f.mu.Lock()
	f.volumesRemoved = append(f.volumesRemoved, id)
	f.mu.Unlock()
	return nil
}

func (f *fakeEngine) VolumeList(context.Context, volume.ListOptions) (volume.ListResponse, error) {
	f.record("volume list")
	return volume.ListResponse{Volumes: f.volumeList}, nil
}

// CopyToContainer records the entries of the tar it is given.
func (f *fakeEngine) CopyToContainer(_ context.Context, id, dst string, content io.Reader, _ container.CopyToContainerOptions) error {
	f.record("copy " + id + " " + dst)
	if f.copyErr != nil {
		return f.copyErr
	}
	var names []string
	tr := tar.NewReader(content)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		names = append(names, fmt.Sprintf("%s %d", h.Name, h.Size))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.copied == nil {
		f.copied = map[string][]string{}
	}
	f.copied[id+":"+dst] = append(f.copied[id+":"+dst], names...)
	return nil
}

// ContainerAttach answers with one end of a pipe whose other end is closed.
func (f *fakeEngine) ContainerAttach(_ context.Context, id string, _ container.AttachOptions) (types.HijackedResponse, error) {
	f.record("attach " + id)
	a, b := net.Pipe()
	b.Close()
	return types.NewHijackedResponse(a, ""), nil
}

// fakeInit is a hand-written init channel.
type fakeInit struct {
	mu      sync.Mutex
	signals []syscall.Signal
	closed  int
	execs   []isolation.Command
	exit    isolation.Exit
	block   chan struct{} // Exec waits on it when set
	done    chan struct{}
}

func newFakeInit() *fakeInit { return &fakeInit{done: make(chan struct{})} }

func (i *fakeInit) Exec(ctx context.Context, cmd isolation.Command, _ isolation.Stdio) (isolation.Exit, error) {
	i.mu.Lock()
	i.execs = append(i.execs, cmd)
	block := i.block
	i.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return isolation.Exit{Code: 143, Signal: 15}, ctx.Err()
		}
	}
	return i.exit, nil
}

func (i *fakeInit) Signal(_ uint64, sig syscall.Signal) error {
	i.mu.Lock()
	i.signals = append(i.signals, sig)
	block := i.block
	i.block = nil
	i.mu.Unlock()
	if block != nil && sig == syscall.SIGTERM {
		close(block) // the command obeys SIGTERM
	}
	return nil
}

func (i *fakeInit) Close() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.closed++
	if i.closed == 1 {
		close(i.done)
	}
	return nil
}

func (i *fakeInit) Done() <-chan struct{} { return i.done }

// newTestBackend returns a backend on f whose init connects at once (or
// fails with connectErr), with the init binary check passed.
func newTestBackend(t *testing.T, f *fakeEngine, in *fakeInit, connectErr error) *Backend {
	t.Helper()
	b, err := New(func(b *Backend) { b.api = f }, WithInitBinary("/usr/local/bin/sandboxed"))
	if err != nil {
		t.Fatal(err)
	}
	b.binOnce.Do(func() {})
	// The fake engine's runs stage nothing on the host: GC must not
	// detach the staged binds of real runs (the e2e suite's, running as
	// root on the same machine).
	b.gcStaged = func(func(string) bool) ([]string, error) { return nil, nil }
	b.connect = func(ctx context.Context, ln *net.UnixListener, p *isolation.Plan, alive func(context.Context) error) (initConn, error) {
		if connectErr != nil {
			return nil, connectErr
		}
		return in, nil
	}
	b.stream = func(context.Context, io.Reader, io.WriteCloser, *isolation.Plan) (initConn, error) {
		if connectErr != nil {
			return nil, connectErr
		}
		return in, nil
	}
	b.await = func(context.Context, *net.UnixListener, func(context.Context) error) (pendingInit, error) {
		if connectErr != nil {
			return nil, connectErr
		}
		return fakePending{in}, nil
	}
	return b
}

// fakePending is a fake init that dialled in, waiting for its handshake.
type fakePending struct{ in *fakeInit }

func (p fakePending) handshake(context.Context, *isolation.Plan) (initConn, error) { return p.in, nil }
func (p fakePending) Close() error                                                 { return p.in.Close() }

var errNotFound = fmt.Errorf("no such image: %w", cerrdefs.ErrNotFound)
