package isolation

import (
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
)

// fakeInfo is a stat answer of an owner and mode.
type fakeInfo struct {
	uid  uint32
	mode fs.FileMode
}

func (f fakeInfo) Name() string       { return "grant" }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() fs.FileMode  { return fs.ModeDir | f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return true }
func (f fakeInfo) Sys() any           { return &syscall.Stat_t{Uid: f.uid} }

// TestReducedGrantAccess: each tier and mode says how a reduced tool
// writes its grant, and which grants it could not write, with the fix.
func TestReducedGrantAccess(t *testing.T) {
	plan := func(tier Tier, priv privilege.Privilege, owner *ID) *Plan {
		return &Plan{Tier: tier, Privilege: priv, GrantOwner: owner, HostDir: "/run/r", Spec: &specs.Spec{Mounts: []specs.Mount{
			{Destination: "/w", Type: "bind", Source: "/home/u/out", Options: []string{"bind", "rw"}},
			{Destination: "/r", Type: "bind", Source: "/home/u/in", Options: []string{"bind", "ro"}},
			{Destination: "/s", Type: "bind", Source: "/run/r/proxy.sock", Options: []string{"bind", "rw"}},
		}}}
	}
	user := &ID{UID: 1000, GID: 1000}
	for _, c := range []struct {
		name     string
		p        *Plan
		euid     int
		fi       fakeInfo
		n        int
		writable bool
		says     string
	}{
		{"same-as-user: nothing to say", plan(TierProcess, privilege.SameAsUser, user), 0, fakeInfo{1000, 0o755}, 0, false, ""},
		{"process, root: idmapped", plan(TierProcess, privilege.Reduced, user), 0, fakeInfo{1000, 0o755}, 1, true, "idmapped"},
		{"process, rootless: handed over", plan(TierProcess, privilege.Reduced, user), 1000, fakeInfo{1000, 0o755}, 1, true, "handed to its uid"},
		{"process: another user's folder", plan(TierProcess, privilege.Reduced, user), 1000, fakeInfo{1001, 0o755}, 1, false, "uid 1001's, mode 755"},
		{"process: another user's open folder", plan(TierProcess, privilege.Reduced, user), 1000, fakeInfo{1001, 0o777}, 1, true, "handed"},
		{"container, root: handed over", plan(TierContainer, privilege.Reduced, user), 0, fakeInfo{1000, 0o700}, 1, true, "handed"},
		{"container, rootless", plan(TierContainer, privilege.Reduced, user), 1000, fakeInfo{1000, 0o755}, 1, false, "setfacl -m u:65534:rwX /home/u/out"},
		{"container, rootless, open folder", plan(TierContainer, privilege.Reduced, user), 1000, fakeInfo{1000, 0o1777}, 1, true, "stays uid 65534's"},
		{"landlock, root", plan(TierLandlock, privilege.Reduced, user), 0, fakeInfo{1000, 0o755}, 1, true, "the run's own uid"},
		{"landlock, root, another user's folder", plan(TierLandlock, privilege.Reduced, user), 0, fakeInfo{1001, 0o755}, 1, false, "uid 1001's"},
		{"landlock, rootless", plan(TierLandlock, privilege.Reduced, user), 1000, fakeInfo{1000, 0o755}, 1, true, "your own uid"},
		{"none", plan(TierNone, privilege.Reduced, user), 1000, fakeInfo{1000, 0o755}, 1, true, "your own uid"},
	} {
		got := ReducedGrantAccess(c.p, c.euid, func(string) (fs.FileInfo, error) { return c.fi, nil })
		if len(got) != c.n {
			t.Errorf("%s: %d answers %v, want %d", c.name, len(got), got, c.n)
			continue
		}
		if c.n == 0 {
			continue
		}
		g := got[0]
		if g.Path != "/home/u/out" || g.Writable != c.writable || !strings.Contains(g.String(), c.says) || (g.Fix == "") != c.writable {
			t.Errorf("%s: %+v; want writable %v, saying %q", c.name, g, c.writable, c.says)
		}
	}
	if got := ReducedGrantAccess(plan(TierProcess, privilege.Reduced, user), 0, func(string) (fs.FileInfo, error) { return nil, os.ErrNotExist }); len(got) != 0 {
		t.Errorf("a grant not there: %v", got)
	}
}
