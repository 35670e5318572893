//go:build linux

// Command warmbench measures the process tier's warm sandboxes the way a
// resident controller uses them: a claim, Exec(true) and Close of a warm
// sandbox, one at a time, against a cold Start of the same plan, and runs
// per second with 4 runs in flight while a pool of 4 is refilled behind
// them, with the CPU each run costs (this process and every init it
// started, and what they ran).
//
//	CGO_ENABLED=0 go build -o /tmp/warmbench ./internal/bench/warmbench
//	make build && sudo /tmp/warmbench -n 50
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

var seq int64
var seqMu sync.Mutex

func plan(priv privilege.Privilege) *isolation.Plan {
	seqMu.Lock()
	seq++
	id := fmt.Sprintf("warmbench-%d-%d", os.Getpid(), seq)
	seqMu.Unlock()
	opts := []sandbox.SpecOpt{sandbox.WithMemory(64 << 20), sandbox.WithPids(64)}
	if priv == privilege.SameAsUser {
		opts = append(opts, sandbox.WithUser(uint32(os.Getuid()), uint32(os.Getgid())))
	}
	spec, err := sandbox.NewSpec(id, priv, opts...)
	if err != nil {
		fail(err)
	}
	return &isolation.Plan{RunID: id, Tier: isolation.TierProcess, Privilege: priv, Spec: spec,
		Limits: isolation.Limits{MemoryBytes: 64 << 20, Pids: 64, TmpfsBytes: 64 << 20, KillGrace: time.Second}}
}

func main() {
	if sbinit.IsInit() {
		sbinit.Main()
	}
	n := flag.Int("n", 30, "runs of each kind")
	privName := flag.String("privilege", "reduced", "privilege of the runs")
	initPath := flag.String("init", "isolation/initbin/sandboxed-init", "the init binary (make build makes it; \"\": this binary)")
	flag.Parse()
	priv := privilege.Privilege(*privName)
	ctx := context.Background()
	b := process.New()
	if *initPath != "" {
		abs, err := filepath.Abs(*initPath)
		if err != nil {
			fail(err)
		}
		b.Exe = abs
	}

	exec := func(sb isolation.Sandbox) {
		if exit, err := sb.Exec(ctx, isolation.Command{Args: []string{"/bin/true"}}, isolation.Stdio{}); err != nil || exit.Code != 0 {
			fail(fmt.Errorf("exec: %v %v", exit, err))
		}
	}
	prestart := func() (isolation.Warm, *isolation.Plan) {
		p := plan(priv)
		key, ok := b.WarmKey(p)
		if !ok {
			fail(fmt.Errorf("no warm key"))
		}
		w, err := b.Prestart(ctx, key, p.RunID, p.HostDir)
		if err != nil {
			fail(err)
		}
		return w, p
	}
	var claim, cold, prest []time.Duration
	for i := 0; i < *n; i++ {
		t0 := time.Now()
		w, p := prestart()
		prest = append(prest, time.Since(t0))
		t0 = time.Now()
		sb, err := w.Claim(ctx, p)
		if err != nil {
			fail(err)
		}
		exec(sb)
		claim = append(claim, time.Since(t0))
		if err := sb.Close(ctx); err != nil {
			fail(err)
		}
		p = plan(priv)
		t0 = time.Now()
		sb, err = b.Start(ctx, p)
		if err != nil {
			fail(err)
		}
		exec(sb)
		cold = append(cold, time.Since(t0))
		if err := sb.Close(ctx); err != nil {
			fail(err)
		}
	}
	fmt.Printf("prestart p50 %v; claim+exec p50 %v (p90 %v); cold start+exec p50 %v (p90 %v)\n",
		pct(prest, 50), pct(claim, 50), pct(claim, 90), pct(cold, 50), pct(cold, 90))

	// Throughput: 4 workers, a pool of 4 refilled as it is drawn.
	type entry struct {
		w isolation.Warm
		p *isolation.Plan
	}
	pool := make(chan entry, 4)
	var refill sync.WaitGroup
	fill := func() {
		refill.Add(1)
		go func() {
			defer refill.Done()
			w, p := prestart()
			pool <- entry{w, p}
		}()
	}
	for i := 0; i < 4; i++ {
		fill()
	}
	for len(pool) < 4 {
		time.Sleep(10 * time.Millisecond)
	}
	runs := 10 * *n
	cpu0 := cpuTime()
	t0 := time.Now()
	var wg sync.WaitGroup
	jobs := make(chan struct{}, runs)
	for i := 0; i < runs; i++ {
		jobs <- struct{}{}
	}
	close(jobs)
	var closers sync.WaitGroup
	for k := 0; k < 4; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				e := <-pool
				fill()
				sb, err := e.w.Claim(ctx, e.p)
				if err != nil {
					fail(err)
				}
				exec(sb)
				closers.Add(1)
				go func() { // as a controller does, behind the answer
					defer closers.Done()
					if err := sb.Close(ctx); err != nil {
						fail(err)
					}
				}()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	closers.Wait()
	refill.Wait()
	cpu := cpuTime() - cpu0
	close(pool)
	for e := range pool {
		_ = e.w.Discard(ctx)
	}
	fmt.Printf("4 in parallel, pool of 4: %.0f runs/s; CPU per run %v (this process, its inits and what they ran, refills included)\n",
		float64(runs)/elapsed.Seconds(), (cpu / time.Duration(runs)).Round(10*time.Microsecond))
}

// cpuTime is the CPU time of this process and its reaped children.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	d := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return d(self.Utime) + d(self.Stime) + d(kids.Utime) + d(kids.Stime)
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100].Round(10 * time.Microsecond)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "warmbench:", err)
	os.Exit(1)
}
