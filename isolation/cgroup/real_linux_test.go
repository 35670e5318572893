package cgroup

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

// TestRealHierarchy exercises this host's real cgroup hierarchy, v1 or v2
// (root, SANDBOXED_E2E=1): limits written, a process added, stats read,
// the group killed and removed. CI runs it on its cgroup v1 machines and
// in the cgroup v2 VM of .ci/vm, so both versions are tested and neither
// is ever skipped.
func TestRealHierarchy(t *testing.T) {
	testenv.NeedE2E(t)
	testenv.NeedRoot(t)
	h, err := Detect()
	if err != nil {
		t.Fatal(err)
	}
	switch h.Version {
	case 1:
		testRealV1(t, h)
		testRealV1HalfRemoved(t, h)
	case 2:
		testRealV2(t, h)
	default:
		t.Fatalf("cgroup version %d", h.Version)
	}
}

func testRealV1(t *testing.T, h *Host) {
	id := "cgtest-" + filepath.Base(t.TempDir())
	g, err := h.New(id, Resources{MemoryBytes: 64 << 20, Pids: 50, CPUQuota: 100000, CPUPeriod: 100000})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Delete()
	for ctl, file := range map[string]string{"memory": "memory.limit_in_bytes", "pids": "pids.max", "cpu": "cpu.cfs_quota_us"} {
		want := map[string]string{"memory": "67108864", "pids": "50", "cpu": "100000"}[ctl]
		b, err := os.ReadFile(filepath.Join(h.V1[ctl], g.Path(), file))
		if err != nil || string(b) != want+"\n" {
			t.Errorf("%s = %q, %v; want %s", file, b, err, want)
		}
	}
	pid := sleeperIn(t, g)
	if pids, _ := g.Procs(); len(pids) != 1 || pids[0] != pid {
		t.Fatalf("procs %v", pids)
	}
	if err := g.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	if pids, _ := g.Procs(); len(pids) != 0 {
		t.Fatalf("procs after kill %v", pids)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.V1["memory"], g.Path())); !os.IsNotExist(err) {
		t.Fatal("cgroup left behind")
	}
}

func testRealV2(t *testing.T, h *Host) {
	id := "cgtest-" + filepath.Base(t.TempDir())
	g, err := h.New(id, Resources{MemoryBytes: 64 << 20, Pids: 50, CPUQuota: 100000, CPUPeriod: 100000})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Delete()
	dir := filepath.Join(h.V2, g.Path())
	for file, want := range map[string]string{"memory.max": "67108864", "memory.swap.max": "0", "pids.max": "50", "cpu.max": "100000 100000"} {
		if got := read(t, filepath.Join(dir, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	pid := sleeperIn(t, g)
	if pids, _ := g.Procs(); len(pids) != 1 || pids[0] != pid {
		t.Fatalf("procs %v", pids)
	}
	// A process moved in brings no charge with it: the peak may be 0.
	if s, err := g.Stats(); err != nil || s.PeakMemoryBytes < 0 || s.OOMKilled {
		t.Errorf("stats %+v, %v", s, err)
	}
	if err := g.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	if pids, _ := g.Procs(); len(pids) != 0 {
		t.Fatalf("procs after kill %v", pids)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("cgroup left behind")
	}
}

// A v1 group whose freezer directory is gone while its other hierarchies
// still hold it (a teardown interrupted halfway) is still killed and
// removed, which is what gc does with it.
func testRealV1HalfRemoved(t *testing.T, h *Host) {
	g, err := h.New("cgtest-"+filepath.Base(t.TempDir()), Resources{MemoryBytes: 64 << 20, Pids: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Delete()
	pid := sleeperIn(t, g)
	// The freezer directory can be removed only empty: move the process
	// out of that hierarchy alone, then remove it.
	if err := os.WriteFile(filepath.Join(h.V1["freezer"], "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(h.V1["freezer"], g.Path())); err != nil {
		t.Fatal(err)
	}
	if pids, err := g.Procs(); err != nil || len(pids) != 1 {
		t.Fatalf("procs of the half-removed group: %v, %v", pids, err)
	}
	if err := g.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	for _, ctl := range []string{"memory", "pids", "cpu", "freezer"} {
		if _, err := os.Stat(filepath.Join(h.V1[ctl], g.Path())); !os.IsNotExist(err) {
			t.Errorf("cgroup left behind in %s", ctl)
		}
	}
}

// sleeperIn starts a process that sleeps a minute and adds it to g; it
// returns its pid. The test kills it through g.
func sleeperIn(t *testing.T, g Group) int {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	if err := g.AddProc(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}
