package host

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
)

// Delegation says which cgroup controllers the host delegates to a user,
// so that the process tier can limit that user's runs without root.
type Delegation struct {
	// Version is the cgroup version of the host (0: none mounted).
	Version int `json:"version"`
	// Controllers are the controllers delegated to the user; Missing the
	// ones the process tier uses that are not.
	Controllers []string `json:"controllers"`
	Missing     []string `json:"missing,omitempty"`
	// Where is the delegated directory (v2) or directories (v1).
	Where []string `json:"where,omitempty"`
	// OK is true when every controller the process tier uses is
	// delegated.
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// V2UserManagerDir is the cgroup (relative to the v2 mountpoint) of uid's
// systemd user manager, whose subtree systemd delegates with Delegate=yes.
func V2UserManagerDir(uid int) string {
	id := strconv.Itoa(uid)
	return filepath.Join("user.slice", "user-"+id+".slice", "user@"+id+".service")
}

// v2DelegateFix is how an administrator makes systemd delegate the
// controllers to every user's manager.
const v2DelegateFix = `delegate them to every user's manager: sudo mkdir -p /etc/systemd/system/user@.service.d && printf '[Service]\nDelegate=cpu cpuset io memory pids\n' | sudo tee /etc/systemd/system/user@.service.d/delegate.conf && sudo systemctl daemon-reload, then log in again`

// v2Wanted are the controllers a rootless run's limits use on cgroup v2.
var v2Wanted = []string{"memory", "pids", "cpu"}

// Delegation probes which controllers are delegated to u: on v1 the
// directories setup makes (sandboxed/user-UID in each hierarchy, owned by
// u with its cgroup.procs); on v2 the controllers of u's systemd manager.
// It reads files only.
func (s *System) Delegation(u User) Delegation {
	d := Delegation{Version: s.Cgroups.Version}
	switch s.Cgroups.Version {
	case 1:
		mounts, ctls := s.v1Mounts()
		for _, mnt := range mounts {
			dir := filepath.Join(mnt, cgroup.UserDir(u.UID))
			if s.ownedBy(dir, u) && s.ownedBy(filepath.Join(dir, "cgroup.procs"), u) {
				d.Controllers = append(d.Controllers, ctls[mnt]...)
				d.Where = append(d.Where, dir)
			} else {
				d.Missing = append(d.Missing, ctls[mnt]...)
			}
		}
		sortLike(d.Controllers, V1Controllers)
		sortLike(d.Missing, V1Controllers)
		if len(d.Controllers) == 0 && len(d.Missing) == 0 {
			d.Detail = "cgroup v1 without the memory, pids, cpu or freezer controller"
			d.Fix = "mount them (mount -t cgroup -o memory cgroup /sys/fs/cgroup/memory, …)"
			return d
		}
		where := filepath.Join("/sys/fs/cgroup/CONTROLLER", cgroup.UserDir(u.UID))
		d.OK = len(d.Missing) == 0
		if d.OK {
			d.Detail = fmt.Sprintf("cgroup v1: %s delegated to %s at %s", strings.Join(d.Controllers, " "), u.Name, where)
			return d
		}
		d.Detail = fmt.Sprintf("cgroup v1: %s not delegated to %s (no %s owned by uid %d)", strings.Join(d.Missing, " "), u.Name, where, u.UID)
		d.Fix = "sudo sandboxed setup --user " + u.Name
		if _, exists, _ := s.loadManifest(u.Name); exists {
			d.Fix += " (setup was run, but cgroup v1 directories vanish at reboot: run it again after each boot, or where systemd is the init it installs a unit that does)"
		}
		return d
	case 2:
		dir := filepath.Join(s.Cgroups.V2, V2UserManagerDir(u.UID))
		d.Where = []string{dir}
		b, err := os.ReadFile(s.path(filepath.Join(dir, "cgroup.controllers")))
		if err != nil {
			d.Missing = v2Wanted
			d.Detail = fmt.Sprintf("cgroup v2: no systemd user manager runs for %s (no %s)", u.Name, dir)
			d.Fix = "log in as " + u.Name + " through a systemd-logind session (ssh, a desktop, machinectl shell " + u.Name + "@), or keep a manager running: sudo loginctl enable-linger " + u.Name
			return d
		}
		have := strings.Fields(string(b))
		for _, c := range v2Wanted {
			if slices.Contains(have, c) {
				d.Controllers = append(d.Controllers, c)
			} else {
				d.Missing = append(d.Missing, c)
			}
		}
		d.OK = len(d.Missing) == 0
		if d.OK {
			d.Detail = fmt.Sprintf("cgroup v2: systemd delegates %s to %s's manager (user@%d.service)", strings.Join(d.Controllers, " "), u.Name, u.UID)
			return d
		}
		d.Detail = fmt.Sprintf("cgroup v2: user@%d.service is not delegated %s (it has: %s)", u.UID, strings.Join(d.Missing, " "), strings.Join(have, " "))
		d.Fix = v2DelegateFix
		return d
	}
	d.Detail = "no cgroup hierarchy is mounted"
	d.Fix = "mount cgroup v2 at /sys/fs/cgroup"
	return d
}

// ownedBy reports whether the file at p (on the host) belongs to u.
func (s *System) ownedBy(p string, u User) bool {
	fi, err := os.Stat(s.path(p))
	if err != nil {
		return false
	}
	uid, _, ok := fileOwner(fi)
	return ok && uid == u.UID
}

// sortLike orders list as order orders the same names.
func sortLike(list, order []string) {
	slices.SortFunc(list, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
}
