package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// A run is live while its controller holds the abstract Unix socket
// "@sandboxed/run/<run-id>". The kernel releases it when the controller
// dies, however it dies, and the name does not depend on any directory or
// environment variable, so a gc in any process — whatever its
// SANDBOXED_RUNTIME_DIR — can tell a crashed run's leftovers from a run in
// progress. A run takes it before it makes any host resource.
func liveName(runID string) string { return "@sandboxed/run/" + runID }

// holdRun marks runID live. The caller must call release when the run's
// resources are gone.
func holdRun(runID string) (release func(), err error) {
	l, err := net.Listen("unix", liveName(runID))
	if err != nil {
		return nil, fmt.Errorf("mark run %s live: %w", runID, err)
	}
	return func() { l.Close() }, nil
}

// Live reports whether the run runID is in progress in some process.
func (c *Controller) Live(runID string) bool {
	l, err := net.Listen("unix", liveName(runID))
	if err != nil {
		return errors.Is(err, syscall.EADDRINUSE)
	}
	l.Close()
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
