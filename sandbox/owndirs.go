package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"

	"github.com/sandboxed-dev/sandboxed/internal/pathglob"
	"github.com/sandboxed-dev/sandboxed/internal/xdg"
	"github.com/sandboxed-dev/sandboxed/isolation/initbin"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/policy"
)

// OwnDirs are where sandboxed keeps its own files: the state directory
// (run records, the audit log), the runtime directory (the sockets of live
// runs) and the cache (the init every sandbox runs, the runner image's
// root filesystem). Empty entries are left out.
func OwnDirs(stateDir, runtimeDir string) []string {
	dirs := []string{stateDir, runtimeDir}
	if c, err := xdg.CacheDir(); err == nil {
		dirs = append(dirs, c)
	}
	return slices.DeleteFunc(dirs, func(d string) bool { return d == "" })
}

// makeOwnDirs makes the controller's own directories, and puts the init
// into the cache, before a run is planned: a directory that does not exist
// when the plan is made cannot be hidden from a grant that holds it, and
// the run would create it inside that grant. Failures are left to the
// steps that need the directories, which report them.
func (c *Controller) makeOwnDirs() {
	if c.StateDir != "" {
		_ = os.MkdirAll(c.StateDir, 0o700)
	}
	if c.RuntimeDir != "" {
		_ = ensurePrivateDir(c.RuntimeDir)
	}
	if dir, err := xdg.CacheDir(); err == nil && initbin.Embedded() {
		_, _ = initbin.Cached(dir)
	}
}

// ProtectOwnDirs returns p with dirs added to paths.deny, each as given
// and with its symlinks resolved, so that a grant of one of them or of
// anything inside is denied and a grant above one has it hidden —
// whatever the policy file says. A tool that could write the cached init
// would have its code run as the next sandbox's init; one that could
// write the audit log could rewrite history. p is not changed; patterns
// it already holds are not added again.
func ProtectOwnDirs(p *policy.Policy, dirs []string) *policy.Policy {
	if p == nil {
		return nil
	}
	cp := *p
	cp.Paths.Deny = slices.Clone(p.Paths.Deny)
	add := func(d string) {
		pat := policy.PathPattern(filepath.Clean(d))
		if !slices.Contains(cp.Paths.Deny, pat) {
			cp.Paths.Deny = append(cp.Paths.Deny, pat)
		}
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		// A relative SANDBOXED_STATE_DIR is used relative to the working
		// directory: protect it there.
		abs, err := filepath.Abs(d)
		if err != nil {
			continue
		}
		add(abs)
		add(resolveExistingPrefix(abs))
	}
	return &cp
}

// ErrOwnDirInGrant: a landlock-tier grant holds one of sandboxed's own
// directories, which that tier cannot hide.
var ErrOwnDirInGrant = errors.New("a grant holds sandboxed's own directory")

// ownDirInGrant returns a grant's host path and the own directory of
// sandboxed (OwnDirs) that lies in it, or "", "". The other tiers hide such
// a directory under a mask; the landlock tier cannot narrow a grant, and
// an operator who accepts its masks gap must not thereby hand a tool the
// cached init, the state or the run directories.
func ownDirInGrant(ms []*permissions.Mount, own []string) (grant, dir string) {
	for _, m := range ms {
		src := m.Resolved
		if src == "" {
			src = m.HostPath
		}
		for _, d := range own {
			if d == "" {
				continue
			}
			for _, c := range []string{filepath.Clean(d), resolveExistingPrefix(filepath.Clean(d))} {
				if filepath.IsAbs(c) && pathglob.Within(c, src) {
					return src, c
				}
			}
		}
	}
	return "", ""
}
