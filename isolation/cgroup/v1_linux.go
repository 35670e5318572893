package cgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

type v1Group struct {
	h    *Host
	path string
	cg   cgroup1.Cgroup
}

// v1Hierarchy hands the library its controllers. The library names a
// controller's directory root/<name>, so root is the directory holding the
// mountpoint (hosts that co-mount cpu,cpuacct have a cpu symlink there).
func (h *Host) v1Hierarchy() cgroup1.Hierarchy {
	return func() ([]cgroup1.Subsystem, error) {
		var subs []cgroup1.Subsystem
		for _, name := range []string{"memory", "pids", "cpu", "freezer"} {
			mnt, ok := h.V1[name]
			if !ok {
				continue
			}
			root := filepath.Dir(mnt)
			if fi, err := os.Stat(filepath.Join(root, name)); err != nil || !fi.IsDir() {
				return nil, fmt.Errorf("cgroup v1 %s controller at %s: no %s directory next to it", name, mnt, name)
			}
			switch name {
			case "memory":
				subs = append(subs, cgroup1.NewMemory(root, cgroup1.OptionalSwap()))
			case "pids":
				subs = append(subs, cgroup1.NewPids(root))
			case "cpu":
				subs = append(subs, cgroup1.NewCpu(root))
			case "freezer":
				subs = append(subs, cgroup1.NewFreezer(root))
			}
		}
		return subs, nil
	}
}

// v1Resources turns r into the OCI resources for cgroup v1: memory+swap is
// held to the memory limit where the kernel accounts swap, otherwise
// swapping is turned off for the group.
func v1Resources(r Resources, memswAvailable bool) *specs.LinuxResources {
	res := &specs.LinuxResources{}
	if r.MemoryBytes > 0 {
		m := r.MemoryBytes
		res.Memory = &specs.LinuxMemory{Limit: &m}
		if memswAvailable {
			res.Memory.Swap = &m
		} else {
			var zero uint64
			res.Memory.Swappiness = &zero
		}
	}
	if r.Pids > 0 {
		res.Pids = &specs.LinuxPids{Limit: &r.Pids}
	}
	if r.CPUQuota > 0 {
		quota, period := r.CPUQuota, r.CPUPeriod
		res.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
	}
	return res
}

// memswAvailable reports whether the kernel accounts swap in the memory
// controller (memory.memsw.*).
func (h *Host) memswAvailable() bool {
	root, ok := h.V1["memory"]
	if !ok {
		return false
	}
	_, err := os.Stat(filepath.Join(root, "memory.memsw.limit_in_bytes"))
	return err == nil
}

func newV1(h *Host, p string, r Resources) (Group, error) {
	cg, err := cgroup1.New(cgroup1.StaticPath(p), v1Resources(r, h.memswAvailable()), cgroup1.WithHierarchy(h.v1Hierarchy()))
	if err != nil {
		// Creation may have made some of the directories.
		if old, lerr := cgroup1.Load(cgroup1.StaticPath(p), cgroup1.WithHierarchy(h.v1Hierarchy())); lerr == nil {
			_ = old.Delete()
		}
		return nil, fmt.Errorf("create cgroup %s: %w", p, err)
	}
	return &v1Group{h: h, path: p, cg: cg}, nil
}

func loadV1(h *Host, p string) (Group, error) {
	cg, err := cgroup1.Load(cgroup1.StaticPath(p), cgroup1.WithHierarchy(h.v1Hierarchy()))
	if err != nil {
		if errors.Is(err, cgroup1.ErrCgroupDeleted) {
			return nil, fmt.Errorf("load cgroup %s: %w", p, ErrNotFound)
		}
		return nil, fmt.Errorf("load cgroup %s: %w", p, err)
	}
	return &v1Group{h: h, path: p, cg: cg}, nil
}

func (g *v1Group) Version() int { return 1 }

func (g *v1Group) Update(r Resources) error {
	if err := g.cg.Update(v1Resources(r, g.h.memswAvailable())); err != nil {
		return fmt.Errorf("set limits of cgroup %s: %w", g.path, err)
	}
	return nil
}
func (g *v1Group) Path() string { return g.path }

func (g *v1Group) AddProc(pid int) error {
	if err := g.cg.AddProc(uint64(pid)); err != nil {
		return fmt.Errorf("add pid %d to cgroup %s: %w", pid, g.path, err)
	}
	return nil
}

// file is a control file of controller ctl.
func (g *v1Group) file(ctl, name string) string {
	return filepath.Join(g.h.V1[ctl], g.path, name)
}

func (g *v1Group) Procs() ([]int, error) {
	// The freezer (or memory) hierarchy holds every process of the run.
	ctl := "freezer"
	if !g.has(ctl) {
		ctl = "memory"
	}
	return readProcs(g.file(ctl, "cgroup.procs"))
}

// has reports whether the group has its directory in controller ctl's
// hierarchy: the host mounts ctl, and the group was not half removed.
func (g *v1Group) has(ctl string) bool {
	if _, ok := g.h.V1[ctl]; !ok {
		return false
	}
	_, err := os.Stat(filepath.Join(g.h.V1[ctl], g.path))
	return err == nil
}

func (g *v1Group) Signal(sig syscall.Signal) error {
	pids, err := g.Procs()
	if err != nil {
		return fmt.Errorf("signal cgroup %s: %w", g.path, err)
	}
	signalAll(pids, sig)
	return nil
}

// Kill freezes the group so nothing can fork, SIGKILLs every task, thaws
// it so the kill is delivered, and repeats until the group is empty.
//
// A group whose freezer directory is gone (removed before the rest by an
// older build, or by hand) is killed without freezing, so that gc can
// still reap it.
func (g *v1Group) Kill(ctx context.Context) error {
	freeze := g.has("freezer")
	for {
		if freeze {
			if err := g.cg.Freeze(); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("freeze cgroup %s: %w", g.path, err)
			}
		}
		pids, err := g.Procs()
		if err != nil && !os.IsNotExist(err) {
			if freeze {
				_ = g.cg.Thaw()
			}
			return fmt.Errorf("kill cgroup %s: %w", g.path, err)
		}
		signalAll(pids, syscall.SIGKILL)
		if freeze {
			if err := g.cg.Thaw(); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("thaw cgroup %s: %w", g.path, err)
			}
		}
		if len(pids) == 0 {
			return nil
		}
		if err := WaitEmpty(ctx, g.Procs); err == nil {
			return nil
		} else if ctx.Err() != nil {
			return fmt.Errorf("kill cgroup %s: %w", g.path, err)
		}
	}
}

func (g *v1Group) Stats() (Stats, error) {
	var s Stats
	if _, ok := g.h.V1["memory"]; ok {
		peak, err := readInt(g.file("memory", "memory.max_usage_in_bytes"))
		if err != nil {
			return s, fmt.Errorf("read cgroup %s memory peak: %w", g.path, err)
		}
		s.PeakMemoryBytes = peak
		oom, err := readKey(g.file("memory", "memory.oom_control"), "oom_kill")
		if err != nil {
			return s, fmt.Errorf("read cgroup %s oom count: %w", g.path, err)
		}
		s.OOMKilled = oom > 0
	}
	if _, ok := g.h.V1["pids"]; ok {
		if n, err := readKey(g.file("pids", "pids.events"), "max"); err == nil {
			s.PidsLimitHit = n > 0
		}
	}
	return s, nil
}

// Delete removes the group from every hierarchy: one rmdir each, which the
// kernel refuses while a process is inside.
func (g *v1Group) Delete() error {
	var errs []error
	for _, ctl := range []string{"memory", "pids", "cpu", "freezer"} {
		root, ok := g.h.V1[ctl]
		if !ok {
			continue
		}
		if ctl == "freezer" && len(errs) > 0 {
			// The freezer goes last, and only once the rest is gone:
			// Kill freezes through it what a half-removed group holds.
			break
		}
		if err := removeV1(filepath.Join(root, g.path)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove cgroup %s: %w", g.path, err)
	}
	return nil
}

// removeV1 removes a v1 group's directory in one hierarchy. Processes
// killed a moment ago may still be exiting, and rmdir refuses with EBUSY
// until they are gone: it gives them deleteWait.
func removeV1(dir string) error {
	err := os.Remove(dir)
	if errors.Is(err, syscall.EBUSY) {
		ctx, cancel := context.WithTimeout(context.Background(), deleteWait)
		defer cancel()
		_ = poll(ctx, func() (bool, error) {
			err = os.Remove(dir)
			return !errors.Is(err, syscall.EBUSY), nil
		})
	}
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// threadCgroups maps each v1 controller to the calling thread's cgroup.
func threadCgroups() (map[string]string, error) {
	b, err := readFile("/proc/thread-self/cgroup")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, ctl := range strings.Split(f[1], ",") {
			out[ctl] = f[2]
		}
	}
	return out, nil
}

// MovePaths returns the tasks files a thread writes "0" to: enter, to
// join every controller of the group, and leave, to go back where the
// calling thread is now (for a rootless host, the user's delegated
// cgroup, outside every run), in the same order.
func (g *v1Group) MovePaths() (enter, leave []string, err error) {
	orig, err := threadCgroups()
	if err != nil {
		return nil, nil, fmt.Errorf("read thread cgroups: %w", err)
	}
	for _, ctl := range []string{"memory", "pids", "cpu", "freezer"} {
		mnt, ok := g.h.V1[ctl]
		if !ok {
			continue
		}
		from, ok := orig[ctl]
		if !ok {
			return nil, nil, fmt.Errorf("thread is in no %s cgroup", ctl)
		}
		if g.h.Rootless {
			// Where the thread came from belongs to root.
			from = g.h.Base
		}
		enter = append(enter, filepath.Join(mnt, g.path, "tasks"))
		leave = append(leave, filepath.Join(mnt, from, "tasks"))
	}
	return enter, leave, nil
}

// EnterSelf moves the calling thread into every controller of the group.
func (g *v1Group) EnterSelf() (func() error, bool, error) {
	enter, leave, err := g.MovePaths()
	if err != nil {
		return nil, false, err
	}
	return MoveSelf(enter, leave)
}

// MoveSelf moves the calling thread into the cgroups of the tasks files
// enter, and returns leave, which moves it to those of leave. stuck: the
// thread could not be moved back from a part of enter. Preconditions: as
// SelfMover.EnterSelf.
func MoveSelf(enter, leave []string) (_ func() error, stuck bool, _ error) {
	back := func(n int) error {
		var errs []error
		for _, p := range leave[:n] {
			// "0" names the writer itself: a self-move of one thread.
			if err := writeFile(p, []byte("0")); err != nil {
				errs = append(errs, fmt.Errorf("move thread back to %s: %w", filepath.Dir(p), err))
			}
		}
		return errors.Join(errs...)
	}
	for i, p := range enter {
		if err := writeFile(p, []byte("0")); err != nil {
			err = fmt.Errorf("move thread into %s: %w", filepath.Dir(p), err)
			if lerr := back(i); lerr != nil {
				return nil, true, errors.Join(err, lerr)
			}
			return nil, false, err
		}
	}
	return func() error { return back(len(enter)) }, false, nil
}
