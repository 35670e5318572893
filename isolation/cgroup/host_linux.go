package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	cgroups "github.com/containerd/cgroups/v3"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// Host describes the cgroup hierarchies of this machine.
type Host struct {
	// Version is 2 on unified hosts, 1 on legacy and hybrid hosts.
	Version int
	// V1 maps a v1 controller name (memory, pids, cpu, freezer) to its
	// hierarchy root, e.g. /sys/fs/cgroup/memory.
	V1 map[string]string
	// V2 is the unified mountpoint with its available controllers.
	V2            string
	V2Controllers []string
}

// Detect inspects the running host.
func Detect() (*Host, error) {
	if cgroups.Mode() == cgroups.Unified {
		h := &Host{Version: 2, V2: "/sys/fs/cgroup"}
		b, err := os.ReadFile(filepath.Join(h.V2, "cgroup.controllers"))
		if err != nil {
			return nil, fmt.Errorf("read cgroup v2 controllers: %w", err)
		}
		h.V2Controllers = strings.Fields(string(b))
		return h, nil
	}
	h := &Host{Version: 1, V1: map[string]string{}}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ... mountpoint ... - cgroup cgroup rw,memory
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, x := range fields {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+3 >= len(fields) || fields[sep+1] != "cgroup" || len(fields) < 5 {
			continue
		}
		for _, opt := range strings.Split(fields[sep+3], ",") {
			switch opt {
			case "memory", "pids", "cpu", "freezer":
				if _, ok := h.V1[opt]; !ok {
					h.V1[opt] = fields[4]
				}
			}
		}
	}
	if len(h.V1) == 0 {
		return nil, &isolation.UnsupportedError{What: "cgroups", Fix: "mount cgroup v2 at /sys/fs/cgroup (or the v1 memory, pids and freezer controllers)"}
	}
	return h, nil
}

// Missing returns what r needs that the host lacks, as UnsupportedErrors.
func (h *Host) Missing(r Resources) []error {
	var errs []error
	need := func(ctl string) {
		if h.Version == 2 {
			for _, c := range h.V2Controllers {
				if c == ctl {
					return
				}
			}
			errs = append(errs, &isolation.UnsupportedError{
				What: "the cgroup v2 " + ctl + " controller",
				Fix:  "enable it in " + filepath.Join(h.V2, "cgroup.subtree_control") + " (echo +" + ctl + " > …/cgroup.subtree_control) or boot with systemd.unified_cgroup_hierarchy=1",
			})
			return
		}
		if _, ok := h.V1[ctl]; !ok {
			errs = append(errs, &isolation.UnsupportedError{
				What: "the cgroup v1 " + ctl + " controller",
				Fix:  "mount it (mount -t cgroup -o " + ctl + " cgroup /sys/fs/cgroup/" + ctl + ") or boot with cgroup_enable=" + ctl,
			})
		}
	}
	if r.MemoryBytes > 0 {
		need("memory")
	}
	if r.Pids > 0 {
		need("pids")
	}
	if r.CPUs > 0 {
		need("cpu")
	}
	if h.Version == 1 {
		need("freezer") // to kill a group atomically
	}
	return errs
}

// New makes run id's cgroup with r. On error nothing is left behind.
func (h *Host) New(runID string, r Resources) (Group, error) {
	p, err := path(runID)
	if err != nil {
		return nil, err
	}
	if errs := h.Missing(r); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if h.Version == 2 {
		return newV2(h, p, r)
	}
	return newV1(h, p, r)
}

// Load opens the existing cgroup of run id.
func (h *Host) Load(runID string) (Group, error) {
	p, err := path(runID)
	if err != nil {
		return nil, err
	}
	if h.Version == 2 {
		return loadV2(h, p)
	}
	return loadV1(h, p)
}

// List returns the run ids that have a cgroup. Subtrees delegated to
// users (UserPrefix) are not runs and are not listed.
func (h *Host) List() ([]string, error) {
	var roots []string
	if h.Version == 2 {
		roots = []string{h.V2}
	} else {
		for _, r := range h.V1 {
			roots = append(roots, r)
		}
	}
	seen := map[string]bool{}
	var ids []string
	for _, r := range roots {
		ents, err := os.ReadDir(filepath.Join(r, Parent))
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, fmt.Errorf("list run cgroups: %w", err)
		}
		for _, e := range ents {
			if e.IsDir() && !seen[e.Name()] && !strings.HasPrefix(e.Name(), UserPrefix) {
				seen[e.Name()] = true
				ids = append(ids, e.Name())
			}
		}
	}
	return ids, nil
}

// Age reports how long ago run id's cgroup was made (the newest of its
// directories across hierarchies).
func (h *Host) Age(runID string) (time.Duration, error) {
	p, err := path(runID)
	if err != nil {
		return 0, err
	}
	var roots []string
	if h.Version == 2 {
		roots = []string{h.V2}
	} else {
		for _, r := range h.V1 {
			roots = append(roots, r)
		}
	}
	var newest time.Time
	found := false
	for _, r := range roots {
		fi, err := os.Stat(filepath.Join(r, p))
		if err != nil {
			continue
		}
		found = true
		if fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
	}
	if !found {
		return 0, fmt.Errorf("age of cgroup %s: %w", p, ErrNotFound)
	}
	return time.Since(newest), nil
}
