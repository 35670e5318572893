package cgroup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// Rootless on cgroup v2 the limits come from systemd: the first run of a
// process asks the user's own manager (over its D-Bus, no privilege) for a
// transient scope with Delegate=yes holding this process. The scope's
// cgroup then belongs to the user:
//
//	user@UID.service/app.slice/sandboxed-PID-RAND.scope   Delegate=yes
//	├── supervisor        this process (a cgroup with children holds none)
//	├── <run-id>          one per run: memory.max, memory.swap.max=0,
//	└── <run-id>          pids.max, cpu.max; cgroup.kill at teardown
//
// One scope per controller process, one child per run: runs cost no D-Bus
// round trip after the first. When the process and its runs are gone the
// scope is empty and systemd stops it and removes its cgroup with every
// child left in it; gc reaps the runs of this process's own scope.

// userScope is this process's delegated scope.
type userScope struct {
	once sync.Once
	err  error
}

// scopeTimeout bounds the D-Bus exchange that makes the scope.
var scopeTimeout = 10 * time.Second

// supervisorCgroup is the leaf the controller process moves to inside its
// scope, so the scope may enable controllers for its children.
const supervisorCgroup = "supervisor"

// detectUserManager finds what a rootless process may get on cgroup v2:
// the controllers its systemd user manager has, and whether that manager
// can be asked for a scope.
func (h *Host) detectUserManager() {
	h.Rootless = true
	h.scope = &userScope{}
	own, err := ownV2Cgroup()
	fix := "run sandboxed in a login session with a systemd user manager (for a service account: sudo loginctl enable-linger NAME, then log in again), or run it as root"
	if err != nil {
		h.NoDelegation = &isolation.UnsupportedError{What: "a delegated cgroup (cgroup v2): " + err.Error(), Fix: fix}
		return
	}
	mgr := userManagerCgroup(own, h.uid)
	if mgr == "" {
		h.NoDelegation = &isolation.UnsupportedError{
			What: fmt.Sprintf("a delegated cgroup for uid %d (cgroup v2: this process is in %s, not under a systemd user manager user@%d.service)", h.uid, own, h.uid),
			Fix:  fix,
		}
		return
	}
	if userBusAddress() == "" {
		h.NoDelegation = &isolation.UnsupportedError{
			What: fmt.Sprintf("a delegated cgroup for uid %d (cgroup v2: no D-Bus address of the systemd user manager: DBUS_SESSION_BUS_ADDRESS is unset and $XDG_RUNTIME_DIR/bus does not exist)", h.uid),
			Fix:  fix,
		}
		return
	}
	b, err := os.ReadFile(filepath.Join(h.V2, mgr, "cgroup.controllers"))
	if err != nil {
		h.NoDelegation = &isolation.UnsupportedError{What: "a delegated cgroup (cgroup v2): " + err.Error(), Fix: fix}
		return
	}
	h.V2Controllers = strings.Fields(string(b))
	h.Base = "" // the scope's, once made
}

// ownV2Cgroup is this process's cgroup v2 path.
func ownV2Cgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("read own cgroup: %w", err)
	}
	return parseV2Cgroup(string(b))
}

func parseV2Cgroup(s string) (string, error) {
	for _, line := range strings.Split(s, "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("no cgroup v2 entry in /proc/self/cgroup")
}

// userManagerCgroup is the prefix of own that is uid's systemd user
// manager (…/user@UID.service), or "".
func userManagerCgroup(own string, uid int) string {
	want := "user@" + strconv.Itoa(uid) + ".service"
	parts := strings.Split(own, "/")
	for i, p := range parts {
		if p == want {
			return strings.Join(parts[:i+1], "/")
		}
	}
	return ""
}

// userBusAddress is the user manager's bus as sd_bus finds it, or "".
func userBusAddress() string {
	if a := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" {
		return a
	}
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		if _, err := os.Stat(filepath.Join(rt, "bus")); err == nil {
			return "unix:path=" + filepath.Join(rt, "bus")
		}
	}
	return ""
}

// scopeProperties are the transient scope's unit properties.
func scopeProperties(pid int) []sddbus.Property {
	return []sddbus.Property{
		sddbus.PropDescription(fmt.Sprintf("sandboxed runs of process %d", pid)),
		sddbus.PropPids(uint32(pid)),
		{Name: "Delegate", Value: godbus.MakeVariant(true)},
		// A failed scope is collected too: nothing of it stays behind.
		{Name: "CollectMode", Value: godbus.MakeVariant("inactive-or-failed")},
	}
}

// scopeName names the scope of process pid.
func scopeName(pid int) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("sandboxed-%d-%s.scope", pid, hex.EncodeToString(b[:]))
}

// ensureScope makes this process's delegated scope once and sets Base.
func (h *Host) ensureScope() error {
	if h.scope == nil {
		return fmt.Errorf("create delegated scope: %w", ErrNotFound)
	}
	h.scope.once.Do(func() { h.scope.err = h.makeScope() })
	return h.scope.err
}

func (h *Host) makeScope() error {
	ctx, cancel := context.WithTimeout(context.Background(), scopeTimeout)
	defer cancel()
	fail := func(err error) error {
		return &isolation.UnsupportedError{
			What: fmt.Sprintf("a delegated cgroup from the systemd user manager of uid %d: %v", h.uid, err),
			Fix:  "check `systemctl --user status` works in this session, or run sandboxed as root",
		}
	}
	conn, err := sddbus.NewUserConnectionContext(ctx)
	if err != nil {
		return fail(fmt.Errorf("connect to the user bus: %w", err))
	}
	defer conn.Close()
	pid := os.Getpid()
	name := scopeName(pid)
	done := make(chan string, 1)
	if _, err := conn.StartTransientUnitContext(ctx, name, "fail", scopeProperties(pid), done); err != nil {
		return fail(fmt.Errorf("start scope %s: %w", name, err))
	}
	select {
	case res := <-done:
		if res != "done" {
			return fail(fmt.Errorf("start scope %s: job %s", name, res))
		}
	case <-ctx.Done():
		return fail(fmt.Errorf("start scope %s: %w", name, ctx.Err()))
	}
	own, err := ownV2Cgroup()
	if err != nil {
		return fail(err)
	}
	if filepath.Base(own) != name {
		return fail(fmt.Errorf("scope %s started, but this process is in %s", name, own))
	}
	dir := filepath.Join(h.V2, own)
	// A cgroup that delegates controllers to children holds no process:
	// this one moves to a leaf of its own.
	sup := filepath.Join(dir, supervisorCgroup)
	if err := os.Mkdir(sup, 0o755); err != nil && !os.IsExist(err) {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(sup, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fail(fmt.Errorf("move into %s: %w", sup, err))
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return fail(err)
	}
	h.V2Controllers = strings.Fields(string(b))
	if len(h.V2Controllers) > 0 {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(subtreeControl(h.V2Controllers)), 0); err != nil {
			return fail(fmt.Errorf("enable %s in %s: %w", strings.Join(h.V2Controllers, " "), own, err))
		}
	}
	h.Base = own
	return nil
}

// subtreeControl enables the controllers a run's cgroup uses among have.
func subtreeControl(have []string) string {
	var out []string
	for _, c := range []string{"cpu", "memory", "pids"} {
		for _, h := range have {
			if h == c {
				out = append(out, "+"+c)
			}
		}
	}
	return strings.Join(out, " ")
}
