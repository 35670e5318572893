package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
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
	var bs []isolation.Backend
	for _, b := range c.Backends {
		bs = append(bs, b)
	}
	reaped, err := c.gc(ctx, bs...)
	// Records half-written by versions that staged them beside the
	// records (runs/.RUNID-*): only here, as every name must be read.
	if c.StateDir != "" {
		legacy, _ := filepath.Glob(filepath.Join(c.StateDir, "runs", ".*"))
		r, lerr := removeHalfRecords(legacy, filepath.Base(stagingDir(c.StateDir)))
		reaped = append(reaped, r...)
		err = errors.Join(err, lerr)
	}
	return reaped, err
}

func (c *Controller) gc(ctx context.Context, backends ...isolation.Backend) ([]string, error) {
	var reaped []string
	var errs []error
	for _, b := range backends {
		r, err := b.GC(ctx, c.Live)
		reaped = append(reaped, r...)
		if errors.Is(err, isolation.ErrUnsupported) {
			// A tier this host, or this user, cannot run at all (no Docker
			// engine it may reach) holds nothing this gc could reap.
			continue
		}
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
	// Run records half-written when a controller died (writeRecord's
	// staging directories); a live one is being renamed within moments.
	if c.StateDir != "" {
		half, _ := filepath.Glob(filepath.Join(stagingDir(c.StateDir), "*"))
		r, err := removeHalfRecords(half, "")
		reaped = append(reaped, r...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return reaped, errors.Join(errs...)
}

// removeHalfRecords removes the directories of dirs older than
// halfRecordAge, but the one named keep.
func removeHalfRecords(dirs []string, keep string) ([]string, error) {
	var reaped []string
	var errs []error
	for _, dir := range dirs {
		if filepath.Base(dir) == keep {
			continue
		}
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || time.Since(fi.ModTime()) < halfRecordAge {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove half-written run record %s: %w", dir, err))
			continue
		}
		reaped = append(reaped, "half-written run record "+dir)
	}
	return reaped, errors.Join(errs...)
}

// halfRecordAge is how old a hidden run record directory must be before
// gc takes it for the leftover of a crash.
const halfRecordAge = time.Hour
