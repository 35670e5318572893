package reown

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Reown gives every entry under root (root included) owned by from to to,
// and is the one way sandboxed hands a write grant to the uid a sandbox
// runs as and hands what is in it back to the invoking user afterwards.
//
// It never leaves root: it walks by directory descriptors opened with
// O_NOFOLLOW, changes each entry with fchownat(AT_SYMLINK_NOFOLLOW) (a
// symlink's own owner, never its target's), does not descend into another
// filesystem mounted below root, and leaves alone a non-directory with
// more than one link, since its other links may be outside root. Entries
// of other owners are not touched; a gid is changed only where it is
// from's. The uid and gid are changed together.
func Reown(root string, from, to Owner) (Reowned, error) {
	var r Reowned
	var st unix.Stat_t
	if err := unix.Fstatat(unix.AT_FDCWD, root, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return r, &ReownError{Path: root, Op: "stat", Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		err := reownEntry(unix.AT_FDCWD, root, root, &st, from, to, &r)
		return r, err
	}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return r, &ReownError{Path: root, Op: "open", Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		return r, &ReownError{Path: root, Op: "stat", Err: err}
	}
	err = reownDir(fd, root, st.Dev, from, to, &r)
	// The root last: a walk that fails part way leaves it as it was.
	if err == nil && int(st.Uid) == from.UID {
		err = reownEntry(fd, "", root, &st, from, to, &r)
	}
	return r, err
}

// reownDir reowns the entries of the directory dirfd (path, on device
// dev), depth first.
func reownDir(dirfd int, path string, dev uint64, from, to Owner, r *Reowned) error {
	names, err := ReadDirNames(dirfd)
	if err != nil {
		return &ReownError{Path: path, Op: "read directory", Err: err}
	}
	var errs []error
	for _, name := range names {
		p := filepath.Join(path, name)
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			errs = append(errs, &ReownError{Path: p, Op: "stat", Err: err})
			continue
		}
		if st.Dev != dev {
			if int(st.Uid) == from.UID {
				r.Skipped = append(r.Skipped, p+": another filesystem is mounted there")
			}
			continue
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				errs = append(errs, &ReownError{Path: p, Op: "open", Err: err})
				continue
			}
			var dst unix.Stat_t
			if err := unix.Fstat(fd, &dst); err != nil || dst.Dev != st.Dev || dst.Ino != st.Ino {
				// Replaced between the stat and the open: not this walk's.
				unix.Close(fd)
				errs = append(errs, &ReownError{Path: p, Op: "open", Err: fmt.Errorf("it changed during the walk")})
				continue
			}
			err = reownDir(fd, p, dev, from, to, r)
			if err == nil && int(dst.Uid) == from.UID {
				err = reownEntry(fd, "", p, &dst, from, to, r)
			}
			unix.Close(fd)
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if beforeEntry != nil {
			beforeEntry(dirfd, name)
		}
		if err := reownEntry(dirfd, name, p, &st, from, to, r); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// beforeEntry, when set (by tests), runs between the walk's stat of an
// entry that is no directory and its hand-over: where a tool still
// running would swap the name for another file.
var beforeEntry func(dirfd int, name string)

// reownEntry gives one entry (name in dirfd; "" is dirfd itself) to to
// when from owns it and it has no other link. An entry named is opened
// (O_PATH, not following a link) and judged and changed through that
// descriptor: a name swapped since the walk's stat for a second link to a
// file outside the grant (a tool of another run still writing there) is
// judged as what it is now, never changed by its name after the check.
func reownEntry(dirfd int, name, path string, st *unix.Stat_t, from, to Owner, r *Reowned) error {
	if name != "" {
		fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		if err != nil {
			return &ReownError{Path: path, Op: "open", Err: err}
		}
		defer unix.Close(fd)
		var now unix.Stat_t
		if err := unix.Fstat(fd, &now); err != nil {
			return &ReownError{Path: path, Op: "stat", Err: err}
		}
		dirfd, name, st = fd, "", &now
	}
	if int(st.Uid) != from.UID {
		return nil
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink != 1 {
		r.Skipped = append(r.Skipped, fmt.Sprintf("%s: %d links (another may be outside the grant)", path, st.Nlink))
		return nil
	}
	gid := -1
	if int(st.Gid) == from.GID {
		gid = to.GID
	}
	if err := unix.Fchownat(dirfd, "", to.UID, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &ReownError{Path: path, Op: "chown", Err: err}
	}
	r.Changed++
	return nil
}

// ReadDirNames lists the directory dirfd without consuming its offset
// for anyone else (it reads through a duplicate); the names are unsorted,
// without . and ..
func ReadDirNames(dirfd int) ([]string, error) {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var names []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.ReadDirent(fd, buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}
