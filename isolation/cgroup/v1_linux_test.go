package cgroup

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

// TestV1Real exercises the real cgroup v1 hierarchy of this host (root,
// SANDBOXED_E2E=1, a v1 host). CI runs on cgroup v1 hosts (hybrid, as
// these machines are), so there a v2-only host fails this test rather
// than pass it unrun; cgroup v2 is covered by the fake hierarchy here and
// by the end-to-end suite run on a v2 host.
func TestV1Real(t *testing.T) {
	testenv.NeedE2E(t)
	testenv.NeedRoot(t)
	h, err := Detect()
	if err != nil {
		t.Fatal(err)
	}
	var notV1 error
	if h.Version != 1 {
		notV1 = fmt.Errorf("this host has cgroup v%d", h.Version)
	}
	testenv.Need(t, "a cgroup v1 host", notV1)
	id := "cgtest-" + filepath.Base(t.TempDir())
	g, err := h.New(id, Resources{MemoryBytes: 64 << 20, Pids: 50, CPUs: 1})
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
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	if err := g.AddProc(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if pids, _ := g.Procs(); len(pids) != 1 || pids[0] != cmd.Process.Pid {
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
