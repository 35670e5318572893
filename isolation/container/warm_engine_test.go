package container

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/internal/testenv"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	planner "github.com/sandboxed-dev/sandboxed/sandbox"
)

// warmPlan is enginePlan with the reduced profile, a read-only and a
// writable grant and egress to a proxy that echoes, in a host directory
// named like a run's (gc knows staging directories by it).
func warmPlan(t *testing.T, name string) *isolation.Plan {
	t.Helper()
	p := enginePlan(t, name)
	p.RunID = time.Now().UTC().Format("20060102T150405") + fmt.Sprintf("-%012x", time.Now().UnixNano()&(1<<48-1))
	p.Spec.Annotations[isolation.AnnotationRunID] = p.RunID
	p.HostDir = filepath.Join(t.TempDir(), p.RunID)
	if err := os.Mkdir(p.HostDir, 0o700); err != nil {
		t.Fatal(err)
	}
	p.Privilege = privilege.Reduced
	p.Spec.Linux = &specs.Linux{Namespaces: p.Spec.Linux.Namespaces, Resources: p.Spec.Linux.Resources,
		Seccomp:       planner.SeccompProfile(privilege.Reduced),
		MaskedPaths:   planner.MaskedPaths,
		ReadonlyPaths: planner.ReadonlyPaths,
	}
	grantDirs(t, p)
	p.Egress = &isolation.Egress{ProxySocket: echoProxy(t), ProxyPort: 3128}
	return p
}

// prestartFor prestarts a warm container for p's key in p's run.
func prestartFor(t *testing.T, b *Backend, p *isolation.Plan) isolation.Warm {
	t.Helper()
	key, ok := b.WarmKey(p)
	if !ok {
		t.Fatal("no warm key for the plan")
	}
	w, err := b.Prestart(context.Background(), key, p.RunID, p.HostDir)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// claimFor checks p and claims w with it; when the test ends the sandbox
// is closed and nothing of it may be left.
func claimFor(t *testing.T, b *Backend, w isolation.Warm, p *isolation.Plan) isolation.Sandbox {
	t.Helper()
	if err := b.Check(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	sb, err := w.Claim(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sb.Close(context.Background()); err != nil {
			t.Error(err)
		}
		assertWarmGone(t, b, p)
	})
	return sb
}

// assertWarmGone is assertGone, and no mount of the run is left on the
// host nor anything in its host directory.
func assertWarmGone(t *testing.T, b *Backend, p *isolation.Plan) {
	t.Helper()
	assertGone(t, b, p)
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(p.HostDir))
	if err != nil || len(ms) != 0 {
		t.Errorf("mounts left under %s: %d (%v)", p.HostDir, len(ms), err)
	}
	if entries, err := os.ReadDir(p.HostDir); err != nil || len(entries) != 0 {
		t.Errorf("left in %s: %v (%v)", p.HostDir, entries, err)
	}
}

// TestEngineWarmClaim: a claimed warm container serves the run as a cold
// one would: its grants, limits and egress, its user and restrictions.
func TestEngineWarmClaim(t *testing.T) {
	b := engineBackend(t)
	p := warmPlan(t, "warm")
	setPids(p, 77)
	w := prestartFor(t, b, p)
	sb := claimFor(t, b, w, p)
	ctx := context.Background()
	for _, c := range []struct{ name, cmd, want string }{
		{"user is nobody", "id -u", "65534\n"},
		{"read grant", "cat /data/in.txt; touch /data/y 2>/dev/null || echo ro", "granted\nro\n"},
		{"write grant", "echo out > /out/f && cat /out/f", "out\n"},
		{"pids limit", "cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max", fmt.Sprintf("%d\n", 77+sbinit.SpareThreads)},
		{"memory without swap", "cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes 2>/dev/null | sort -u || cat /sys/fs/cgroup/memory.max", "268435456\n"},
		{"cwd", "pwd", "/tmp\n"},
	} {
		if r := execIn(t, sb, ctx, "", "bash", "-c", c.cmd); r.err != nil || r.stdout != c.want {
			t.Errorf("%s: %q: got %q (stderr %q, %v), want %q", c.name, c.cmd, r.stdout, r.stderr, r.err, c.want)
		}
	}
	if r := execIn(t, sb, ctx, "", "python3", "-c", egressProbe); r.err != nil || r.stdout != "proxy got: hello\n" {
		t.Errorf("egress relay: %+v", r)
	}
	if _, err := w.Claim(ctx, p); err == nil {
		t.Error("a warm container was claimed twice")
	}
}

// TestEngineWarmFresh: two runs of one key, one after the other, each in
// its warm container: the second sees nothing of the first.
func TestEngineWarmFresh(t *testing.T) {
	b := engineBackend(t)
	ctx := context.Background()
	mark := `if [ -n "$(ls -A /tmp)" ] || cat /proc/[0-9]*/comm | grep -qx sleep || env | grep -q MARK; then echo seen; else echo fresh; fi`
	for i := 0; i < 2; i++ {
		p := warmPlan(t, "fresh")
		w := prestartFor(t, b, p)
		sb, err := w.Claim(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if r := execIn(t, sb, ctx, "", "bash", "-c", mark); r.stdout != "fresh\n" {
			t.Errorf("run %d: %q (stderr %q)", i, r.stdout, r.stderr)
		}
		r := execIn(t, sb, ctx, "", "bash", "-c", "export MARK=1; touch /tmp/mark; (sleep 600 </dev/null >/dev/null 2>&1 &); echo ok")
		if r.stdout != "ok\n" {
			t.Errorf("run %d marks: %+v", i, r)
		}
		if err := sb.Close(ctx); err != nil {
			t.Fatal(err)
		}
		assertWarmGone(t, b, p)
	}
}

// TestEngineWarmDiscard: a warm container never claimed leaves nothing
// when discarded.
func TestEngineWarmDiscard(t *testing.T) {
	b := engineBackend(t)
	p := warmPlan(t, "discard")
	w := prestartFor(t, b, p)
	if err := w.Discard(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertWarmGone(t, b, p)
	if err := w.Discard(context.Background()); err != nil {
		t.Errorf("second Discard: %v", err)
	}
}

// TestEngineWarmClaimFailure: a grant that became a file since the warm
// container started fails the claim, which leaves nothing.
func TestEngineWarmClaimFailure(t *testing.T) {
	b := engineBackend(t)
	p := warmPlan(t, "claimfail")
	w := prestartFor(t, b, p)
	src := ""
	for _, m := range p.Spec.Mounts {
		if m.Destination == "/data" { // a grant (grantDirs), not a skeleton mount
			src = m.Source
		}
	}
	if !filepath.IsAbs(src) {
		t.Fatalf("no granted directory in the plan: %+v", p.Spec.Mounts)
	}
	if err := os.RemoveAll(src); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Claim(context.Background(), p); err == nil {
		t.Fatal("claim succeeded with a grant that changed kind")
	}
	assertWarmGone(t, b, p)
}

// TestEngineWarmSameView: what a tool can see of its sandbox
// (credentials, capabilities, no_new_privs, seccomp, the flags of every
// mount it can reach, masked paths, limits) is the same in a warm and a
// cold container of one plan. Only the covered placeholders under each
// grant and egress socket differ, and are left out.
func TestEngineWarmSameView(t *testing.T) {
	b := engineBackend(t)
	ctx := context.Background()
	view := `
id
grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp|Seccomp_filters):' /proc/self/status
# the top mount at each mountpoint: options, type, super options
awk '{for(i=7;$i!="-";i++);top[$5]=$6" "$(i+1)" "$(i+3)} END{for(m in top)print m, top[m]}' /proc/self/mountinfo | sort
ls -ld /proc/sys /sys/firmware 2>&1
touch /x 2>&1; touch /dev/x 2>&1; touch /data/x 2>&1
df -B1 --output=size /tmp | tail -1
ulimit -a
hostname
ls -la /.sandboxed | awk '{print $1, $3, $4, $NF}'
cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null
`
	seen := func(sb isolation.Sandbox) string {
		r := execIn(t, sb, ctx, "", "bash", "-c", view)
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.stdout + r.stderr
	}
	cold := warmPlan(t, "cold")
	csb := startEngine(t, b, cold)
	warm := warmPlan(t, "warm")
	wsb := claimFor(t, b, prestartFor(t, b, warm), warm)
	c, w := seen(csb), seen(wsb)
	t.Logf("the view of both:\n%s", w)
	if c != w {
		t.Errorf("a tool sees a warm container unlike a cold one:\n--- cold\n%s\n--- warm\n%s", c, w)
	}
	for _, want := range []string{"CapEff:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2", "/data ro,", "/out rw,"} {
		if !strings.Contains(w, want) {
			t.Errorf("the view lacks %q:\n%s", want, w)
		}
	}
}

// TestEngineWarmGC: the warm container of a controller that died (its end
// of the control socket closed) stops; gc reaps it and its staging mounts.
func TestEngineWarmGC(t *testing.T) {
	b := engineBackend(t)
	ctx := context.Background()
	p := warmPlan(t, "warmgc")
	w := prestartFor(t, b, p).(*warm)
	if removed, err := b.GC(ctx, nil); err != nil || len(removed) != 0 {
		t.Errorf("GC without liveness answers removed %q (%v): a warm container may be another controller's", removed, err)
	}
	_ = w.pending.Close() // the controller is gone
	for i := 0; i < 100; i++ {
		ins, err := b.api.ContainerInspect(ctx, containerName(p.RunID))
		if err != nil || !ins.State.Running {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	removed, err := b.GC(ctx, func(id string) bool { return id != p.RunID })
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 || !strings.Contains(removed[0], "container") || !strings.Contains(removed[1], "staging directory") {
		t.Errorf("GC removed %q, want the container and its staging directory", removed)
	}
	// What gc leaves is the host directory's, removed with it.
	w.s.ln.Close()
	for _, ph := range w.s.staged {
		os.Remove(ph)
	}
	os.Remove(filepath.Join(p.HostDir, stagingDirName))
	assertWarmGone(t, b, p)
}

// TestEngineWarmRatio times claim, `true` and close of a warm container
// against `docker run --rm --network none IMAGE true`, interleaved, and
// prints the p50 ratio; the next warm container is started outside the
// timing, as a pool does. Opt-in like TestEngineRatio.
func TestEngineWarmRatio(t *testing.T) {
	n := testenv.OptIn(t, "SANDBOXED_BENCH", "time N warm runs against docker run")
	b := engineBackend(t)
	ctx := context.Background()
	ours := func() time.Duration {
		p := enginePlan(t, "wratio")
		w := prestartFor(t, b, p)
		if err := b.Check(ctx, p); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		sb, err := w.Claim(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		execTrueAndClose(t, sb)
		return time.Since(start)
	}
	compareWithDockerRun(t, n, "warm container claim+exec+close", ours)

	// The whole life of a warm container (prestart, claim, `true`,
	// close), 4 at once: the most runs per second a pool can serve.
	var wg sync.WaitGroup
	start := time.Now()
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n/4+1; i++ {
				ours()
			}
		}()
	}
	wg.Wait()
	runs := 4 * (n/4 + 1)
	t.Logf("4 in parallel: %d warm container lives in %v, %.1f runs/s", runs, time.Since(start).Round(time.Millisecond), float64(runs)/time.Since(start).Seconds())
}
