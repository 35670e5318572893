package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	godbus "github.com/godbus/dbus/v5"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
	"github.com/sandboxed-dev/sandboxed/isolation"
)

func TestRunPathChoice(t *testing.T) {
	for _, c := range []struct {
		name string
		h    *Host
		id   string
		want string
		err  error
	}{
		{"root v1", &Host{Version: 1}, "r1", "/sandboxed/r1", nil},
		{"root v2", &Host{Version: 2, Base: "/sandboxed"}, "r1", "/sandboxed/r1", nil},
		{"rootless v1", &Host{Version: 1, Rootless: true, Base: UserDir(1001)}, "r1", "/sandboxed/user-1001/r1", nil},
		{"rootless v2 scope", &Host{Version: 2, Rootless: true, Base: "/user.slice/user-1001.slice/user@1001.service/app.slice/sandboxed-7-ab.scope"}, "r1",
			"/user.slice/user-1001.slice/user@1001.service/app.slice/sandboxed-7-ab.scope/r1", nil},
		{"rootless v2 before its scope", &Host{Version: 2, Rootless: true}, "r1", "", ErrNotFound},
		{"a run cannot be named like a user's cgroup", &Host{Version: 1}, "user-1001", "", ErrBadRunID},
		{"nor escape", &Host{Version: 1}, "../x", "", ErrBadRunID},
		{"nor be the supervisor's leaf of a unit's cgroup", &Host{Version: 2, Base: "/system.slice/sandboxed.service", unit: true}, "supervisor", "", ErrBadRunID},
	} {
		got, err := c.h.path(c.id)
		if got != c.want || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("%s: path(%q) = %q, %v; want %q, %v", c.name, c.id, got, err, c.want, c.err)
		}
	}
}

// fakeV1 makes hierarchy roots for memory, pids and freezer with a
// delegated directory for uid owned by the test's user.
func fakeV1(t *testing.T, delegated ...string) (*Host, int) {
	t.Helper()
	uid := os.Getuid()
	root := t.TempDir()
	h := &Host{Version: 1, V1: map[string]string{}, Base: "/" + Parent}
	for _, ctl := range []string{"memory", "pids", "freezer"} {
		h.V1[ctl] = filepath.Join(root, ctl)
		os.MkdirAll(filepath.Join(root, ctl, Parent), 0o755)
	}
	for _, ctl := range delegated {
		d := filepath.Join(root, ctl, UserDir(uid))
		os.MkdirAll(d, 0o755)
		write(t, filepath.Join(d, "cgroup.procs"), "")
		write(t, filepath.Join(d, "tasks"), "")
	}
	return h, uid
}

func TestDelegatedV1(t *testing.T) {
	if os.Getuid() == 0 {
		t.Run("root-owned", func(t *testing.T) {
			// Root owns everything it makes; the rootless view is of
			// uid 1001 over directories root made.
			h, _ := fakeV1(t, "memory", "pids", "freezer")
			h.delegatedV1(1001)
			if h.NoDelegation == nil || len(h.V1) != 0 {
				t.Fatalf("root-owned dirs counted as delegated to 1001: %+v", h)
			}
		})
	}
	// The user's own view runs as a user on root CI machines too: before,
	// it ran only where the tests did not run as root, never in CI.
	t.Run("delegated", func(t *testing.T) {
		testenv.Unprivileged(t, func() { delegatedV1AsUser(t) })
	})
}

func delegatedV1AsUser(t *testing.T) {
	h, uid := fakeV1(t, "memory", "pids", "freezer")
	h.delegatedV1(uid)
	if h.NoDelegation != nil || len(h.V1) != 3 || h.Base != UserDir(uid) || !h.Rootless {
		t.Fatalf("fully delegated: %+v", h)
	}
	if errs := h.Missing(Resources{MemoryBytes: 1, Pids: 1}); len(errs) != 0 {
		t.Fatalf("missing %v", errs)
	}

	h, uid = fakeV1(t, "memory", "pids") // no freezer
	h.delegatedV1(uid)
	errs := h.Missing(Resources{MemoryBytes: 1, Pids: 1})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "freezer") || !strings.Contains(errs[0].Error(), "sandboxed setup --user") {
		t.Fatalf("freezer not delegated: %v", errs)
	}

	h, uid = fakeV1(t)
	h.delegatedV1(uid)
	checkNoDelegation(t, h, "sudo sandboxed setup --user ")
}

func checkNoDelegation(t *testing.T, h *Host, fix string) {
	t.Helper()
	errs := h.Missing(Resources{MemoryBytes: 64 << 20, Pids: 10})
	var ue *isolation.UnsupportedError
	if len(errs) != 1 || !errors.As(errs[0], &ue) || !strings.Contains(ue.Fix, fix) {
		t.Fatalf("no delegation: %v", errs)
	}
	if _, err := h.New("r", Resources{MemoryBytes: 64 << 20, Pids: 10}); !errors.Is(err, isolation.ErrUnsupported) {
		t.Fatalf("New without delegation: %v", err)
	}
	if ids, err := h.List(); len(ids) != 0 || err != nil {
		t.Fatalf("List without delegation: %v %v", ids, err)
	}
}

func TestV2NoUserManager(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	h := fakeV2(t, "cpu memory pids")
	h.uid = 1001
	h.detectUserManager()
	if h.NoDelegation == nil || h.Base != "" || !h.Rootless {
		t.Fatalf("%+v", h)
	}
	checkNoDelegation(t, h, "systemd user manager")
}

func TestUserManagerCgroup(t *testing.T) {
	for own, want := range map[string]string{
		"/user.slice/user-1001.slice/user@1001.service/app.slice/x.scope": "/user.slice/user-1001.slice/user@1001.service",
		"/user.slice/user-1001.slice/session-3.scope":                     "",
		"/user.slice/user-1002.slice/user@1002.service/init.scope":        "",
		"/": "",
	} {
		if got := userManagerCgroup(own, 1001); got != want {
			t.Errorf("userManagerCgroup(%q) = %q, want %q", own, got, want)
		}
	}
	if p, err := parseV2Cgroup("12:pids:/a\n0::/user.slice/x\n"); err != nil || p != "/user.slice/x" {
		t.Errorf("parseV2Cgroup = %q, %v", p, err)
	}
	if _, err := parseV2Cgroup("4:memory:/a\n"); err == nil {
		t.Error("parseV2Cgroup of a v1 file: no error")
	}
}

func TestScopeProperties(t *testing.T) {
	props := map[string]godbus.Variant{}
	for _, p := range scopeProperties(4242) {
		props[p.Name] = p.Value
	}
	if v := props["Delegate"].Value(); v != true {
		t.Errorf("Delegate = %v", v)
	}
	if v, ok := props["PIDs"].Value().([]uint32); !ok || len(v) != 1 || v[0] != 4242 {
		t.Errorf("PIDs = %v", props["PIDs"])
	}
	if v := props["CollectMode"].Value(); v != "inactive-or-failed" {
		t.Errorf("CollectMode = %v", v)
	}
	if n := scopeName(4242); !strings.HasPrefix(n, "sandboxed-4242-") || !strings.HasSuffix(n, ".scope") || n == scopeName(4242) {
		t.Errorf("scope names %q", n)
	}
	for have, want := range map[string]string{"cpuset cpu io memory pids": "+cpu +memory +pids", "memory pids": "+memory +pids", "": ""} {
		if got := subtreeControl(strings.Fields(have)); got != want {
			t.Errorf("subtreeControl(%q) = %q, want %q", have, got, want)
		}
	}
}
