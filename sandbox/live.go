package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/hostsetup"
	"github.com/sandboxed-dev/sandboxed/internal/runlock"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
)

// A run is live while its controller holds the lock on the file
// runlock.FileName in the run's host directory (see package runlock). The
// directory appears with the lock held and before the run makes any other
// host resource; the kernel drops the lock when the controller dies,
// however it dies. The lock lives on the file, so a gc in another network
// or PID namespace, or in a container that shares the directory, gets the
// same answer. A gc that cannot test the lock — the directory is not
// there (another host or container sharing the cgroup tree or the engine,
// another user, another SANDBOXED_RUNTIME_DIR) or cannot be read — does
// not touch the run, and says so.

// holdRun creates the run's host directory hostDir with its liveness lock
// held. The caller must call release when the run's other resources are
// gone; it removes the directory, then drops the lock.
func holdRun(hostDir string) (release func(), err error) {
	h, err := runlock.Create(hostDir)
	if err != nil {
		return nil, fmt.Errorf("mark run %s live: %w", filepath.Base(hostDir), err)
	}
	return h.Release, nil
}

// Live reports whether a controller holds the run runID live, as far as
// this controller can see: false also when it cannot tell (see
// Liveness).
func (c *Controller) Live(runID string) bool {
	st, _ := c.Liveness(runID)
	return st == runlock.Held
}

// Liveness tests the liveness lock of the run runID in this controller's
// runtime directory; when the answer is runlock.Unknown it says why.
func (c *Controller) Liveness(runID string) (runlock.State, string) {
	if c.RuntimeDir == "" || !isolation.RunIDPattern.MatchString(runID) {
		return runlock.Unknown, "not a run of this runtime directory"
	}
	return runlock.Test(HostDir(c.RuntimeDir, runID))
}

// GCReport is what a gc did.
type GCReport struct {
	// Removed are the resources it removed, one line each.
	Removed []string `json:"removed"`
	// LeftAlone are the runs whose resources it found and did not touch,
	// because it could not tell whether they are live.
	LeftAlone []Unjudged `json:"left_alone"`
}

// Unjudged is a run gc could not judge, and why.
type Unjudged struct {
	RunID  string `json:"run_id"`
	Reason string `json:"reason"`
}

// judge answers the backends' liveness questions during one gc: a run is
// reaped only when its lock can be tested and is free. It notes the runs
// it could not judge.
type judge struct {
	c        *Controller
	mu       sync.Mutex
	unjudged map[string]string
}

// keep is the backends' keep function.
func (j *judge) keep(runID string) bool {
	st, why := j.c.Liveness(runID)
	if st == runlock.Unknown {
		j.mu.Lock()
		if j.unjudged == nil {
			j.unjudged = map[string]string{}
		}
		j.unjudged[runID] = why
		j.mu.Unlock()
	}
	return st != runlock.Free
}

// leftAlone lists the runs keep could not judge, by run id.
func (j *judge) leftAlone() []Unjudged {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := []Unjudged{}
	for id, why := range j.unjudged {
		out = append(out, Unjudged{RunID: id, Reason: why})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].RunID < out[b].RunID })
	return out
}

// GC removes what crashed runs left behind: each backend's processes,
// cgroups, containers and mounts, then stale run directories and sockets.
// Live runs are not touched, nor runs it cannot judge (see Liveness),
// which it reports.
func (c *Controller) GC(ctx context.Context) (GCReport, error) {
	var bs []isolation.Backend
	for _, b := range c.Backends {
		bs = append(bs, b)
	}
	j := &judge{c: c}
	reaped, err := c.gc(ctx, j, bs...)
	// Records half-written by versions that staged them beside the
	// records (runs/.RUNID-*): only here, as every name must be read.
	if c.StateDir != "" {
		legacy, _ := filepath.Glob(filepath.Join(c.StateDir, "runs", ".*"))
		r, lerr := removeHalfRecords(legacy, filepath.Base(stagingDir(c.StateDir)))
		reaped = append(reaped, r...)
		err = errors.Join(err, lerr)
	}
	if reaped == nil {
		reaped = []string{}
	}
	return GCReport{Removed: reaped, LeftAlone: j.leftAlone()}, err
}

func (c *Controller) gc(ctx context.Context, j *judge, backends ...isolation.Backend) ([]string, error) {
	if j == nil {
		j = &judge{c: c}
	}
	var reaped []string
	var errs []error
	for _, b := range backends {
		r, err := b.GC(ctx, j.keep)
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
	r, err := c.gcRunDirs(j)
	reaped = append(reaped, r...)
	errs = append(errs, err)
	if c.RuntimeDir != "" {
		// Holds of write grants that runs killed mid-run left, and the
		// grants they recorded handed over: handed back here.
		back := func(g hostsetup.Grant) error { return process.HandBack(ctx, g) }
		r, err = hostsetup.ReapGrantHolds(filepath.Join(c.RuntimeDir, hostsetup.GrantHoldsDir), back)
		reaped = append(reaped, r...)
		errs = append(errs, err)
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

// gcRunDirs removes the host directories of runs whose lock is free, and
// directories a controller died creating (runlock.Create's hidden ones,
// unlocked and older than creatingAge). Anything else in the runtime
// directory is not a run's and is not touched.
func (c *Controller) gcRunDirs(j *judge) ([]string, error) {
	if c.RuntimeDir == "" {
		return nil, nil
	}
	entries, _ := os.ReadDir(c.RuntimeDir)
	var reaped []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(c.RuntimeDir, e.Name())
		what := "run dir "
		if _, ok := runlock.Creating(e.Name()); ok {
			fi, err := e.Info()
			if st, _ := runlock.Test(dir); st == runlock.Held || err != nil || time.Since(fi.ModTime()) < creatingAge {
				continue
			}
			what = "half-created run dir "
		} else if !isolation.RunIDPattern.MatchString(e.Name()) || j.keep(e.Name()) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove stale run dir %s: %w", dir, err))
			continue
		}
		reaped = append(reaped, what+dir)
	}
	return reaped, errors.Join(errs...)
}

// creatingAge is how long a run directory being created may stay
// unlocked (between its creation and its lock) before gc takes it for
// the leftover of a crash.
const creatingAge = time.Minute

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
