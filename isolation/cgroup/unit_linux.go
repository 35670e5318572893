package cgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	cgroups "github.com/containerd/cgroups/v3"
	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"golang.org/x/sys/unix"
)

// A process that systemd started in a unit with Delegate=yes (the units
// of `sandboxed serve` in contrib/systemd) owns that unit's cgroup v2
// subtree: its runs belong there, where stopping the unit reaches them,
// not in a transient scope beside it (rootless) or in /sandboxed (root).
// AdoptUnitCgroup, called once by such a resident process before its
// first run, makes every later Detect use it:
//
//	system.slice/sandboxed.service          Delegate=yes (user@UID.service/app.slice/… for a user unit)
//	├── supervisor        this process (a cgroup with children holds none)
//	├── <run-id>          one per run, with its limits
//	└── <run-id>
//
// systemd marks a delegated cgroup with the extended attribute
// user.delegate (and, from the system manager, trusted.delegate) set to
// "1" (systemd 251 and later, Linux 5.6 and later); where it marks none,
// the manager that started the process is asked over D-Bus.

// unitCgroup is what the first AdoptUnitCgroup found; adopted is the
// cgroup it adopted (relative to the v2 mountpoint), which Detect reads.
var (
	unitCgroup struct {
		once sync.Once
		path string
		err  error
	}
	adopted atomic.Pointer[string]
)

// AdoptUnitCgroup makes this process's cgroup the Base of every Host that
// Detect returns from then on, when systemd delegated it (Delegate=yes) on
// cgroup v2: it moves this process to the supervisor leaf of that cgroup
// and enables there the controllers runs use. It returns the cgroup, or
// "" when this process's cgroup was not delegated to it (cgroup v1, no
// systemd, a unit without Delegate=yes): Detect then goes on as before.
// Only a process whose cgroup holds no other process may call it (the
// controllers cannot be enabled otherwise). Later calls return what the
// first did.
func AdoptUnitCgroup() (string, error) {
	unitCgroup.once.Do(func() {
		unitCgroup.path, unitCgroup.err = adoptUnitCgroup("/sys/fs/cgroup")
		if unitCgroup.path != "" {
			adopted.Store(&unitCgroup.path)
		}
	})
	return unitCgroup.path, unitCgroup.err
}

func adoptUnitCgroup(mount string) (string, error) {
	if cgroups.Mode() != cgroups.Unified {
		return "", nil
	}
	own, err := ownV2Cgroup()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(mount, own)
	if !delegatedBySystemd(dir) && !unitDelegates(own) {
		return "", nil
	}
	if err := adoptDelegated(dir, os.Getpid()); err != nil {
		return "", fmt.Errorf("use the cgroup %s systemd delegated: %w", own, err)
	}
	return own, nil
}

// delegatedBySystemd reports whether systemd marked dir as delegated.
func delegatedBySystemd(dir string) bool {
	for _, attr := range []string{"user.delegate", "trusted.delegate"} {
		buf := make([]byte, 8)
		n, err := unix.Getxattr(dir, attr, buf)
		if err == nil && string(buf[:n]) == "1" {
			return true
		}
	}
	return false
}

// unitDelegates asks the systemd manager that started this process (the
// system's as root, else the user's) whether the unit it runs in has
// Delegate=yes and own is that unit's cgroup: the answer where systemd
// marked no attribute (releases before 251; user managers that cannot set
// one). A process that no manager started (no INVOCATION_ID) is not asked
// about.
func unitDelegates(own string) bool {
	if os.Getenv("INVOCATION_ID") == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), scopeTimeout)
	defer cancel()
	var conn *sddbus.Conn
	var err error
	if os.Geteuid() == 0 {
		conn, err = sddbus.NewSystemdConnectionContext(ctx)
	} else {
		conn, err = sddbus.NewUserConnectionContext(ctx)
	}
	if err != nil {
		return false
	}
	defer conn.Close()
	unit, err := conn.GetUnitNameByPID(ctx, uint32(os.Getpid()))
	if err != nil {
		return false
	}
	typ := map[string]string{".service": "Service", ".scope": "Scope"}[filepath.Ext(unit)]
	if typ == "" {
		return false
	}
	cg, err := conn.GetUnitTypePropertyContext(ctx, unit, typ, "ControlGroup")
	if err != nil || cg.Value.Value() != own {
		return false
	}
	d, err := conn.GetUnitTypePropertyContext(ctx, unit, typ, "Delegate")
	if err != nil {
		return false
	}
	v, ok := d.Value.Value().(bool)
	return ok && v
}

// adoptDelegated moves pid from the delegated cgroup dir to its
// supervisor leaf and enables in dir the controllers runs use.
func adoptDelegated(dir string, pid int) error {
	sup := filepath.Join(dir, supervisorCgroup)
	if err := os.Mkdir(sup, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := os.WriteFile(filepath.Join(sup, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("move into %s: %w", sup, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	if ctl := subtreeControl(strings.Fields(string(b))); ctl != "" {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(ctl), 0); err != nil {
			return fmt.Errorf("enable %s in %s (does it hold another process?): %w", ctl, dir, err)
		}
	}
	return nil
}

// adoptedV2 is the Host of a process that adopted its unit's cgroup.
func adoptedV2(mount, base string, uid int) (*Host, error) {
	b, err := os.ReadFile(filepath.Join(mount, base, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("read cgroup v2 controllers: %w", err)
	}
	return &Host{Version: 2, V2: mount, V2Controllers: strings.Fields(string(b)), Base: base,
		Rootless: uid != 0, uid: uid, unit: true}, nil
}
