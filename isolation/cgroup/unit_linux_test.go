package cgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestAdoptDelegated moves the process to the supervisor leaf of the
// unit's cgroup and enables there the controllers runs use.
func TestAdoptDelegated(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "cgroup.controllers"), "cpuset cpu io memory pids\n")
	write(t, filepath.Join(dir, "cgroup.subtree_control"), "")
	// The kernel makes a cgroup's files with the directory: the leaf is
	// made here as cgroupfs would hold it once adoptDelegated's mkdir ran,
	// so its files are this user's to write and read back.
	must(t, os.Mkdir(filepath.Join(dir, supervisorCgroup), 0o755))
	write(t, filepath.Join(dir, supervisorCgroup, "cgroup.procs"), "")
	if err := adoptDelegated(dir, 4242); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(dir, supervisorCgroup, "cgroup.procs")); got != "4242" {
		t.Errorf("supervisor/cgroup.procs = %q, want 4242", got)
	}
	if got := read(t, filepath.Join(dir, "cgroup.subtree_control")); got != "+cpu +memory +pids" {
		t.Errorf("cgroup.subtree_control = %q, want +cpu +memory +pids", got)
	}
}

// TestAdoptedHostRunsInTheUnit: a Host of a process that adopted its
// unit's cgroup makes runs there, rootless too (no scope is asked for),
// and lists them without the supervisor leaf.
func TestAdoptedHostRunsInTheUnit(t *testing.T) {
	for _, uid := range []int{0, 1000} {
		t.Run("uid "+strconv.Itoa(uid), func(t *testing.T) {
			mount := fakeV2(t, "cpu memory pids").V2
			base := "/user.slice/user-1000.slice/user@1000.service/app.slice/sandboxed.service"
			if uid == 0 {
				base = "/system.slice/sandboxed.service"
			}
			must(t, os.MkdirAll(filepath.Join(mount, base, supervisorCgroup), 0o755))
			write(t, filepath.Join(mount, base, "cgroup.controllers"), "cpu memory pids")
			write(t, filepath.Join(mount, base, "cgroup.subtree_control"), "")
			h, err := adoptedV2(mount, base, uid)
			if err != nil {
				t.Fatal(err)
			}
			if h.Rootless != (uid != 0) || h.NoDelegation != nil || strings.Join(h.Usable(), " ") != "cpu memory pids" {
				t.Fatalf("host %+v", h)
			}
			g, err := h.New("run-1", Resources{MemoryBytes: 64 << 20, Pids: 100})
			if err != nil {
				t.Fatal(err)
			}
			if g.Path() != base+"/run-1" {
				t.Errorf("run cgroup %s, want %s/run-1", g.Path(), base)
			}
			if ids, err := h.List(); err != nil || len(ids) != 1 || ids[0] != "run-1" {
				t.Errorf("List = %v, %v; want [run-1]", ids, err)
			}
		})
	}
}

// TestNotDelegatedWithoutTheMark: a cgroup systemd did not mark is not
// adopted (a plain directory carries no delegate attribute).
func TestNotDelegatedWithoutTheMark(t *testing.T) {
	if delegatedBySystemd(t.TempDir()) {
		t.Error("a directory without user.delegate counts as delegated")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
