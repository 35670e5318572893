package container

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/internal/headbuf"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
)

// An engine outside this container (see outside) cannot see the paths the
// run needs unless the CI job mounted them from the host at the same path.
// When it cannot see one, the run is copied instead of shared:
//
//	controller (in the CI container)             engine (on the host)
//	  VolumeCreate sandboxed-RUN (labelled) ----> a directory the engine owns
//	  ContainerCreate sandboxed-RUN-copy -------> never started; mounts the volume
//	  CopyToContainer: the init, each read   ---> files in the volume, owners
//	    grant (sbinit.WriteTar: no symlinks,        and modes kept
//	    no special files; what a mask or a
//	    nested grant covers left out, its
//	    mount point made empty)
//	  ContainerRemove sandboxed-RUN-copy
//	  ContainerCreate sandboxed-RUN: each copied source bound read-only from
//	    the volume's directory on the engine's host; no control or egress
//	    socket binds; the init started with sbinit.StdioArgs
//	  ContainerAttach (stdin, stdout, stderr), ContainerStart
//	  stream protocol (sbinit.StreamClient) <--> the init's bridge: config,
//	    exec, stdio, signals, egress channels (the bridge listens on the
//	    egress socket in a small tmpfs, streamDir), stats
//	  Close: end the stream (the init kills everything), remove the
//	    container, then the volume
//
// A write grant the engine cannot see is refused: its changes would have
// to be copied back into this container in Close, which the controller
// may run behind the result (sandbox.Behind), after the result's checks
// of the grant (protected paths the tool created) have looked.

// copyDir is where the staging container mounts the run's volume.
const copyDir = "/copy"

// streamDir is, in a copied run's container with egress, a small tmpfs
// where the bridge listens on the egress socket. It is a directory the
// image has not: the runtime gives a tmpfs over an existing directory
// that directory's mode, and the init, not root, must make the socket.
const streamDir = "/.sandboxed-stream"

// errEngineStopped ends the writing of a copy the engine stopped reading.
var errEngineStopped = errors.New("the engine stopped reading")

// copyMaxBytes caps the bytes of each copied source (a variable for the
// tests).
var copyMaxBytes int64 = 1 << 30

// copyPlan is what a run copies into its volume: item i's source goes to
// the volume's directory i (a directory's content, or a file under its
// own name), and hollow are mount points, relative to the volume, made
// empty inside copied directories. drop are the indexes of the binds the
// stream replaces.
type copyPlan struct {
	items  []copyItem
	hollow []hollowPoint
	drop   []int
}

type copyItem struct {
	// mount is the index of the bind in the container's mounts.
	mount  int
	source string
	dir    bool
	// skip are paths under source, relative, that another mount covers:
	// their content is never copied.
	skip []string
}

type hollowPoint struct {
	name string // relative to the volume
	dir  bool
	// like, when set, gives the entry its mode, owner and time (a copied
	// directory's top, which the engine makes before the copy fills it).
	like os.FileInfo
}

// streamed reports whether m is a socket the stream protocol carries
// instead of a bind: the control socket and the egress proxy's.
func streamed(m mount.Mount) bool {
	return m.Target == ControlSocket || m.Target == isolation.SandboxSocket
}

// planCopy decides, for an engine that sees only the paths visible
// reports, which bind sources of hc are copied; nil when it sees them all.
// A write grant it cannot see is refused. lstat tells directories from
// files (nil: a source is a directory unless it is /dev/null).
func planCopy(hc *container.HostConfig, visible func(string) bool, lstat func(string) (os.FileInfo, error)) (*copyPlan, error) {
	cp := &copyPlan{}
	var refused, special []string
	hiddenSocket := false
	for i, m := range hc.Mounts {
		if m.Type != mount.TypeBind {
			continue
		}
		if streamed(m) {
			// Dropped whenever the run is copied, seen or not: the init
			// speaks over its streams and no socket is listened on.
			cp.drop = append(cp.drop, i)
			hiddenSocket = hiddenSocket || !visible(m.Source)
			continue
		}
		if visible(m.Source) {
			continue
		}
		if !m.ReadOnly {
			refused = append(refused, m.Source)
			continue
		}
		if lstat != nil {
			// Only directories and regular files are copied.
			if fi, err := lstat(m.Source); err == nil && !fi.IsDir() && !fi.Mode().IsRegular() {
				special = append(special, m.Source)
				continue
			}
		}
		cp.items = append(cp.items, copyItem{mount: i, source: m.Source, dir: isDir(m.Source, lstat)})
	}
	const engineAway = " the Docker engine cannot see (it runs outside this container and resolves paths on its own host): "
	const sharePath = "mount it into this container from the host at the same path (docker run -v /srv/ci:/srv/ci), or run sandboxed on the host"
	if len(refused) > 0 {
		return nil, &isolation.UnsupportedError{
			What: "a write grant" + engineAway + strings.Join(refused, ", "),
			Fix:  sharePath + "; read grants are copied, write grants are not",
		}
	}
	if len(special) > 0 {
		return nil, &isolation.UnsupportedError{
			What: "a grant of a special file (a socket, a device or a pipe)" + engineAway + strings.Join(special, ", "),
			Fix:  sharePath + "; only directories and regular files are copied",
		}
	}
	if len(cp.items) == 0 && !hiddenSocket {
		return nil, nil
	}
	cp.nest(hc, lstat)
	return cp, nil
}

// nest leaves out of each copied directory what another mount of hc
// covers (a mask, a nested grant, a tmpfs), and makes its mount point.
func (cp *copyPlan) nest(hc *container.HostConfig, lstat func(string) (os.FileInfo, error)) {
	type point struct {
		target string
		dir    bool
	}
	var points []point
	for _, m := range hc.Mounts {
		points = append(points, point{m.Target, isDir(m.Source, lstat)})
	}
	for t := range hc.Tmpfs {
		points = append(points, point{t, true})
	}
	for n := range cp.items {
		it := &cp.items[n]
		if !it.dir {
			continue
		}
		top := hc.Mounts[it.mount].Target
		for _, pt := range points {
			rel, ok := strings.CutPrefix(pt.target, strings.TrimSuffix(top, "/")+"/")
			if !ok || rel == "" {
				continue
			}
			it.skip = append(it.skip, filepath.FromSlash(rel))
			cp.hollow = append(cp.hollow, hollowPoint{name: path.Join(strconv.Itoa(n), rel), dir: pt.dir})
		}
		sort.Strings(it.skip)
	}
	sort.Slice(cp.hollow, func(i, j int) bool { return cp.hollow[i].name < cp.hollow[j].name })
}

// isDir reports whether a bind source is a directory.
func isDir(src string, lstat func(string) (os.FileInfo, error)) bool {
	if src == "/dev/null" {
		return false
	}
	if lstat == nil {
		return true
	}
	fi, err := lstat(src)
	return err == nil && fi.IsDir()
}

// apply rewrites cfg and hc for a run whose sources are in the volume at
// mountpoint (a path of the engine's host): each copied bind's source
// becomes its copy, the streamed sockets' binds go, and the init speaks
// the stream protocol on its standard streams. With egress, a small tmpfs
// at streamDir holds the socket the bridge listens on.
func (cp *copyPlan) apply(cfg *container.Config, hc *container.HostConfig, mountpoint string, egress bool) {
	drop := map[int]bool{}
	for _, i := range cp.drop {
		drop[i] = true
	}
	for n, it := range cp.items {
		src := path.Join(mountpoint, strconv.Itoa(n))
		if !it.dir {
			src = path.Join(src, filepath.Base(it.source))
		}
		hc.Mounts[it.mount].Source = src
		// The engine refuses a private bind from beneath its own root.
		hc.Mounts[it.mount].BindOptions = &mount.BindOptions{Propagation: mount.PropagationRSlave}
	}
	var ms []mount.Mount
	for i, m := range hc.Mounts {
		if !drop[i] {
			ms = append(ms, m)
		}
	}
	hc.Mounts = ms
	if egress {
		hc.Tmpfs[streamDir] = "rw,nosuid,nodev,noexec,size=65536,mode=1777"
	}
	cfg.Entrypoint = append([]string{InitPath}, sbinit.StdioArgs()...)
	cfg.OpenStdin, cfg.StdinOnce = true, true
	cfg.AttachStdin, cfg.AttachStdout, cfg.AttachStderr = true, true, true
}

// volumeName is the engine name of the run's volume.
func volumeName(runID string) string { return containerName(runID) }

// copyIn makes the run's volume, fills it through a staging container that
// is never started, and returns the volume's directory on the engine's
// host. The volume is s's, for Close, from the moment it is asked for.
func (b *Backend) copyIn(ctx context.Context, s *sandbox, p *isolation.Plan, cp *copyPlan) (mountpoint string, err error) {
	labels := map[string]string{isolation.AnnotationRunID: p.RunID, isolation.AnnotationTool: p.Tool}
	s.volume = volumeName(p.RunID)
	vol, err := b.api.VolumeCreate(ctx, volume.CreateOptions{Name: s.volume, Driver: "local", Labels: labels})
	if err != nil {
		return "", b.engineErr("create volume "+s.volume, err)
	}
	if vol.Mountpoint == "" || !path.IsAbs(vol.Mountpoint) {
		return "", fmt.Errorf("create volume %s: %w: the engine gives it no directory (%q)", s.volume, isolation.ErrUnsupported, vol.Mountpoint)
	}
	name := containerName(p.RunID) + "-copy"
	cfg := &container.Config{Image: imageOf(p), Entrypoint: []string{InitPath}, Labels: labels, NetworkDisabled: true}
	hc := &container.HostConfig{NetworkMode: "none", LogConfig: container.LogConfig{Type: "none"},
		Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: s.volume, Target: copyDir, VolumeOptions: &mount.VolumeOptions{NoCopy: true}}}}
	// Removed by name even when create failed: the engine may have made
	// it before the answer was lost (Ctrl-C), and the volume it holds
	// could not be removed while it stands.
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if rerr := removeContainer(rctx, b.api, name); rerr != nil && err == nil {
			err = fmt.Errorf("remove container %s: %w", name, rerr)
		}
	}()
	if _, err := b.api.ContainerCreate(ctx, cfg, hc, nil, nil, name); err != nil {
		return "", b.engineErr("create container "+name, err)
	}
	err = b.fill(ctx, name, cp)
	return vol.Mountpoint, err
}

// fill copies cp's items into the volume mounted at copyDir in container
// name: a directory for each, then the sources, then the hollow mount
// points.
func (b *Backend) fill(ctx context.Context, name string, cp *copyPlan) error {
	put := func(dst, what string, write func(io.Writer) error) error {
		pr, pw := io.Pipe()
		wrote := make(chan error, 1)
		go func() {
			err := write(pw)
			pw.CloseWithError(err)
			wrote <- err
		}()
		err := b.api.CopyToContainer(ctx, name, dst, pr, container.CopyToContainerOptions{})
		pr.CloseWithError(errEngineStopped)
		// What failed on this side is the error, not the engine's
		// answer to a body cut short.
		switch werr := <-wrote; {
		case errors.Is(werr, sbinit.ErrTooLarge):
			return &isolation.UnsupportedError{What: "copying " + what + " to a Docker engine that cannot see it: " + werr.Error(),
				Fix: "mount it into this container from the host at the same path, or grant a smaller path"}
		case werr != nil && !errors.Is(werr, errEngineStopped):
			return fmt.Errorf("read %s to copy it: %w", what, werr)
		case err != nil:
			return b.engineErr("copy "+what+" into volume of "+name, err)
		}
		return nil
	}
	var dirs []hollowPoint
	for n, it := range cp.items {
		h := hollowPoint{name: strconv.Itoa(n), dir: true}
		if fi, err := os.Lstat(it.source); err == nil && it.dir && fi.IsDir() {
			h.like = fi
		}
		dirs = append(dirs, h)
	}
	if err := put(copyDir, "the volume's directories", func(w io.Writer) error { return writeHollow(w, dirs) }); err != nil {
		return err
	}
	for n, it := range cp.items {
		t := &sbinit.Transfer{Path: it.source, Skip: it.skip, MaxBytes: copyMaxBytes}
		if err := put(path.Join(copyDir, strconv.Itoa(n)), it.source, func(w io.Writer) error { return sbinit.WriteTar(w, t) }); err != nil {
			return err
		}
	}
	if len(cp.hollow) == 0 {
		return nil
	}
	return put(copyDir, "the masks' mount points", func(w io.Writer) error { return writeHollow(w, cp.hollow) })
}

// writeHollow writes a tar of empty directories and files, root's, that
// nobody may write, or like the file they stand for.
func writeHollow(w io.Writer, points []hollowPoint) error {
	tw := tar.NewWriter(w)
	for _, h := range points {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: h.name, Mode: 0o444}
		if h.dir {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, h.name+"/", 0o555
		}
		if h.like != nil {
			fh, err := tar.FileInfoHeader(h.like, "")
			if err != nil {
				return err
			}
			hdr.Mode, hdr.Uid, hdr.Gid, hdr.ModTime = fh.Mode&0o777, fh.Uid, fh.Gid, fh.ModTime
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
	}
	return tw.Close()
}

// launchCopied fills the run's volume, creates s's container from cfg and
// hc (rewritten by cp.apply), attaches to its standard streams, starts it
// and hands its init the plan over them. What it made is s's, for
// s.Close, even on error.
func (b *Backend) launchCopied(ctx context.Context, s *sandbox, cfg *container.Config, hc *container.HostConfig, p *isolation.Plan, cp *copyPlan) error {
	var mp string
	if len(cp.items) > 0 {
		var err error
		if mp, err = b.copyIn(ctx, s, p, cp); err != nil {
			return err
		}
	}
	cp.apply(cfg, hc, mp, p.Egress != nil)
	if err := b.create(ctx, s, cfg, hc); err != nil {
		return err
	}
	hj, err := b.api.ContainerAttach(ctx, s.id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return b.engineErr("attach to container "+s.name, err)
	}
	s.attached = hj.Conn
	if err := b.api.ContainerStart(ctx, s.id, container.StartOptions{}); err != nil {
		return b.engineErr("start container "+s.name, err)
	}
	s.streamed = true
	init, err := b.stream(ctx, hj.Reader, hj.Conn, p)
	if err != nil {
		return fmt.Errorf("start init in container %s: %w", s.name, err)
	}
	s.init = init
	return nil
}

// streamFunc speaks the init's stream protocol over a container's
// attached streams (out: its multiplexed output, in: its input) and hands
// the init the plan.
type streamFunc func(ctx context.Context, out io.Reader, in io.WriteCloser, p *isolation.Plan) (initConn, error)

// streamInit is the streamFunc of a real engine.
func streamInit(ctx context.Context, out io.Reader, in io.WriteCloser, p *isolation.Plan) (initConn, error) {
	pr, pw := io.Pipe()
	said := &headbuf.Buffer{}
	go func() {
		_, err := stdcopy.StdCopy(pw, said, out)
		if err == nil {
			err = io.EOF
		}
		pw.CloseWithError(err)
	}()
	cl := sbinit.NewStreamClient(pr, in)
	cl.KillGrace = p.Limits.KillGrace
	if eg := p.Egress; eg != nil {
		sock := eg.ProxySocket
		cl.DialEgress = func() (net.Conn, error) { return net.Dial("unix", sock) }
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := cl.WaitHello(ctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("wait for the init: %w%s", err, said.Note("the init"))
	}
	cfg := initConfig(p)
	if cfg.Egress != nil {
		cfg.Egress.Socket = path.Join(streamDir, "egress.sock")
	}
	if err := cl.Handshake(ctx, cfg); err != nil {
		cl.Close()
		return nil, fmt.Errorf("hand the plan to the init: %w%s", err, said.Note("the init"))
	}
	return cl, nil
}

// statser is an init that reports its container's cgroup (the stream
// protocol's stats request).
type statser interface {
	Stats(ctx context.Context) (sbinit.SandboxStats, error)
}

// initStats asks a streamed init for the peak memory and OOM kills its
// cgroup counted: the engine's pids are not this container's to read.
func (s *sandbox) initStats(ctx context.Context) cgroupStats {
	st, ok := s.init.(statser)
	if !ok {
		return cgroupStats{}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := st.Stats(ctx)
	if err != nil {
		return cgroupStats{}
	}
	return cgroupStats{peak: r.PeakMemoryBytes, oomKills: r.OOMKills}
}

// gcVolumes removes the volumes of copied runs for which keep is false,
// and, without a liveness answer, of runs no container is left of (live).
func (b *Backend) gcVolumes(ctx context.Context, keep func(runID string) bool, live map[string]bool) ([]string, error) {
	list, err := b.api.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", isolation.AnnotationRunID))})
	if err != nil {
		return nil, b.engineErr("list volumes", err)
	}
	var removed []string
	var errs []error
	for _, v := range list.Volumes {
		run := v.Labels[isolation.AnnotationRunID]
		if (keep != nil && keep(run)) || (keep == nil && live[run]) {
			continue
		}
		if err := b.api.VolumeRemove(ctx, v.Name, true); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove volume %s: %w", v.Name, err))
			continue
		}
		removed = append(removed, "volume "+v.Name+" (run "+run+")")
	}
	return removed, errors.Join(errs...)
}
