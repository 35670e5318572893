package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandboxed-dev/sandboxed/internal/pathglob"
	"github.com/sandboxed-dev/sandboxed/permissions"
)

// ResolveMounts fills Mount.Resolved of every filesystem grant with the
// real path on the host, every symlink resolved, so the policy matches and
// the backends bind what the path really is. A read grant of a path that
// does not exist is an error; a write grant's missing path is created as a
// directory (mode 0755, owned by the caller) — the only thing sandboxed
// ever creates on the host for a tool.
//
// The backends check again, when they mount, that the resolved source is
// not a symlink, so a swap between here and the mount cannot redirect it.
//
// With create false (a dry run) nothing is created: a missing write path
// resolves to itself.
func ResolveMounts(grants []permissions.Grant, create bool) error {
	var errs []error
	for i := range grants {
		m := grants[i].Mount
		if m == nil {
			continue
		}
		real, err := filepath.EvalSymlinks(m.HostPath)
		if errors.Is(err, fs.ErrNotExist) && m.Write && !create {
			// Decided on the declared path; CreateWriteDirs makes it
			// once the policy allows the run.
			m.Resolved = resolveExistingPrefix(m.HostPath)
			continue
		}
		if errors.Is(err, fs.ErrNotExist) && m.Write {
			if mkErr := os.MkdirAll(m.HostPath, 0o755); mkErr != nil {
				errs = append(errs, fmt.Errorf("%s: create %s: %w", grants[i].Permission, m.HostPath, mkErr))
				continue
			}
			real, err = filepath.EvalSymlinks(m.HostPath)
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			errs = append(errs, fmt.Errorf("%s: %s does not exist; a read grant needs an existing path (create it, or fix the parameter that names it)", grants[i].Permission, m.HostPath))
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: resolve %s: %w", grants[i].Permission, m.HostPath, err))
			continue
		}
		if fi, err := os.Stat(real); err == nil && fi.Mode()&fs.ModeSocket != 0 {
			// A read-only bind still lets a tool connect() to a socket.
			errs = append(errs, fmt.Errorf("%s: %s is a Unix socket: a filesystem grant cannot hand out a socket; refusing", grants[i].Permission, real))
			continue
		}
		m.Resolved = real
	}
	return errors.Join(errs...)
}

// CreateWriteDirs creates the missing paths of write grants, as
// directories owned by uid:gid, once the policy has allowed the run (a
// denied grant never creates anything). Each is then resolved again and
// must still be itself: a symlink swapped in meanwhile refuses the run.
func CreateWriteDirs(grants []permissions.Grant, uid, gid int) error {
	var errs []error
	for i := range grants {
		m := grants[i].Mount
		if m == nil || !m.Write {
			continue
		}
		if _, err := os.Lstat(m.HostPath); err == nil || !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := mkdirAllOwned(m.HostPath, uid, gid); err != nil {
			errs = append(errs, fmt.Errorf("%s: create %s: %w", grants[i].Permission, m.HostPath, err))
			continue
		}
		real, err := filepath.EvalSymlinks(m.HostPath)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: resolve %s: %w", grants[i].Permission, m.HostPath, err))
			continue
		}
		if m.Resolved != "" && real != m.Resolved {
			errs = append(errs, fmt.Errorf("%s: %s changed into a link to %s while the run was planned; refusing", grants[i].Permission, m.HostPath, real))
			continue
		}
		m.Resolved = real
	}
	return errors.Join(errs...)
}

// mkdirAllOwned is os.MkdirAll whose new directories belong to uid:gid.
func mkdirAllOwned(path string, uid, gid int) error {
	var created []string
	for p := path; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil {
			break
		}
		created = append(created, p)
		if p == filepath.Dir(p) {
			break
		}
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return err
	}
	for _, p := range created {
		if err := os.Lchown(p, uid, gid); err != nil && os.Geteuid() == 0 {
			return err
		}
	}
	return nil
}

// resolveExistingPrefix resolves the longest existing prefix of path and
// appends the rest, so a missing path under a symlinked parent is decided
// where it would really be created.
func resolveExistingPrefix(path string) string {
	rest := ""
	for p := path; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		}
		if p == filepath.Dir(p) {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// socketWalkLimit bounds the search for sockets under a grant.
const socketWalkLimit = 100000

// CheckNoSockets refuses filesystem grants outside the working directory
// that hold a Unix socket: a bind mount, read-only or not, still lets a
// tool connect() to every socket under it (a session bus, a container
// engine, an X server), which is code execution on the host. The policy
// denies the usual places (/run, /var/run, /tmp/.X11-unix, …); this catches
// the rest. Grants under the working directory (the user's own project)
// are not walked. A tree too large to check is refused: a narrower grant
// fixes it.
func CheckNoSockets(grants []permissions.Grant, cwd string) error {
	var errs []error
	for _, g := range grants {
		m := g.Mount
		if m == nil || m.Resolved == "" || within(m.Resolved, cwd) || within(m.HostPath, cwd) {
			continue
		}
		n := 0
		err := filepath.WalkDir(m.Resolved, func(path string, de fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable here is unreadable for the tool too
			}
			if n++; n > socketWalkLimit {
				return fmt.Errorf("more than %d entries to check for sockets", socketWalkLimit)
			}
			if de.Type()&fs.ModeSocket != 0 {
				return fmt.Errorf("it holds the Unix socket %s, which the tool could connect to", path)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v; grant a narrower path: %w", g.Permission, err, ErrPlan))
		}
	}
	return errors.Join(errs...)
}

// within reports whether p is dir or under it, where dir is a directory
// narrower than the whole file system ("" and "/" hold nothing here).
func within(p, dir string) bool {
	return dir != "" && dir != "/" && pathglob.Within(p, strings.TrimSuffix(dir, "/"))
}
