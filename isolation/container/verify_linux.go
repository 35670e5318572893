package container

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/mount"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/internal/hostsetup"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
)

// bindIdentity is the file a bind mount's source was when the plan was
// made: its device and inode, read through a descriptor opened without
// following any symlink.
type bindIdentity struct {
	source, target string
	dev, ino       uint64
}

// pinBinds pins every bind source that is not ours: it opens the source
// without following any symlink and records its identity. dockerd resolves
// a source path again when it mounts; a component swapped for a symlink
// meanwhile (by a concurrent run with write access to a parent) would
// mount something else.
//
// As root (stage true), each pinned source is then mounted from its
// descriptor (open_tree(OPEN_TREE_CLONE) + move_mount) on a staging path
// under the run's host directory (0700, root's), and the mount handed to
// Docker names that path: nothing dockerd resolves can be swapped by a
// tool, under runc or runsc alike, and read-only grants are read-only at
// the staging mount too. The staged paths are returned for unstage.
// Without root only the identities are returned (translate's lstat check
// and verifyBinds stand).
func pinBinds(ms []mount.Mount, ours func(source string) bool, hostDir string, stage bool) (ids []bindIdentity, staged []string, err error) {
	defer func() {
		if err != nil {
			_ = unstage(staged)
			staged = nil
		}
	}()
	for i := range ms {
		m := &ms[i]
		if m.Type != mount.TypeBind || ours(m.Source) {
			continue
		}
		fd, st, err := openPinned(m.Source)
		if errors.Is(err, unix.ENOSYS) {
			return nil, nil, nil // kernels before 5.6: the lstat check in translate is all there is
		}
		if err != nil {
			return ids, staged, fmt.Errorf("check bind source %s: %w", m.Source, err)
		}
		ids = append(ids, bindIdentity{source: m.Source, target: m.Target, dev: uint64(st.Dev), ino: st.Ino})
		if stage {
			p := filepath.Join(hostDir, stagingDirName, strconv.Itoa(len(staged)))
			err = stageOne(fd, st.Mode&unix.S_IFMT == unix.S_IFDIR, m.ReadOnly, p)
			if err != nil {
				unix.Close(fd)
				return ids, staged, fmt.Errorf("stage bind source %s: %w", m.Source, err)
			}
			staged = append(staged, p)
			m.Source = p
		}
		unix.Close(fd)
	}
	return ids, staged, nil
}

// openPinned opens source without following any symlink, as an O_PATH
// descriptor, and stats it.
func openPinned(source string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := unix.Openat2(unix.AT_FDCWD, source, &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return -1, st, fmt.Errorf("%w (a symlink on the way?)", err)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, err
	}
	return fd, st, nil
}

// stageOne mounts a clone of the tree at fd (recursively, as Docker binds)
// on p, made as an empty directory or file to match; read-only when ro.
func stageOne(fd int, dir, ro bool, p string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	if err := makePlaceholder(p, dir); err != nil {
		return err
	}
	if err := mountTree(fd, ro, p); err != nil {
		os.Remove(p)
		return err
	}
	return nil
}

// mountTree mounts a clone of the tree at fd (recursively) on p;
// read-only when ro.
func mountTree(fd int, ro bool, p string) error {
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	if ro {
		err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
		if err != nil && !errors.Is(err, unix.ENOSYS) {
			return fmt.Errorf("make read-only: %w", err)
		}
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount to %s: %w", p, err)
	}
	return nil
}

// unstage detaches the staged mounts and removes their mountpoints (never
// what was mounted on them) and the staging directory once empty.
func unstage(staged []string) error {
	var errs []error
	for _, p := range staged {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount staged bind %s: %w", p, err))
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove staged bind %s: %w", p, err))
		}
	}
	if len(staged) > 0 {
		_ = os.Remove(filepath.Dir(staged[0]))
	}
	return errors.Join(errs...)
}

// gcStaged detaches staged binds left on the host by runs for which keep
// is false (a controller that died before Close), and the shared staging
// directories of warm containers, so that removing their host directories
// never reaches into a grant.
func gcStaged(keep func(runID string) bool) ([]string, error) {
	if keep == nil || unix.Geteuid() != 0 {
		return nil, nil
	}
	mounts, err := mountinfo.GetMounts(func(i *mountinfo.Info) (skip, stop bool) {
		_, _, ok := stagedRun(i.Mountpoint)
		return !ok, false
	})
	if err != nil {
		return nil, fmt.Errorf("read the host's mount table: %w", err)
	}
	// The binds on a warm container's placeholders before the staging
	// directory they are in.
	sort.SliceStable(mounts, func(i, j int) bool { return len(mounts[i].Mountpoint) > len(mounts[j].Mountpoint) })
	var reaped []string
	var errs []error
	for _, m := range mounts {
		run, root, _ := stagedRun(m.Mountpoint)
		if keep(run) {
			continue
		}
		undo := func() error { return unstage([]string{m.Mountpoint}) }
		what := "staged bind "
		if !root && isRW(m.Options) {
			// A run of root's tools that died before Close: what it was
			// handed, and what it made, goes back to root (Start's
			// handOver). Only that run's id owns entries there.
			if id, err := process.ReservedID(); err == nil {
				if r, err := hostsetup.Reown(m.Mountpoint, hostsetup.Owner{UID: id, GID: id}, hostsetup.Owner{}); err == nil && r.Changed > 0 {
					reaped = append(reaped, fmt.Sprintf("%d entries of %s handed back to root (run %s)", r.Changed, m.Mountpoint, run))
				}
			}
		}
		if root {
			undo = func() error { return unshareStagingRoot(m.Mountpoint) }
			what = "staging directory "
		}
		if err := undo(); err != nil {
			errs = append(errs, err)
			continue
		}
		reaped = append(reaped, what+m.Mountpoint+" (run "+run+")")
	}
	return reaped, errors.Join(errs...)
}

// isRW reports whether mount options (mountinfo's per-mount options)
// make the mount writable.
func isRW(opts string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == "rw" {
			return true
		}
	}
	return false
}

// stagedRun tells whether mountpoint is a staged bind (RUN/.sandboxed-binds/N)
// or a warm container's staging directory (RUN/.sandboxed-binds, root),
// under the host directory of run id run.
func stagedRun(mountpoint string) (run string, root, ok bool) {
	dir, base := filepath.Dir(mountpoint), filepath.Base(mountpoint)
	if base == stagingDirName && isolation.RunIDPattern.MatchString(filepath.Base(dir)) {
		return filepath.Base(dir), true, true
	}
	if filepath.Base(dir) == stagingDirName && isolation.RunIDPattern.MatchString(filepath.Base(filepath.Dir(dir))) {
		return filepath.Base(filepath.Dir(dir)), false, true
	}
	return "", false, false
}

// verifyBinds checks, through the container's init (pid, a host pid),
// that every bind target is the file pinned before the container was
// created.
func verifyBinds(ids []bindIdentity, pid int) error {
	if pid <= 0 {
		return fmt.Errorf("verify binds: no init pid")
	}
	root := "/proc/" + strconv.Itoa(pid) + "/root"
	for _, id := range ids {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(root, id.target), &st); err != nil {
			return fmt.Errorf("verify bind %s: %w", id.target, err)
		}
		if uint64(st.Dev) != id.dev || st.Ino != id.ino {
			return fmt.Errorf("verify bind %s: the engine mounted another file than %s (it changed between the plan and the mount); refusing", id.target, id.source)
		}
	}
	return nil
}

// verifyStarted runs verifyBinds on the started container's init.
// It needs root: the init is not dumpable, so /proc/PID/root is root's
// alone. Without root (a member of the docker group, who can become root
// through the engine anyway) only translate's lstat check applies.
func (b *Backend) verifyStarted(ctx context.Context, id string, ids []bindIdentity) error {
	if len(ids) == 0 || unix.Geteuid() != 0 {
		return nil
	}
	ins, err := b.api.ContainerInspect(ctx, id)
	if err != nil {
		return b.engineErr("inspect container "+id, err)
	}
	if ins.State == nil {
		return fmt.Errorf("verify binds of %s: no state", id)
	}
	return verifyBinds(ids, ins.State.Pid)
}
