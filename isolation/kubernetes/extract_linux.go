package kubernetes

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
)

// resolveBeneath never leaves the root, nor follows a symlink.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// extractInto writes the directories and regular files of the tar stream r
// into the host directory root, as a write grant's files come back from a
// pod. No path is resolved through a symlink or out of root (openat2
// RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS); paths at or under skip are left
// alone; more than max bytes is an error. As root, what it makes is given
// to root's owner. A path the host holds as a symlink is not replaced:
// it is reported.
func extractInto(r io.Reader, root string, skip []string, max int64, seen map[string]bool) error {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", root, err)
	}
	defer unix.Close(rfd)
	var st unix.Stat_t
	if err := unix.Fstat(rfd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", root, err)
	}
	chown := os.Geteuid() == 0
	var refused []string
	var total int64
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read the files: %w", err)
		}
		rel, ok := sbinit.CleanRel(h.Name)
		if !ok {
			return fmt.Errorf("entry %q climbs out of %s", h.Name, root)
		}
		if rel == "." || sbinit.Skipped(rel, skip) {
			continue
		}
		mode := uint32(h.Mode) & 0o777
		how := &unix.OpenHow{Resolve: resolveBeneath}
		switch h.Typeflag {
		case tar.TypeDir:
			pfd, err := openParent(rfd, rel)
			if err != nil {
				refused = append(refused, rel)
				continue
			}
			err = unix.Mkdirat(pfd, filepath.Base(rel), mode|0o700)
			if err == nil && chown {
				_ = unix.Fchownat(pfd, filepath.Base(rel), int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW)
			}
			unix.Close(pfd)
			if err != nil && !errors.Is(err, unix.EEXIST) {
				refused = append(refused, rel)
			}
		case tar.TypeReg:
			seen[rel] = true
			total += h.Size
			if max > 0 && total > max {
				return fmt.Errorf("more than %d bytes: %w", max, sbinit.ErrTooLarge)
			}
			if special(rfd, rel) {
				refused = append(refused, rel)
				continue
			}
			// O_NONBLOCK: a FIFO put there meanwhile fails (ENXIO)
			// rather than blocking; fstat refuses it, or a device.
			how.Flags = unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY
			how.Mode = uint64(mode | 0o200)
			fd, err := unix.Openat2(rfd, rel, how)
			if err != nil {
				refused = append(refused, rel)
				continue
			}
			var fst unix.Stat_t
			if unix.Fstat(fd, &fst) != nil || fst.Mode&unix.S_IFMT != unix.S_IFREG {
				unix.Close(fd)
				refused = append(refused, rel)
				continue
			}
			f := os.NewFile(uintptr(fd), rel)
			_, err = io.Copy(f, tr)
			if err == nil && chown {
				err = f.Chown(int(st.Uid), int(st.Gid))
			}
			if err == nil {
				err = f.Chmod(os.FileMode(mode))
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("write %s: %w", filepath.Join(root, rel), err)
			}
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("not written, the host has a symlink, a non-directory or a special file (FIFO, socket, device) in the way: %s", strings.Join(refused, ", "))
	}
	return nil
}

// special reports whether rel, beneath rfd, is there and is neither a
// regular file nor a directory (a FIFO, a socket, a device): opening it
// to write would block, or write to the device.
func special(rfd int, rel string) bool {
	fd, err := unix.Openat2(rfd, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: resolveBeneath})
	if err != nil {
		return false // absent, or a symlink in the way: the open refuses it
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFREG && st.Mode&unix.S_IFMT != unix.S_IFDIR
}

// openParent opens the directory holding rel, beneath rfd.
func openParent(rfd int, rel string) (int, error) {
	dir := filepath.Dir(rel)
	if dir == "." {
		return unix.Dup(rfd)
	}
	return unix.Openat2(rfd, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolveBeneath})
}

// removeGone deletes, beneath root, the regular files of was that the
// sandbox no longer has: a write grant's deletions come back too. A path
// that is not a regular file now, or that resolves through a symlink, is
// left alone.
func removeGone(root string, was []string, seen map[string]bool) error {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", root, err)
	}
	defer unix.Close(rfd)
	var errs []error
	for _, rel := range was {
		if seen[rel] {
			continue
		}
		pfd, err := openParent(rfd, rel)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		base := filepath.Base(rel)
		if unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			if err := unix.Unlinkat(pfd, base, 0); err != nil {
				errs = append(errs, fmt.Errorf("remove %s: %w", filepath.Join(root, rel), err))
			}
		}
		unix.Close(pfd)
	}
	return errors.Join(errs...)
}

// regularFiles lists the regular files beneath root, relative, as WriteTar
// carries them (symlinks not followed; skip left out).
func regularFiles(root string, skip []string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel != "." && sbinit.Skipped(rel, skip) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			out = append(out, rel)
		}
		return nil
	})
	return out, err
}
