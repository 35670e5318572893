package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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
			m.Resolved = m.HostPath
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
		m.Resolved = real
	}
	return errors.Join(errs...)
}
