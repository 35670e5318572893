package container

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// shareStagingRoot makes root (created, 0700) a mount of its own with
// shared propagation, in a peer group of its own: what is mounted on a
// placeholder in it propagates into the warm container, whose binds of the
// placeholders are its slaves, and to nothing else.
func shareStagingRoot(root string) error {
	if err := os.Mkdir(root, 0o700); err != nil {
		return fmt.Errorf("make staging directory: %w", err)
	}
	if err := unix.Mount(root, root, "", unix.MS_BIND, ""); err != nil {
		os.Remove(root)
		return fmt.Errorf("bind staging directory %s: %w", root, err)
	}
	for _, flag := range []uintptr{unix.MS_PRIVATE, unix.MS_SHARED} {
		if err := unix.Mount("", root, "", flag, ""); err != nil {
			_ = unshareStagingRoot(root)
			return fmt.Errorf("set propagation of staging directory %s: %w", root, err)
		}
	}
	return nil
}

// unshareStagingRoot detaches the mount shareStagingRoot made and removes
// the directory once empty. An empty root is a no-op.
func unshareStagingRoot(root string) error {
	if root == "" {
		return nil
	}
	if err := unix.Unmount(root, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount staging directory %s: %w", root, err)
	}
	// Placeholders gc found are left to the host directory's removal.
	if err := os.Remove(root); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENOTEMPTY) {
		return fmt.Errorf("remove staging directory %s: %w", root, err)
	}
	return nil
}

// makePlaceholder makes the empty directory or file a warm container binds
// where a grant will be.
func makePlaceholder(p string, dir bool) error {
	if dir {
		return os.Mkdir(p, 0o700)
	}
	return os.WriteFile(p, nil, 0o600)
}

// stageOnto pins source as pinBinds does and mounts it on placeholder p
// (which must be a directory exactly when the source is), read-only when
// ro; the mount propagates into the warm container, and is then made
// private, so that the container's copy follows the host no more. It
// returns the source's identity, for verifyBinds at target.
func stageOnto(source, target, p string, dir, ro bool) (bindIdentity, error) {
	fd, st, err := openPinned(source)
	if err != nil {
		return bindIdentity{}, err
	}
	defer unix.Close(fd)
	if (st.Mode&unix.S_IFMT == unix.S_IFDIR) != dir {
		return bindIdentity{}, errors.New("it changed between a directory and a file since the warm container started")
	}
	if err := mountTree(fd, ro, p); err != nil {
		return bindIdentity{}, err
	}
	if err := unix.Mount("", p, "", unix.MS_PRIVATE, ""); err != nil {
		return bindIdentity{}, fmt.Errorf("make %s private: %w", p, err)
	}
	return bindIdentity{source: source, target: target, dev: uint64(st.Dev), ino: st.Ino}, nil
}
