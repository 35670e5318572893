package process_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
)

// TestSpawnerStartsInits: a backend with a spawner starts its inits, cold
// and warm, through one small process of the init binary rather than
// forking itself; and when the spawner dies, the next start makes a new
// one.
func TestSpawnerStartsInits(t *testing.T) {
	needRoot(t)
	// Spawners of this process's other backends (an earlier run of this
	// test, with -count) are not this backend's.
	others := spawnersOf(t, os.Getpid())
	mine := func() []int {
		return slices.DeleteFunc(spawnersOf(t, os.Getpid()), func(pid int) bool { return slices.Contains(others, pid) })
	}
	b := process.New()
	b.Spawner = true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	startOn := func(p *isolation.Plan) isolation.Sandbox {
		t.Helper()
		sb, err := b.Start(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := sb.Close(context.Background()); err != nil {
				t.Error(err)
			}
			assertNothingLeft(t, p.RunID)
		})
		return sb
	}
	for _, priv := range []privilege.Privilege{privilege.Reduced, privilege.SameAsUser} {
		sb := startOn(testPlan(t, priv))
		out, errs, exit := run(t, sb, "id -u; cat /proc/1/comm")
		if exit.Code != 0 || !strings.Contains(out, "sandboxed-init") {
			t.Fatalf("%s: exit %+v: %q %q", priv, exit, out, errs)
		}
	}
	spawners := mine()
	if len(spawners) != 1 {
		t.Fatalf("%d spawners of this process, want 1: %v", len(spawners), spawners)
	}

	// Warm: prestarted through the spawner too, and claimed.
	p := testPlan(t, privilege.Reduced)
	key, ok := b.WarmKey(p)
	if !ok {
		t.Fatal("no warm key")
	}
	w, err := b.Prestart(ctx, key, p.RunID, p.HostDir)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := w.Claim(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sb.Close(context.Background())
		assertNothingLeft(t, p.RunID)
	})
	if _, _, exit := run(t, sb, "true"); exit.Code != 0 {
		t.Fatalf("warm: exit %+v", exit)
	}
	if got := mine(); len(got) != 1 || got[0] != spawners[0] {
		t.Fatalf("spawners %v after the warm start, want %v", got, spawners)
	}

	// The spawner dies: the next start gets a new one. (A sandbox it
	// started belongs to this process, which holds its control socket,
	// and goes when this process closes it, as with any init.)
	if err := syscall.Kill(spawners[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Once it is gone: a start whose request it got before it died fails
	// (it may have started the init), and is not what this tests.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", spawners[0])); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spawner %d still there 10s after SIGKILL", spawners[0])
		}
	}
	sb2 := startOn(testPlan(t, privilege.Reduced))
	if _, _, exit := run(t, sb2, "true"); exit.Code != 0 {
		t.Fatalf("after the spawner died: exit %+v", exit)
	}
	if got := mine(); len(got) != 1 || got[0] == spawners[0] {
		t.Fatalf("spawners %v after the first died (%d), want one new", got, spawners[0])
	}
}

// spawnersOf lists the live spawner processes whose parent is ppid.
func spawnersOf(t *testing.T, ppid int) []int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b)[i+1:])
		if len(f) < 2 || f[0] == "Z" || f[1] != strconv.Itoa(ppid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(st), "cmdline"))
		if strings.Contains(string(cmdline), "--spawner") {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(st)))
			pids = append(pids, pid)
		}
	}
	return pids
}
