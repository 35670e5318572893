package container

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/docker/docker/api/types/mount"
	"golang.org/x/sys/unix"
)

// bindIdentity is the file a bind mount's source was when the plan was
// made: its device and inode, read through a descriptor opened without
// following any symlink.
type bindIdentity struct {
	source, target string
	dev, ino       uint64
}

// pinBinds records the identity of every bind source. dockerd resolves
// the source path again when it mounts; a component swapped for a symlink
// meanwhile (by a concurrent run with write access to a parent) would
// mount something else. verifyBinds compares after the start.
func pinBinds(ms []mount.Mount, ours func(source string) bool) ([]bindIdentity, error) {
	var ids []bindIdentity
	for _, m := range ms {
		if m.Type != mount.TypeBind || ours(m.Source) {
			continue
		}
		fd, err := unix.Openat2(unix.AT_FDCWD, m.Source, &unix.OpenHow{
			Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS,
		})
		if errors.Is(err, unix.ENOSYS) {
			return nil, nil // kernels before 5.6: the lstat check in translate is all there is
		}
		if err != nil {
			return nil, fmt.Errorf("check bind source %s: %w (a symlink on the way?)", m.Source, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("check bind source %s: %w", m.Source, err)
		}
		ids = append(ids, bindIdentity{source: m.Source, target: m.Target, dev: uint64(st.Dev), ino: st.Ino})
	}
	return ids, nil
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
