package container

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/sandboxed-dev/sandboxed/images"
	"github.com/sandboxed-dev/sandboxed/internal/testenv"
	"github.com/sandboxed-dev/sandboxed/isolation"
)

// TestEngineRatio times whole runs (start, `true`, close) against the
// peer `docker run --rm --network none IMAGE true`, interleaved so load on
// the machine hits both alike, and prints the p50 ratio. It runs with
// SANDBOXED_E2E=1 and SANDBOXED_BENCH=N (N pairs). It asserts nothing, so
// it is an opt-in (testenv.OptIn), skipped unless asked for, in CI too:
// its skip hides no check, and what it exercises (start, exec, close on
// the real engine) the real-engine tests check on every CI run.
func TestEngineRatio(t *testing.T) {
	n := testenv.OptIn(t, "SANDBOXED_BENCH", "time N runs against docker run")
	b := engineBackend(t)
	ctx := context.Background()
	compareWithDockerRun(t, n, "container tier", func() time.Duration {
		p := enginePlan(t, "ratio")
		start := time.Now()
		sb, err := b.Start(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		execTrueAndClose(t, sb)
		return time.Since(start)
	})
}

// compareWithDockerRun times ours against the peer `docker run --rm
// --network none IMAGE true`, n of each interleaved so load on the machine
// hits both alike (after one of each untimed), and logs the p50 of each
// and their ratio under what. The docker CLI is used only to time the peer.
func compareWithDockerRun(t *testing.T, n int, what string, ours func() time.Duration) {
	t.Helper()
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Fatal("the ratio needs the docker CLI as the peer: ", err)
	}
	peer := func() time.Duration {
		start := time.Now()
		if out, err := exec.Command(docker, "run", "--rm", "--network", "none", images.DefaultImage, "true").CombinedOutput(); err != nil {
			t.Fatal(err, string(out))
		}
		return time.Since(start)
	}
	ours()
	peer()
	var a, d []time.Duration
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			a = append(a, ours())
			d = append(d, peer())
		} else {
			d = append(d, peer())
			a = append(a, ours())
		}
	}
	pa, pd := p50(a), p50(d)
	t.Logf("%s p50 %v, docker run p50 %v, ratio %.2f (n=%d)", what, pa.Round(time.Millisecond), pd.Round(time.Millisecond), float64(pa)/float64(pd), n)
}

// execTrueAndClose runs `true` in sb and closes it: the work of a
// timed run.
func execTrueAndClose(tb testing.TB, sb isolation.Sandbox) {
	tb.Helper()
	ctx := context.Background()
	ex, err := sb.Exec(ctx, isolation.Command{Args: []string{"true"}, Env: []string{"PATH=/usr/bin:/bin"}, Cwd: "/"}, isolation.Stdio{})
	if err != nil || ex.Code != 0 {
		tb.Fatal(ex, err)
	}
	if err := sb.Close(ctx); err != nil {
		tb.Fatal(err)
	}
}

func p50(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// TestEnginePhases prints the p50 of each phase of a run (engine calls,
// the init's handshake, one exec) with SANDBOXED_E2E=1 and
// SANDBOXED_PHASES=N. It asserts nothing: an opt-in, as TestEngineRatio.
func TestEnginePhases(t *testing.T) {
	n := testenv.OptIn(t, "SANDBOXED_PHASES", "print the p50 of each phase of N runs")
	b := engineBackend(t)
	ctx := context.Background()
	names := []string{"create", "start", "accept", "handshake", "exec", "closeinit", "remove", "total"}
	ph := map[string][]time.Duration{}
	for i := 0; i < n; i++ {
		p := enginePlan(t, "phase")
		cfg, hc, err := translate(p, b.host(os.Lstat))
		if err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(p.HostDir, controlSocketName)
		ln, _ := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
		os.Chmod(sock, 0o666)
		ts := []time.Time{time.Now()}
		cr, err := b.api.ContainerCreate(ctx, cfg, hc, nil, nil, containerName(p.RunID))
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, time.Now())
		if err := b.api.ContainerStart(ctx, cr.ID, container.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		ts = append(ts, time.Now())
		c, err := accept(ctx, ln, nil)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, time.Now())
		in, err := handshake(ctx, c, p)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, time.Now())
		in.Exec(ctx, isolation.Command{Args: []string{"/bin/true"}, Cwd: "/"}, isolation.Stdio{})
		ts = append(ts, time.Now())
		in.Close()
		ts = append(ts, time.Now())
		b.api.ContainerRemove(ctx, cr.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		ts = append(ts, time.Now())
		ln.Close()
		for j := 1; j < len(ts); j++ {
			ph[names[j-1]] = append(ph[names[j-1]], ts[j].Sub(ts[j-1]))
		}
		ph["total"] = append(ph["total"], ts[len(ts)-1].Sub(ts[0]))
	}
	for _, name := range names {
		t.Logf("%-10s p50 %v", name, p50(ph[name]).Round(time.Millisecond))
	}
}
