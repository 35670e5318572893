package runlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// FileName is the lock file's name in a run's directory.
const FileName = "live.lock"

// tempPrefix starts the names of directories being created (Create); gc
// tells them apart from runs' directories by it.
const tempPrefix = ".creating-"

// State is what a test of a run's lock found.
type State int

const (
	// Unknown: the lock could not be tested (see Test's reason); the run
	// may be live.
	Unknown State = iota
	// Held: a live controller holds the lock.
	Held
	// Free: the directory and its lock file exist and nobody holds the
	// lock: the controller is gone.
	Free
)

// String names the state.
func (s State) String() string {
	switch s {
	case Held:
		return "held"
	case Free:
		return "free"
	}
	return "unknown"
}

// Hold is a lock held on a run's directory. Release it when the run's host
// resources are gone.
type Hold struct {
	dir string
	f   *os.File
}

// Dir is the run's directory.
func (h *Hold) Dir() string { return h.dir }

// Create makes dir (mode 0700; its parent must exist) with a held lock on
// dir/FileName. dir becomes visible only once the lock is held: it is made
// under a hidden temporary name beside it, locked, then renamed. It fails
// when dir exists. The caller must call Release.
func Create(dir string) (_ *Hold, retErr error) {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), tempPrefix+filepath.Base(dir)+"-")
	if err != nil {
		return nil, fmt.Errorf("create run dir %s: %w", dir, err)
	}
	defer func() {
		if retErr != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("create run dir %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(tmp, FileName), os.O_RDWR|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create the liveness lock of %s: %w", dir, err)
	}
	if err := lock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", filepath.Join(dir, FileName), err)
	}
	// rename(2) onto an existing empty directory succeeds; a run id is
	// used once, so refuse rather than take over another run's directory.
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		f.Close()
		return nil, fmt.Errorf("create run dir %s: %w", dir, os.ErrExist)
	}
	if err := os.Rename(tmp, dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("create run dir %s: %w", dir, err)
	}
	return &Hold{dir: dir, f: f}, nil
}

// Release removes the run's directory and everything in it, then drops the
// lock. It is idempotent.
func (h *Hold) Release() {
	if h == nil || h.f == nil {
		return
	}
	os.RemoveAll(h.dir)
	h.f.Close()
	h.f = nil
}

// Test reports whether the run whose directory is dir is live, and when
// the answer is Unknown, why.
func Test(dir string) (State, string) {
	if _, err := os.Lstat(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Unknown, "no run directory " + dir + " here (a run of another host, container, user or runtime directory)"
		}
		return Unknown, fmt.Sprintf("cannot read its run directory: %v", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, FileName), os.O_RDONLY|noFollow, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Unknown, "its run directory " + dir + " holds no liveness lock (a run of an older version)"
		}
		return Unknown, fmt.Sprintf("cannot open its liveness lock: %v", err)
	}
	defer f.Close()
	held, err := locked(f)
	if err != nil {
		return Unknown, fmt.Sprintf("cannot test its liveness lock: %v", err)
	}
	if held {
		return Held, ""
	}
	return Free, ""
}

// Creating reports whether name, an entry of a runtime directory, is a run
// directory being created by Create, and if so the run directory's name.
func Creating(name string) (run string, ok bool) {
	rest, ok := strings.CutPrefix(name, tempPrefix)
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '-')
	if i <= 0 {
		return "", false
	}
	return rest[:i], true
}
