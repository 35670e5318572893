package cgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3/cgroup2"
)

type v2Group struct {
	h    *Host
	path string
	dir  string // absolute
	m    *cgroup2.Manager
}

// v2Resources turns r into cgroup v2 resources. Swap is set separately:
// memory.swap.max exists only where the kernel accounts swap.
func v2Resources(r Resources) *cgroup2.Resources {
	res := &cgroup2.Resources{}
	if r.MemoryBytes > 0 {
		m := r.MemoryBytes
		res.Memory = &cgroup2.Memory{Max: &m}
	}
	if r.Pids > 0 {
		res.Pids = &cgroup2.Pids{Max: r.Pids}
	}
	if r.CPUQuota > 0 {
		quota, period := r.CPUQuota, r.CPUPeriod
		res.CPU = &cgroup2.CPU{Max: cgroup2.NewCPUMax(&quota, &period)}
	}
	return res
}

func newV2(h *Host, p string, r Resources) (_ Group, retErr error) {
	m, err := cgroup2.NewManager(h.V2, p, v2Resources(r))
	if err != nil {
		os.Remove(filepath.Join(h.V2, p))
		return nil, fmt.Errorf("create cgroup %s: %w", p, err)
	}
	g := &v2Group{h: h, path: p, dir: filepath.Join(h.V2, p), m: m}
	defer func() {
		if retErr != nil {
			os.Remove(g.dir)
		}
	}()
	if err := g.noSwap(r); err != nil {
		return nil, err
	}
	return g, nil
}

// noSwap turns swapping off for a group with a memory limit, where the
// kernel accounts swap.
func (g *v2Group) noSwap(r Resources) error {
	if r.MemoryBytes <= 0 {
		return nil
	}
	swap := filepath.Join(g.dir, "memory.swap.max")
	if _, err := os.Stat(swap); err == nil {
		if err := os.WriteFile(swap, []byte("0"), 0); err != nil {
			return fmt.Errorf("set %s: %w", swap, err)
		}
	}
	return nil
}

func (g *v2Group) Update(r Resources) error {
	if err := g.noSwap(r); err != nil {
		return err
	}
	if err := g.m.Update(v2Resources(r)); err != nil {
		return fmt.Errorf("set limits of cgroup %s: %w", g.path, err)
	}
	return nil
}

func loadV2(h *Host, p string) (Group, error) {
	dir := filepath.Join(h.V2, p)
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("load cgroup %s: %w", p, ErrNotFound)
	}
	m, err := cgroup2.Load(p, cgroup2.WithMountpoint(h.V2))
	if err != nil {
		return nil, fmt.Errorf("load cgroup %s: %w", p, err)
	}
	return &v2Group{h: h, path: p, dir: dir, m: m}, nil
}

func (g *v2Group) Version() int { return 2 }
func (g *v2Group) Path() string { return g.path }

func (g *v2Group) AddProc(pid int) error {
	if err := g.m.AddProc(uint64(pid)); err != nil {
		return fmt.Errorf("add pid %d to cgroup %s: %w", pid, g.path, err)
	}
	return nil
}

func (g *v2Group) Procs() ([]int, error) {
	return readProcs(filepath.Join(g.dir, "cgroup.procs"))
}

func (g *v2Group) Signal(sig syscall.Signal) error {
	pids, err := g.Procs()
	if err != nil {
		return fmt.Errorf("signal cgroup %s: %w", g.path, err)
	}
	signalAll(pids, sig)
	return nil
}

// Kill writes cgroup.kill (freeze, kill, thaw on kernels before 5.14) and
// waits until the group is empty.
func (g *v2Group) Kill(ctx context.Context) error {
	if err := g.m.Kill(); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("kill cgroup %s: %w", g.path, err)
	}
	if err := poll(ctx, g.unpopulated); err != nil {
		return fmt.Errorf("kill cgroup %s: %w", g.path, err)
	}
	return nil
}

// unpopulated reports whether no process is left in the group. It reads
// cgroup.events, not cgroup.procs: cgroup.procs stops listing a process as
// soon as all its threads are exiting, but the group stays populated, and
// refuses rmdir with EBUSY, until they are gone.
func (g *v2Group) unpopulated() (bool, error) {
	n, err := readKey(filepath.Join(g.dir, "cgroup.events"), "populated")
	return n == 0, err
}

func (g *v2Group) Stats() (Stats, error) {
	var s Stats
	peak, err := readInt(filepath.Join(g.dir, "memory.peak"))
	if os.IsNotExist(err) {
		// Kernels before 5.19: the current usage is the best there is.
		peak, err = readInt(filepath.Join(g.dir, "memory.current"))
	}
	if err != nil && !os.IsNotExist(err) {
		return s, fmt.Errorf("read cgroup %s memory peak: %w", g.path, err)
	}
	s.PeakMemoryBytes = peak
	if n, err := readKey(filepath.Join(g.dir, "memory.events"), "oom_kill"); err == nil {
		s.OOMKilled = n > 0
	}
	if n, err := readKey(filepath.Join(g.dir, "pids.events"), "max"); err == nil {
		s.PidsLimitHit = n > 0
	}
	return s, nil
}

func (g *v2Group) Delete() error {
	if _, err := os.Stat(g.dir); os.IsNotExist(err) {
		return nil
	}
	// rmdir only: a cgroup directory's files are not removable.
	err := os.Remove(g.dir)
	if errors.Is(err, syscall.EBUSY) {
		// Processes killed a moment ago may still be exiting (see
		// unpopulated): give them deleteWait to be gone.
		ctx, cancel := context.WithTimeout(context.Background(), deleteWait)
		defer cancel()
		if poll(ctx, g.unpopulated) == nil {
			err = os.Remove(g.dir)
		}
	}
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove cgroup %s: %w", g.path, err)
	}
	return nil
}

// deleteWait bounds how long Delete waits for exiting processes to leave.
var deleteWait = 5 * time.Second
