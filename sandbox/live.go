package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// A run is live while its controller holds an exclusive flock on
// RUNTIME/<run-id>/lock. The kernel drops the lock when the controller
// dies, however it dies, so gc can tell a crashed run's leftovers from a
// run in progress in another process.
const lockName = "lock"

// holdRun takes the run's lock in its host directory. The caller must
// call the returned release before removing the directory.
func holdRun(hostDir string) (release func(), err error) {
	f, err := os.OpenFile(filepath.Join(hostDir, lockName), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create run lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock run: %w", err)
	}
	return func() { f.Close() }, nil
}

// Live reports whether the run runID is in progress in some process.
func (c *Controller) Live(runID string) bool {
	f, err := os.Open(filepath.Join(c.RuntimeDir, runID, lockName))
	if err != nil {
		// No lock file: either the run is over, or its host directory is
		// being made this instant; a run's resources are only created
		// after its lock is held, so there is nothing of it to reap.
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		return true
	}
	return false
}

// GC removes what crashed runs left behind: each backend's processes,
// cgroups, containers and mounts, then stale run directories and sockets.
// Live runs (see Live) are not touched.
func (c *Controller) GC(ctx context.Context) ([]string, error) {
	var reaped []string
	var errs []error
	for _, b := range c.Backends {
		r, err := b.GC(ctx, c.Live)
		reaped = append(reaped, r...)
		if err != nil {
			errs = append(errs, fmt.Errorf("gc %s tier: %w", b.Tier(), err))
		}
	}
	entries, _ := os.ReadDir(c.RuntimeDir)
	for _, e := range entries {
		if !e.IsDir() || c.Live(e.Name()) {
			continue
		}
		dir := filepath.Join(c.RuntimeDir, e.Name())
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove stale run dir %s: %w", dir, err))
			continue
		}
		reaped = append(reaped, "run dir "+dir)
	}
	return reaped, errors.Join(errs...)
}
