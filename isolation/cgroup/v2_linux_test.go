package cgroup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// fakeV2 makes a directory that looks enough like a cgroup v2 mount for
// the library and this package: root and parent control files exist.
func fakeV2(t *testing.T, controllers string) *Host {
	t.Helper()
	root := t.TempDir()
	write(t, filepath.Join(root, "cgroup.controllers"), controllers)
	write(t, filepath.Join(root, "cgroup.subtree_control"), "")
	os.MkdirAll(filepath.Join(root, Parent), 0o755)
	write(t, filepath.Join(root, Parent, "cgroup.subtree_control"), "")
	return &Host{Version: 2, V2: root, V2Controllers: strings.Fields(controllers)}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestV2NewWritesLimits(t *testing.T) {
	h := fakeV2(t, "cpu memory pids")
	dir := filepath.Join(h.V2, Parent, "run-1")
	// The kernel makes a group's control files; pre-create them (swap
	// accounting exists on this "kernel").
	os.MkdirAll(dir, 0o755)
	for _, f := range []string{"memory.max", "memory.swap.max", "pids.max", "cpu.max"} {
		write(t, filepath.Join(dir, f), "max")
	}

	g, err := h.New("run-1", Resources{MemoryBytes: 64 << 20, Pids: 100, CPUQuota: 50000, CPUPeriod: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if g.Version() != 2 || g.Path() != "/sandboxed/run-1" {
		t.Fatalf("version %d path %s", g.Version(), g.Path())
	}
	for file, want := range map[string]string{
		"memory.max":      "67108864",
		"memory.swap.max": "0",
		"pids.max":        "100",
		"cpu.max":         "50000 100000",
	} {
		if got := read(t, filepath.Join(dir, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	for _, p := range []string{h.V2, filepath.Join(h.V2, Parent)} {
		got := read(t, filepath.Join(p, "cgroup.subtree_control"))
		for _, c := range []string{"+memory", "+pids", "+cpu"} {
			if !strings.Contains(got, c) {
				t.Errorf("%s/cgroup.subtree_control = %q, lacks %s", p, got, c)
			}
		}
	}
	// A subtree delegated to a user is not a run: gc must not reap it.
	os.MkdirAll(filepath.Join(h.V2, Parent, UserPrefix+"1000"), 0o755)
	ids, err := h.List()
	if err != nil || len(ids) != 1 || ids[0] != "run-1" {
		t.Fatalf("List = %v, %v", ids, err)
	}
}

func TestV2Stats(t *testing.T) {
	h := fakeV2(t, "memory pids")
	g, err := h.New("r", Resources{MemoryBytes: 1 << 20, Pids: 10})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(h.V2, Parent, "r")
	write(t, filepath.Join(dir, "memory.peak"), "123456\n")
	write(t, filepath.Join(dir, "memory.events"), "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n")
	write(t, filepath.Join(dir, "pids.events"), "max 3\n")
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st != (Stats{PeakMemoryBytes: 123456, OOMKilled: true, PidsLimitHit: true}) {
		t.Fatalf("stats %+v", st)
	}
	// Kernels before 5.19 have no memory.peak: current usage stands in.
	os.Remove(filepath.Join(dir, "memory.peak"))
	write(t, filepath.Join(dir, "memory.current"), "999")
	write(t, filepath.Join(dir, "memory.events"), "oom_kill 0\n")
	write(t, filepath.Join(dir, "pids.events"), "max 0\n")
	if st, err = g.Stats(); err != nil || st != (Stats{PeakMemoryBytes: 999}) {
		t.Fatalf("stats %+v, %v", st, err)
	}
}

func TestV2KillWritesCgroupKill(t *testing.T) {
	h := fakeV2(t, "memory pids")
	g, err := h.New("r", Resources{MemoryBytes: 1 << 20, Pids: 10})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(h.V2, Parent, "r")
	write(t, filepath.Join(dir, "cgroup.kill"), "")
	write(t, filepath.Join(dir, "cgroup.procs"), "")
	if err := g.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(dir, "cgroup.kill")); got != "1" {
		t.Fatalf("cgroup.kill = %q", got)
	}
}

// A process whose threads are all exiting is no longer in cgroup.procs but
// keeps the group populated: Kill waits for cgroup.events to say so.
func TestV2KillWaitsUntilUnpopulated(t *testing.T) {
	h := fakeV2(t, "memory pids")
	g, err := h.New("r", Resources{MemoryBytes: 1 << 20, Pids: 10})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(h.V2, Parent, "r")
	write(t, filepath.Join(dir, "cgroup.kill"), "")
	write(t, filepath.Join(dir, "cgroup.procs"), "")
	write(t, filepath.Join(dir, "cgroup.events"), "populated 1\nfrozen 0\n")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := g.Kill(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("kill of a populated group with an empty cgroup.procs: %v, want it to wait", err)
	}
	write(t, filepath.Join(dir, "cgroup.events"), "populated 0\nfrozen 0\n")
	if err := g.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestV2MissingControllerRefused(t *testing.T) {
	h := fakeV2(t, "cpu pids") // no memory controller
	_, err := h.New("r", Resources{MemoryBytes: 1 << 20, Pids: 10})
	var ue *isolation.UnsupportedError
	if !errors.Is(err, isolation.ErrUnsupported) || !errors.As(err, &ue) || !strings.Contains(ue.What, "memory") || ue.Fix == "" {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(h.V2, Parent, "r")); !os.IsNotExist(err) {
		t.Fatal("refused cgroup was created")
	}
	// CPU limit needs the cpu controller only when asked for.
	h = fakeV2(t, "memory pids")
	if _, err := h.New("r", Resources{MemoryBytes: 1, Pids: 1, CPUQuota: 100000, CPUPeriod: 100000}); !errors.Is(err, isolation.ErrUnsupported) {
		t.Fatalf("cpu: err = %v", err)
	}
}

func TestV1MissingFreezerRefused(t *testing.T) {
	h := &Host{Version: 1, V1: map[string]string{"memory": "/x/memory", "pids": "/x/pids"}}
	if errs := h.Missing(Resources{MemoryBytes: 1, Pids: 1}); len(errs) != 1 || !strings.Contains(errs[0].Error(), "freezer") {
		t.Fatalf("missing = %v", errs)
	}
}

func TestBadRunID(t *testing.T) {
	h := fakeV2(t, "memory pids")
	for _, id := range []string{"", "..", "a/b", "."} {
		if _, err := h.New(id, Resources{}); !errors.Is(err, ErrBadRunID) {
			t.Errorf("%q: err = %v", id, err)
		}
	}
}
