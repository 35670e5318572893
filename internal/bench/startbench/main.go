// Command startbench measures the process tier's startup the way the
// sandboxed binary experiences it (a static binary re-executed as the
// init), interleaved with `bwrap --unshare-all` running the same command.
//
//	CGO_ENABLED=0 go build -o /tmp/startbench ./internal/bench/startbench
//	sudo /tmp/startbench -n 50
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

func main() {
	if sbinit.IsInit() {
		sbinit.Main()
	}
	n := flag.Int("n", 30, "iterations")
	pause := flag.Duration("pause", 20*time.Millisecond, "pause between iterations (lets network namespaces go)")
	flag.Parse()
	ctx := context.Background()
	be := process.New()
	bw, bwErr := exec.LookPath("bwrap")
	bwArgs := []string{"--unshare-all", "--die-with-parent", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"}
	for _, d := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64"} {
		if fi, err := os.Lstat(d); err == nil {
			if fi.Mode()&os.ModeSymlink != 0 {
				l, _ := os.Readlink(d)
				bwArgs = append(bwArgs, "--symlink", l, d)
			} else {
				bwArgs = append(bwArgs, "--ro-bind", d, d)
			}
		}
	}
	bwArgs = append(bwArgs, "/bin/true")
	var ours, starts, theirs []time.Duration
	for i := 0; i < *n; i++ {
		id := fmt.Sprintf("bench-%d-%d", os.Getpid(), i)
		spec, err := sandbox.NewSpec(id, privilege.SameAsUser, sandbox.WithUser(uint32(os.Getuid()), uint32(os.Getgid())), sandbox.WithMemory(256<<20), sandbox.WithPids(64))
		if err != nil {
			fail(err)
		}
		p := &isolation.Plan{RunID: id, Tier: isolation.TierProcess, Privilege: privilege.SameAsUser, Spec: spec,
			Limits: isolation.Limits{MemoryBytes: 256 << 20, Pids: 64, TmpfsBytes: 64 << 20, KillGrace: time.Second}}
		t0 := time.Now()
		sb, err := be.Start(ctx, p)
		if err != nil {
			fail(err)
		}
		starts = append(starts, time.Since(t0))
		if exit, err := sb.Exec(ctx, isolation.Command{Args: []string{"/bin/true"}}, isolation.Stdio{}); err != nil || exit.Code != 0 {
			fail(fmt.Errorf("exec: %v %v", exit, err))
		}
		if err := sb.Close(ctx); err != nil {
			fail(err)
		}
		ours = append(ours, time.Since(t0))
		if bwErr == nil {
			t0 = time.Now()
			if out, err := exec.Command(bw, bwArgs...).CombinedOutput(); err != nil {
				fail(fmt.Errorf("bwrap: %v %s", err, out))
			}
			theirs = append(theirs, time.Since(t0))
		}
		time.Sleep(*pause)
	}
	fmt.Printf("process tier Start p50 %v; Start+Exec(true)+Close p50 %v (p10 %v)\n", pct(starts, 50), pct(ours, 50), pct(ours, 10))
	if len(theirs) > 0 {
		fmt.Printf("bwrap --unshare-all true p50 %v (p10 %v); ratio p50 %.2f, p10 %.2f\n", pct(theirs, 50), pct(theirs, 10),
			float64(pct(ours, 50))/float64(pct(theirs, 50)), float64(pct(ours, 10))/float64(pct(theirs, 10)))
	}
}

func pct(d []time.Duration, p int) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)*p/100]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "startbench:", err)
	os.Exit(1)
}
