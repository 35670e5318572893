package hostsetup

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// V2Delegation says whether systemd delegates the controllers a
// rootless run uses to u's user manager on cgroup v2, from the manager's
// cgroup.controllers. Setup asks it of the user it prepares; doctor takes
// the current user's from isolation/cgroup (delegationOf).
func (s *System) V2Delegation(u User) Delegation {
	d := Delegation{Version: 2}
	dir := filepath.Join(s.Cgroups.V2, V2UserManagerDir(u.UID))
	d.Where = []string{dir}
	b, err := os.ReadFile(s.path(filepath.Join(dir, "cgroup.controllers")))
	if err != nil {
		d.Missing = v2Wanted
		d.Detail = fmt.Sprintf("cgroup v2: no systemd user manager runs for %s (no %s)", u.Name, dir)
		d.Fix = "log in as " + u.Name + " through a systemd-logind session (ssh, a desktop, machinectl shell " + u.Name + "@), or keep a manager running: sudo loginctl enable-linger " + u.Name
		return d
	}
	v2Controllers(&d, strings.Fields(string(b)), u)
	return d
}

// v2Controllers fills d from the controllers a user manager has.
func v2Controllers(d *Delegation, have []string, u User) {
	d.Controllers, d.Missing = nil, nil
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
		return
	}
	d.Detail = fmt.Sprintf("cgroup v2: user@%d.service is not delegated %s (it has: %s)", u.UID, strings.Join(d.Missing, " "), strings.Join(have, " "))
	d.Fix = v2DelegateFix
}

// sortLike orders list as order orders the same names.
func sortLike(list, order []string) {
	slices.SortFunc(list, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
}
