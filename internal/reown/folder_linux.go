package reown

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// The ACLs of a folder, as extended attributes.
const (
	aclAccess  = "system.posix_acl_access"
	aclDefault = "system.posix_acl_default"
)

// SaveFolder records the mode and ACLs of path (not following a link).
func SaveFolder(path string) (Folder, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return Folder{}, &ReownError{Path: path, Op: "stat", Err: err}
	}
	f := Folder{Path: path, Dev: st.Dev, Ino: st.Ino, Mode: st.Mode & 0o7777}
	var err error
	if f.ACL, err = getXattr(path, aclAccess); err != nil {
		return Folder{}, &ReownError{Path: path, Op: "read ACL", Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if f.DefaultACL, err = getXattr(path, aclDefault); err != nil {
			return Folder{}, &ReownError{Path: path, Op: "read default ACL", Err: err}
		}
	}
	return f, nil
}

// getXattr reads attribute name of path; nil when it has none or the
// file system keeps no such attributes.
func getXattr(path, name string) ([]byte, error) {
	for size := 256; ; size *= 4 {
		buf := make([]byte, size)
		n, err := unix.Lgetxattr(path, name, buf)
		switch {
		case errors.Is(err, unix.ENODATA) || errors.Is(err, unix.EOPNOTSUPP):
			return nil, nil
		case errors.Is(err, unix.ERANGE) && size < 1<<20:
			continue
		case err != nil:
			return nil, err
		}
		return buf[:n], nil
	}
}

// Restore puts f's mode and ACLs back on the inode it was saved from,
// opened without following a link: a path that names another inode now
// (the tool replaced it) is left alone and reported.
func (f Folder) Restore() error {
	if special, err := f.restoreSpecial(); special || err != nil {
		return err
	}
	fd, err := unix.Open(f.Path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return &ReownError{Path: f.Path, Op: "open to restore its mode", Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &ReownError{Path: f.Path, Op: "stat", Err: err}
	}
	if st.Dev != f.Dev || st.Ino != f.Ino {
		return &ReownError{Path: f.Path, Op: "restore its mode", Err: fmt.Errorf("it was replaced during the run")}
	}
	var errs []error
	for _, a := range []struct {
		name string
		val  []byte
		dir  bool
	}{{aclAccess, f.ACL, false}, {aclDefault, f.DefaultACL, true}} {
		if a.dir && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		var err error
		if a.val != nil {
			err = unix.Fsetxattr(fd, a.name, a.val, 0)
		} else if err = unix.Fremovexattr(fd, a.name); errors.Is(err, unix.ENODATA) || errors.Is(err, unix.EOPNOTSUPP) {
			err = nil
		}
		if err != nil {
			errs = append(errs, &ReownError{Path: f.Path, Op: "restore " + a.name, Err: err})
		}
	}
	// Last: setting an ACL sets the group bits, the mode sets them again
	// with the set-id and sticky bits.
	if err := unix.Fchmod(fd, f.Mode); err != nil {
		errs = append(errs, &ReownError{Path: f.Path, Op: "restore its mode", Err: err})
	}
	return errors.Join(errs...)
}

// restoreSpecial restores the mode of a grant that is neither a folder nor
// a regular file (a granted socket, FIFO or device), which opening would
// connect to or block on: through an O_PATH descriptor of what is there,
// never by its name. special is false for a folder or a regular file.
func (f Folder) restoreSpecial() (special bool, err error) {
	fd, err := unix.Open(f.Path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, &ReownError{Path: f.Path, Op: "open to restore its mode", Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, &ReownError{Path: f.Path, Op: "stat", Err: err}
	}
	if k := st.Mode & unix.S_IFMT; k == unix.S_IFDIR || k == unix.S_IFREG {
		return false, nil
	}
	if st.Dev != f.Dev || st.Ino != f.Ino || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		// No grant is a link (they are resolved): one there now was
		// planted, whatever inode number it reuses.
		return true, &ReownError{Path: f.Path, Op: "restore its mode", Err: fmt.Errorf("it was replaced during the run")}
	}
	if err := unix.Fchmodat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), f.Mode, 0); err != nil {
		return true, &ReownError{Path: f.Path, Op: "restore its mode", Err: err}
	}
	return true, nil
}
