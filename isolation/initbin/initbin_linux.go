package initbin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/internal/xdg"
)

// Embedded reports whether this build carries the init binary.
func Embedded() bool { return len(image) > 0 }

// Exec returns a path under which a child of this process can execute the
// init, and release, to call once the child has started. It returns ""
// when this build does not carry the init (see Embedded).
//
// The init is kept in cacheDir (see Cached) when that is safe and allows
// exec: a child then runs it straight from the page cache. Otherwise, or
// when cacheDir is "", it runs from a sealed memory file (Open), which
// costs each start about a millisecond of copying.
func Exec(cacheDir string) (path string, release func(), err error) {
	if !Embedded() {
		return "", func() {}, nil
	}
	if cacheDir != "" {
		if p, err := Cached(cacheDir); err == nil {
			return p, func() {}, nil
		}
	}
	f, err := Open()
	if err != nil {
		return "", nil, err
	}
	return ExecPath(f), func() { f.Close() }, nil
}

// Cached returns the path of the init in dir, writing it there first if
// it is missing: dir/init-HASH, where HASH is the binary's SHA-256
// (computed by make build), mode 0555. It refuses, and the caller falls
// back to a memory file, when the file or a directory on its path could
// be changed by anyone but root and this user (checked before anything is
// created, too), when the file is not exactly what was written (mode,
// owner, size), or when dir's file system does not allow exec. Inits of
// other builds stay until RemoveStale.
func Cached(dir string) (string, error) {
	if !Embedded() || len(sum) < 16 {
		return "", errors.New("this build carries no init binary")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	// Nothing is created where someone else could have prepared the way
	// (root under sudo with the user's HOME, a link to elsewhere).
	if err := xdg.CheckOwned(xdg.ExistingPrefix(dir)); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	if err := xdg.CheckOwned(real); err != nil {
		return "", err
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(real, &fs); err != nil {
		return "", fmt.Errorf("statfs %s: %w", real, err)
	}
	if fs.Flags&unix.ST_NOEXEC != 0 {
		return "", fmt.Errorf("%s is on a noexec file system", real)
	}
	name := filepath.Join(real, "init-"+sum[:16])
	fi, err := os.Lstat(name)
	if errors.Is(err, os.ErrNotExist) {
		if err := write(real, name); err != nil {
			return "", err
		}
		fi, err = os.Lstat(name)
	}
	if err != nil {
		return "", err
	}
	if err := checkFile(fi); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return name, nil
}

// checkFile accepts the cached init: a regular file of this user, mode
// 0555 as written (no one can write it, everyone can run it: containers
// run it as their user), of exactly the embedded binary's size.
func checkFile(fi os.FileInfo) error {
	st := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return errors.New("not a regular file")
	case st.Uid != uint32(os.Geteuid()):
		return fmt.Errorf("belongs to uid %d", st.Uid)
	case fi.Mode().Perm() != 0o555:
		return fmt.Errorf("mode %v, not the r-xr-xr-x it was written with", fi.Mode())
	case fi.Size() != int64(len(image)):
		return fmt.Errorf("%d bytes, not %d", fi.Size(), len(image))
	}
	return nil
}

// write puts the init at name through a temporary file renamed into
// place, synced first so that a crash cannot leave a file of the right
// size with the wrong bytes.
func write(dir, name string) error {
	tmp, err := os.CreateTemp(dir, ".init-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(image)
	if err == nil {
		err = tmp.Chmod(0o555)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// RemoveStale removes the inits of other builds from dir (`sandboxed gc`)
// and returns their paths. A run of another build that is starting at
// this moment may fail to start its init; `gc` is for quiet moments.
func RemoveStale(dir string) ([]string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, nil // no cache, nothing to remove
	}
	if err := xdg.CheckOwned(real); err != nil {
		return nil, nil // not ours to clean: Cached never wrote there
	}
	old, err := filepath.Glob(filepath.Join(real, "init-*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, o := range old {
		if len(sum) >= 16 && filepath.Base(o) == "init-"+sum[:16] {
			continue
		}
		if err := os.Remove(o); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, o)
	}
	return removed, errors.Join(errs...)
}

// Open returns the init binary as a sealed, close-on-exec memory file, or
// nil when this build does not carry it (see Embedded). The caller closes
// it once the init has been started; ExecPath names it for exec.
func Open() (*os.File, error) {
	if !Embedded() {
		return nil, nil
	}
	fd, err := unix.MemfdCreate("sandboxed-init", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("create the init's memory file: %w", err)
	}
	f := os.NewFile(uintptr(fd), "memfd:sandboxed-init")
	if err := fill(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func fill(f *os.File) error {
	for b := image; len(b) > 0; {
		n, err := unix.Write(int(f.Fd()), b)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return fmt.Errorf("write the init's memory file: %w", err)
		}
		b = b[n:]
	}
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return fmt.Errorf("seal the init's memory file: %w", err)
	}
	if err := unix.Fchmod(int(f.Fd()), 0o500); err != nil {
		return fmt.Errorf("chmod the init's memory file: %w", err)
	}
	return nil
}

// ExecPath is the path under which a child of this process executes f:
// the parent's descriptor table, which the child's own file descriptor
// setup cannot disturb.
func ExecPath(f *os.File) string {
	return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), f.Fd())
}
