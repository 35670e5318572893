package sandbox

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// warmBackend is a fakeBackend that prestarts: its warm sandboxes record
// how they ended.
type warmBackend struct {
	fakeBackend
	mu        sync.Mutex
	prestarts []string // run ids
	claimed   []string
	discarded []string
	failNext  bool
}

func (b *warmBackend) WarmKey(p *isolation.Plan) (string, bool) {
	return "k", p.Tier == isolation.TierProcess
}

func (b *warmBackend) Prestart(ctx context.Context, key, runID, hostDir string) (isolation.Warm, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failNext {
		b.failNext = false
		return nil, errors.New("prestart failed")
	}
	if _, err := os.Stat(hostDir); err != nil {
		return nil, err
	}
	b.prestarts = append(b.prestarts, runID)
	return &fakeWarm{b: b, key: key, runID: runID}, nil
}

type fakeWarm struct {
	b          *warmBackend
	key, runID string
	done       bool
}

func (w *fakeWarm) RunID() string { return w.runID }
func (w *fakeWarm) Key() string   { return w.key }
func (w *fakeWarm) Claim(ctx context.Context, p *isolation.Plan) (isolation.Sandbox, error) {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	if w.done || p.RunID != w.runID {
		return nil, errors.New("bad claim")
	}
	w.done = true
	w.b.claimed = append(w.b.claimed, w.runID)
	return &fakeSandbox{killed: make(chan struct{}), calls: map[string]int{}}, nil
}
func (w *fakeWarm) Discard(context.Context) error {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	if !w.done {
		w.done = true
		w.b.discarded = append(w.b.discarded, w.runID)
	}
	return nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A key's first run waits for the pool being filled; each warm sandbox
// is held live with its host directory, handed out once, and the pool is
// refilled behind each claim; Close discards what is left and releases
// every run id.
func TestPoolHandsEachSandboxOnce(t *testing.T) {
	rt := t.TempDir()
	c := &Controller{RuntimeDir: rt}
	b := &warmBackend{}
	p := NewPool(PoolSettings{Size: 2}, rt, nil)
	defer p.Close()
	first := p.take(b, "k")
	if first == nil {
		t.Fatal("the first run got no sandbox being started")
	}
	waitFor(t, "the pool to fill", func() bool { return p.Ready() == 2 })
	got := []*pooled{first}
	for i := 0; i < 2; i++ {
		w := p.take(b, "k")
		if w == nil {
			t.Fatal("a full pool handed out nothing")
		}
		if !c.Live(w.w.RunID()) {
			t.Errorf("warm sandbox %s is not held live", w.w.RunID())
		}
		if _, err := os.Stat(w.hostDir); err != nil {
			t.Errorf("warm sandbox's host dir: %v", err)
		}
		got = append(got, w)
	}
	if got[0].w.RunID() == got[1].w.RunID() || got[1].w.RunID() == got[2].w.RunID() || got[0].w.RunID() == got[2].w.RunID() {
		t.Fatal("one sandbox handed out twice")
	}
	waitFor(t, "the pool to refill", func() bool { return p.Ready() == 2 })
	for _, w := range got {
		w.drop()
		if c.Live(w.w.RunID()) {
			t.Errorf("dropped sandbox %s still held live", w.w.RunID())
		}
		if _, err := os.Stat(w.hostDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("dropped sandbox's host dir is left: %v", err)
		}
	}
	p.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.prestarts) != 5 || len(b.discarded) != 5 {
		t.Errorf("prestarted %d, discarded %d; want 5 and 5", len(b.prestarts), len(b.discarded))
	}
	for _, id := range b.prestarts {
		if c.Live(id) {
			t.Errorf("run id %s still held live after Close", id)
		}
	}
	entries, _ := os.ReadDir(rt)
	if len(entries) != 0 {
		t.Errorf("left in the runtime dir: %v", entries)
	}
}

// A prestart that fails stops the key's refill for a while: its runs
// start cold without waiting, then the pool tries again.
func TestPoolFailedPrestart(t *testing.T) {
	defer func(d time.Duration) { retryAfter = d }(retryAfter)
	retryAfter = time.Second
	rt := t.TempDir()
	b := &warmBackend{failNext: true}
	p := NewPool(PoolSettings{Size: 1}, rt, nil)
	defer p.Close()
	if w := p.take(b, "k"); w != nil {
		t.Fatal("a run got the sandbox whose prestart failed")
	}
	time.Sleep(10 * time.Millisecond)
	if p.Ready() != 0 {
		t.Fatal("a failed prestart filled the pool")
	}
	if w := p.take(b, "k"); w != nil {
		t.Fatal("a run right after the failure waited for a prestart")
	}
	time.Sleep(retryAfter)
	w := p.take(b, "k")
	if w == nil {
		t.Fatal("the pool did not try again")
	}
	w.drop()
	waitFor(t, "the pool to fill after the next claim", func() bool { return p.Ready() == 1 })
}

// A burst larger than the pool: the runs beyond what is ready and being
// started start cold at once, each sandbox goes to one run.
func TestPoolBurst(t *testing.T) {
	rt := t.TempDir()
	b := &warmBackend{}
	p := NewPool(PoolSettings{Size: 2}, rt, nil)
	defer p.Close()
	p.take(b, "k").drop()
	waitFor(t, "the pool to fill", func() bool { return p.Ready() == 2 })
	var mu sync.Mutex
	ids := map[string]bool{}
	cold := 0
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := p.take(b, "k")
			mu.Lock()
			defer mu.Unlock()
			if w == nil {
				cold++
				return
			}
			if ids[w.w.RunID()] {
				t.Errorf("sandbox %s handed out twice", w.w.RunID())
			}
			ids[w.w.RunID()] = true
			w.drop()
		}()
	}
	wg.Wait()
	if len(ids)+cold != 8 || len(ids) < 2 {
		t.Errorf("%d warm, %d cold of 8", len(ids), cold)
	}
}

// A key unused for the idle lifetime is given back.
func TestPoolIdle(t *testing.T) {
	rt := t.TempDir()
	b := &warmBackend{}
	p := NewPool(PoolSettings{Size: 2, Idle: 100 * time.Millisecond}, rt, nil)
	defer p.Close()
	p.take(b, "k").drop()
	waitFor(t, "the pool to fill", func() bool { return p.Ready() == 2 })
	waitFor(t, "the idle pool to shrink to zero", func() bool { return p.Ready() == 0 })
	waitFor(t, "the discards", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.discarded) == 3
	})
}

// A run with a warm sandbox claims it (no cold start), takes its run id,
// and leaves nothing of it when done; a refused run drops it.
func TestExecuteClaimsWarm(t *testing.T) {
	rt := t.TempDir()
	b := &warmBackend{}
	c := &Controller{RuntimeDir: rt, Backends: map[isolation.Tier]isolation.Backend{isolation.TierProcess: b}}
	p := NewPool(PoolSettings{Size: 1}, rt, nil)
	defer p.Close()
	p.take(b, "k").drop()
	waitFor(t, "the pool to fill", func() bool { return p.Ready() == 1 })
	w := p.take(b, "k")
	j := job(time.Second, step("echo", "hi"))
	j.Plan.RunID = w.w.RunID()
	c.in(j)
	j.warm = w
	res, err := c.Execute(context.Background(), j)
	if err != nil || res.Status != StatusOK || res.Stdout != "hi" {
		t.Fatalf("result %+v, err %v", res, err)
	}
	if b.starts != 0 || !slices.Equal(b.claimed, []string{w.w.RunID()}) {
		t.Errorf("cold starts %d, claimed %v", b.starts, b.claimed)
	}
	if c.Live(w.w.RunID()) {
		t.Error("the run's id is still held live")
	}
	if _, err := os.Stat(j.Plan.HostDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("host dir left: %v", err)
	}

	waitFor(t, "the pool to refill", func() bool { return p.Ready() == 1 })
	w = p.take(b, "k")
	b.checkErr = errors.New("refused")
	j = job(time.Second, step("echo", "hi"))
	j.Plan.RunID = w.w.RunID()
	c.in(j)
	j.warm = w
	res, _ = c.Execute(context.Background(), j)
	if res.Status != StatusError {
		t.Fatalf("status %s, want error", res.Status)
	}
	b.mu.Lock()
	discarded := slices.Contains(b.discarded, w.w.RunID())
	b.mu.Unlock()
	if !discarded || c.Live(w.w.RunID()) {
		t.Errorf("a refused run's warm sandbox: discarded %t, live %t", discarded, c.Live(w.w.RunID()))
	}
}

// leakySandbox fails to close.
type leakySandbox struct{ fakeSandbox }

func (s *leakySandbox) Close(context.Context) error { return errors.New("cgroup busy") }

type leakyBackend struct{ fakeBackend }

func (b *leakyBackend) Start(ctx context.Context, p *isolation.Plan) (isolation.Sandbox, error) {
	return &leakySandbox{fakeSandbox{killed: make(chan struct{}), calls: map[string]int{}}}, nil
}

// With Behind, a run reports before its sandbox is closed; a teardown
// that fails is logged and reported on the next run, not lost.
func TestBehindReportsLeaksOnTheNextRun(t *testing.T) {
	rt := t.TempDir()
	c := &Controller{RuntimeDir: rt, Backends: map[isolation.Tier]isolation.Backend{isolation.TierProcess: &leakyBackend{}}, Behind: NewBehind(nil)}
	res, err := c.Execute(context.Background(), c.in(job(time.Second, step("echo", "hi"))))
	if err != nil || res.Status != StatusOK {
		t.Fatalf("result %+v, err %v", res, err)
	}
	c.Behind.wg.Wait()
	res, _ = c.Execute(context.Background(), c.in(job(time.Second, step("echo", "hi"))))
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "cgroup busy") {
		t.Errorf("warnings %q, want the earlier run's teardown failure", res.Warnings)
	}
	if left := c.Behind.Wait(); len(left) != 1 {
		t.Errorf("Wait returned %q, want the second run's failure", left)
	}
	entries, _ := os.ReadDir(rt)
	if len(entries) != 0 {
		t.Errorf("left in the runtime dir: %v", entries)
	}
}
