package hostsetup

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
)

// TestProbeUserOnThisHost makes a real user namespace (or says why not)
// and reads the real host files; whatever the host, every failing check
// carries a fix.
func TestProbeUserOnThisHost(t *testing.T) {
	s := &System{Root: "/"}
	p := s.ProbeUser(context.Background(), []string{"-test.run=^$"})
	if p.UserNS != nil && (p.UserNS.Cause == "" || p.UserNS.Fix == "") {
		t.Errorf("user namespace error without a cause or fix: %+v", p.UserNS)
	}
	for _, c := range p.Checks() {
		if !c.OK && c.Fix == "" {
			t.Errorf("check %s/%s fails without a fix: %+v", c.Tier, c.Name, c)
		}
	}
	if p.LandlockABI == 0 && p.LandlockError == "" {
		t.Errorf("no Landlock ABI and no reason")
	}
}

func TestDelegationOf(t *testing.T) {
	ada := User{Name: "ada", UID: 1001}
	none := &isolation.UnsupportedError{What: "a cgroup delegated to uid 1001", Fix: "sudo sandboxed setup --user ada (once per host)"}
	for _, tc := range []struct {
		name      string
		h         *cgroup.Host
		err       error
		setupDone bool
		ok        bool
		detail    string
		fix       string
	}{
		{name: "no cgroups", err: &isolation.UnsupportedError{What: "cgroups", Fix: "mount cgroup v2"}, detail: "cgroups", fix: "mount cgroup v2"},
		{name: "root", h: &cgroup.Host{Version: 1, V1: map[string]string{"memory": os.TempDir()}}, ok: true, detail: "root makes its cgroups directly (cgroup v1)"},
		{name: "v1 none", h: &cgroup.Host{Version: 1, Rootless: true, NoDelegation: none}, detail: "a cgroup delegated", fix: "setup --user ada"},
		{name: "v1 none after a reboot", h: &cgroup.Host{Version: 1, Rootless: true, NoDelegation: none}, setupDone: true, fix: "vanish at reboot"},
		{name: "v1 all", h: &cgroup.Host{Version: 1, Rootless: true, Base: cgroup.UserDir(1001),
			V1: map[string]string{"memory": "/m", "pids": "/p", "cpu": "/c", "freezer": "/f"}},
			ok: true, detail: "memory pids cpu freezer delegated to ada at /sys/fs/cgroup/CONTROLLER/sandboxed/user-1001"},
		{name: "v1 some", h: &cgroup.Host{Version: 1, Rootless: true, Base: cgroup.UserDir(1001),
			V1: map[string]string{"memory": "/m"}, Undelegated: []string{"pids", "freezer"}},
			detail: "memory delegated to ada, pids freezer not", fix: "sudo sandboxed setup --user ada"},
		{name: "v2 delegated", h: &cgroup.Host{Version: 2, Rootless: true, V2Controllers: []string{"cpuset", "cpu", "io", "memory", "pids"}},
			ok: true, detail: "systemd delegates memory pids cpu"},
		{name: "v2 without Delegate=yes", h: &cgroup.Host{Version: 2, Rootless: true, V2Controllers: []string{"memory"}},
			detail: "not delegated pids cpu", fix: "Delegate=cpu cpuset io memory pids"},
		{name: "v2 no manager", h: &cgroup.Host{Version: 2, Rootless: true, NoDelegation: &isolation.UnsupportedError{What: "no manager", Fix: "loginctl enable-linger"}},
			detail: "no manager", fix: "loginctl enable-linger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := delegationOf(tc.h, tc.err, ada, tc.setupDone)
			if d.OK != tc.ok || !strings.Contains(d.Detail, tc.detail) || !strings.Contains(d.Fix, tc.fix) || (!d.OK && d.Fix == "") {
				t.Errorf("delegationOf = %+v", d)
			}
		})
	}
}
