package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	cgroups "github.com/containerd/cgroups/v3"
	"golang.org/x/sys/unix"

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

	// Base is the cgroup, relative to each hierarchy root, that holds one
	// child per run: /sandboxed as root. For any other user it is the
	// cgroup delegated to that user: on v1 /sandboxed/user-UID, which
	// `sudo sandboxed setup --user NAME` makes and chowns once; on v2 a
	// transient systemd scope (Delegate=yes) of the user's own manager,
	// asked for when the first run of this process starts. In a process
	// that adopted the cgroup systemd delegated to its unit
	// (AdoptUnitCgroup), that cgroup, as root too.
	Base string
	// Rootless is set when this process is not root: it can only make
	// cgroups in what was delegated to it.
	Rootless bool
	// NoDelegation says why this user has no delegated cgroup at all (an
	// *isolation.UnsupportedError with the fix); nil as root or when
	// there is one. A run that needs a limit is then refused.
	NoDelegation error
	// Undelegated lists, rootless on v1, the controllers the host has
	// whose hierarchy has no delegated cgroup for this user; V1 then
	// holds only the delegated ones.
	Undelegated []string
	// Mounted maps, on v1, every controller the process tier uses that
	// the host has mounted to its hierarchy root, delegated to this user
	// or not (V1 with nothing removed): what setup and doctor work on.
	Mounted map[string]string

	uid   int
	scope *userScope // v2 rootless: the scope, once made
	unit  bool       // Base is the cgroup systemd delegated to this process (AdoptUnitCgroup)
}

// Detect inspects the running host as this process's user sees it: as
// root every hierarchy; for any other user only what was delegated to it
// (Rootless, Base, NoDelegation, Undelegated). It has no side effects.
func Detect() (*Host, error) {
	return detect(os.Geteuid())
}

func detect(uid int) (*Host, error) {
	if cgroups.Mode() == cgroups.Unified {
		if base := adopted.Load(); base != nil {
			return adoptedV2("/sys/fs/cgroup", *base, uid)
		}
		h := &Host{Version: 2, V2: "/sys/fs/cgroup", Base: "/" + Parent, uid: uid}
		b, err := os.ReadFile(filepath.Join(h.V2, "cgroup.controllers"))
		if err != nil {
			return nil, fmt.Errorf("read cgroup v2 controllers: %w", err)
		}
		h.V2Controllers = strings.Fields(string(b))
		if uid != 0 {
			h.detectUserManager()
		}
		return h, nil
	}
	h := &Host{Version: 1, V1: map[string]string{}, Base: "/" + Parent, uid: uid}
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
	h.Mounted = maps.Clone(h.V1)
	if uid != 0 {
		h.delegatedV1(uid)
	}
	return h, nil
}

// path returns the relative path of run id's cgroup: Base/<run-id>. No
// run may take a user's subtree (UserPrefix) or the leaf that holds this
// process (supervisorCgroup), whose limits and kill would be the run's.
func (h *Host) path(runID string) (string, error) {
	if runID == "" || strings.ContainsAny(runID, "/\x00") || runID == "." || runID == ".." || len(runID) > 200 ||
		strings.HasPrefix(runID, UserPrefix) || runID == supervisorCgroup {
		return "", fmt.Errorf("cgroup for run %q: %w", runID, ErrBadRunID)
	}
	if h.base() == "" {
		return "", fmt.Errorf("cgroup for run %s: no delegated cgroup yet: %w", runID, ErrNotFound)
	}
	return h.base() + "/" + runID, nil
}

// base is Base, defaulting to /sandboxed as root; "" when a rootless
// process has no delegated cgroup yet.
func (h *Host) base() string {
	if h.Base == "" && !h.Rootless {
		return "/" + Parent
	}
	return h.Base
}

// SetupFix is the command that delegates a cgroup (v1) and subordinate ids
// to the user running sandboxed.
func SetupFix() string {
	name := "$USER"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	return "sudo sandboxed setup --user " + name
}

// delegatedV1 keeps in h.V1 the hierarchies where uid owns its delegated
// cgroup, and notes the others.
func (h *Host) delegatedV1(uid int) {
	h.Rootless = true
	h.Base = UserDir(uid)
	for _, ctl := range sortedKeys(h.V1) {
		if !ownedBy(filepath.Join(h.V1[ctl], h.Base), uid) {
			h.Undelegated = append(h.Undelegated, ctl)
			delete(h.V1, ctl)
		}
	}
	if len(h.V1) == 0 {
		h.NoDelegation = &isolation.UnsupportedError{
			What: fmt.Sprintf("a cgroup delegated to uid %d (cgroup v1: no %s owned by it), needed for the memory and pids limits of every run", uid, h.Base),
			Fix:  SetupFix() + " (once per host), or run sandboxed as root",
		}
	}
}

// ownedBy reports whether dir and the files that move processes into it
// belong to uid.
func ownedBy(dir string, uid int) bool {
	for _, p := range []string{dir, filepath.Join(dir, "cgroup.procs"), filepath.Join(dir, "tasks")} {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil || int(st.Uid) != uid {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Usable lists the controllers (memory, pids, cpu, freezer on v1) in which
// this process can make run cgroups, sorted.
func (h *Host) Usable() []string {
	if h.NoDelegation != nil {
		return nil
	}
	if h.Version == 2 {
		out := append([]string(nil), h.V2Controllers...)
		sort.Strings(out)
		return out
	}
	return sortedKeys(h.V1)
}

// Missing returns what r needs that the host lacks, as UnsupportedErrors.
func (h *Host) Missing(r Resources) []error {
	var errs []error
	if h.NoDelegation != nil {
		if r != (Resources{}) || h.Version == 1 {
			errs = append(errs, h.NoDelegation)
		}
		return errs
	}
	need := func(ctl string) {
		if slices.Contains(h.Undelegated, ctl) {
			errs = append(errs, &isolation.UnsupportedError{
				What: fmt.Sprintf("the cgroup v1 %s controller for uid %d (no %s owned by it in %s)", ctl, h.uid, h.Base, ctl),
				Fix:  SetupFix() + " (once per host), or run sandboxed as root",
			})
			return
		}
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
	if r.CPUQuota > 0 {
		need("cpu")
	}
	if h.Version == 1 {
		need("freezer") // to kill a group atomically
	}
	return errs
}

// New makes run id's cgroup with r. On error nothing is left behind.
func (h *Host) New(runID string, r Resources) (Group, error) {
	if errs := h.Missing(r); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if h.Version == 2 && h.Rootless && !h.unit {
		if err := h.ensureScope(); err != nil {
			return nil, err
		}
	}
	p, err := h.path(runID)
	if err != nil {
		return nil, err
	}
	if h.Version == 2 {
		return newV2(h, p, r)
	}
	return newV1(h, p, r)
}

// Load opens the existing cgroup of run id.
func (h *Host) Load(runID string) (Group, error) {
	p, err := h.path(runID)
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
	if h.base() == "" || h.NoDelegation != nil {
		return nil, nil
	}
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
		ents, err := os.ReadDir(filepath.Join(r, h.base()))
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, fmt.Errorf("list run cgroups: %w", err)
		}
		for _, e := range ents {
			if e.IsDir() && !seen[e.Name()] && !strings.HasPrefix(e.Name(), UserPrefix) && e.Name() != supervisorCgroup {
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
	p, err := h.path(runID)
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

// ReadOnly reports whether a hierarchy of h is mounted read-only (a
// container's cgroupfs, by Docker's default): no cgroup can be made there,
// whoever asks.
func (h *Host) ReadOnly() bool {
	roots := []string{h.V2}
	if h.Version == 1 {
		roots = slices.Collect(maps.Values(h.V1))
	}
	for _, r := range roots {
		var st unix.Statfs_t
		if err := unix.Statfs(r, &st); err != nil || st.Flags&unix.ST_RDONLY != 0 {
			return true
		}
	}
	return false
}
