package none_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/internal/testenv"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/none"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

func TestMain(m *testing.M) {
	if sbinit.IsInit() {
		sbinit.Main()
	}
	os.Exit(m.Run())
}

var seq atomic.Int64

func plan(t *testing.T, limits isolation.Limits) *isolation.Plan {
	id := fmt.Sprintf("nonetest-%d-%d", os.Getpid(), seq.Add(1))
	// As the planner writes it: the init's spare threads above the
	// tool's pids, the none tier's shape, the caller's identity.
	limits.MemoryBytes = cmp.Or(limits.MemoryBytes, 256<<20)
	limits.Pids = cmp.Or(limits.Pids, 64)
	// Where no cgroup can hold the limits the spec names none, and its
	// pids limit is the tool's own (RLIMIT_NPROC on its uid).
	pids, cgroup := limits.Pids+isolation.InitSpareThreads, process.CgroupHolds(limits)
	if !cgroup {
		pids = limits.Pids
	}
	spec, err := sandbox.NewSpec(id, privilege.SameAsUser, sandbox.WithMemory(limits.MemoryBytes),
		sandbox.WithPids(pids), sandbox.WithUser(uint32(os.Getuid()), uint32(os.Getgid())),
		sandbox.WithTier(isolation.TierNone, false))
	if err != nil {
		t.Fatal(err)
	}
	if !cgroup {
		if err := sandbox.WithoutCgroup()(spec); err != nil {
			t.Fatal(err)
		}
	}
	return &isolation.Plan{RunID: id, Tier: isolation.TierNone, Privilege: privilege.SameAsUser,
		Spec: spec, Limits: limits}
}

func exec(t *testing.T, sb isolation.Sandbox, ctx context.Context, script string) (string, isolation.Exit, error) {
	var out bytes.Buffer
	exit, err := sb.Exec(ctx, isolation.Command{Args: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin", "ONLY=this"}, Cwd: "/"},
		isolation.Stdio{Stdout: &out})
	return out.String(), exit, err
}

// The none tier needs neither root nor cgroups: where no cgroup may be
// used, rlimits stand in for its limits.
func TestNoLimitsRunsOnHost(t *testing.T) {
	ctx := context.Background()
	sb, err := none.New().Start(ctx, plan(t, isolation.Limits{KillGrace: 100 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	out, exit, err := exec(t, sb, ctx, `env | grep -v '^PWD=\|^SHLVL=\|^_=' | sort; test "$(ps -o sid= -p $$ | tr -d ' ')" = $$ && echo own-session`)
	if err != nil || exit.Code != 0 {
		t.Fatalf("exit %+v err %v", exit, err)
	}
	if !strings.Contains(out, "ONLY=this") || strings.Contains(out, "HOME=") || !strings.Contains(out, "own-session") {
		t.Fatalf("output:\n%s", out)
	}
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, exit, err := exec(t, sb, tctx, "sleep 30"); err == nil || exit.Signal == 0 {
		t.Fatalf("timeout: exit %+v err %v", exit, err)
	}
}

func TestLimitsNeedCgroup(t *testing.T) {
	testenv.NeedE2E(t)
	testenv.NeedRoot(t)
	ctx := context.Background()
	p := plan(t, isolation.Limits{MemoryBytes: 32 << 20, Pids: 16, KillGrace: 100 * time.Millisecond})
	sb, err := none.New().Start(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := exec(t, sb, ctx, "cat /proc/self/cgroup")
	if err != nil || !strings.Contains(out, "/sandboxed/"+p.RunID) {
		t.Fatalf("not in the run's cgroup: %q %v", out, err)
	}
	_, exit, _ := exec(t, sb, ctx, "x=$(head -c 100000000 /dev/zero | tr '\\0' a)")
	st, _ := sb.Stats(ctx)
	if !st.OOMKilled || exit.Code != 137 {
		t.Fatalf("memory limit: exit %+v stats %+v", exit, st)
	}
	// A daemon that escapes its session is still in the cgroup: Close
	// kills it.
	exec(t, sb, ctx, "setsid sleep 60 >/dev/null 2>&1 < /dev/null &")
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory/sandboxed/" + p.RunID); !os.IsNotExist(err) {
		t.Fatal("cgroup left behind")
	}
}
