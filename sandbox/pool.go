package sandbox

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// PoolSettings are the settings of a warm pool.
type PoolSettings struct {
	// Size is how many warm sandboxes each key keeps ready; 0 turns the
	// pool off.
	Size int
	// Idle is how long a key's sandboxes wait for a claim before they are
	// discarded (the pool of that key shrinks to zero until a run of the
	// key comes again).
	Idle time.Duration
}

// Pool keeps warm sandboxes (isolation.Prestarter) for the runs of a
// resident controller (sandboxed mcp, sandboxed serve). A key's pool is
// made by its first run; a run of the key claims a warm sandbox when one
// is ready, else waits for one being started that no other run waits for
// (it is further along than a cold start would be), else starts cold (a
// burst larger than the pool does not queue); each claim refills the
// pool in the background. The refill of a ready sandbox's claim waits
// until the claiming run's result is final (or refillDelay), so that
// starting its successor does not take the CPU from the run itself; a
// run that finds the pool empty starts the refill at once.
//
// Each warm sandbox is born with a run id that is held live (holdRun)
// and a host directory, like a run in progress: when the controller dies
// the kernel drops the hold, its init dies with it (parent-death
// signal), and `sandboxed gc` reaps the rest like any crashed run's.
type Pool struct {
	settings   PoolSettings
	runtimeDir string
	log        io.Writer

	mu     sync.Mutex
	keys   map[string]*keyPool
	claims int // warm sandboxes handed to runs so far
	closed bool
	wg     sync.WaitGroup
	stop   chan struct{}
}

// keyPool is the warm sandboxes of one key.
type keyPool struct {
	b        isolation.Prestarter
	ready    []*pooled
	starting int
	// waiting are the runs waiting for a sandbox being started, first
	// come first served; each gets one, or nil when its prestart failed.
	waiting  []chan *pooled
	lastUse  time.Time
	failedAt time.Time // the last prestart failed: no refill for retryAfter
}

// pooled is one warm sandbox and what the pool made on the host for it.
type pooled struct {
	w       isolation.Warm
	hostDir string
	release func() // the run id's live hold
	owned   bool   // a run's host setup owns it (Controller.setUpHost)
	once    sync.Once
	// refill, when set, starts the refill its claim put off; it is
	// idempotent, and runs by itself after refillDelay.
	refill func()
}

// refillNow starts the refill w's claim put off, if any.
func (w *pooled) refillNow() {
	if w != nil && w.refill != nil {
		w.refill()
	}
}

// drop discards the warm sandbox if no run claimed it, then removes what
// the pool made for it. It is idempotent; after a claim the sandbox's
// Close has destroyed it.
func (w *pooled) drop() {
	w.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		_ = w.w.Discard(ctx)
		w.release()
	})
}

// NewPool returns a pool of the given settings whose sandboxes' host
// directories are under runtimeDir; log receives what goes wrong behind
// the runs (nil: discarded). Close it when the controller stops.
func NewPool(s PoolSettings, runtimeDir string, log io.Writer) *Pool {
	if log == nil {
		log = io.Discard
	}
	p := &Pool{settings: s, runtimeDir: runtimeDir, log: log, keys: map[string]*keyPool{}, stop: make(chan struct{})}
	if s.Size > 0 && s.Idle > 0 {
		p.wg.Add(1)
		go p.expire()
	}
	return p
}

// maxWait bounds how long a run waits for a sandbox being started.
const maxWait = 10 * time.Second

// refillDelay bounds how long the refill of a claimed ready sandbox
// waits for the claiming run to end (Controller.Execute starts it then).
const refillDelay = 50 * time.Millisecond

// retryAfter is how long a key whose prestart failed starts its runs
// cold before it tries again (a plan the backend cannot prestart, a host
// out of something: the runs do not each wait for a failure).
var retryAfter = 10 * time.Second

// take returns a warm sandbox of key: a ready one, else one being
// started that no other run waits for; nil when there is neither (the
// run starts cold). Either way the key's pool is filled behind it.
func (p *Pool) take(b isolation.Prestarter, key string) *pooled {
	if p == nil || p.settings.Size <= 0 {
		return nil
	}
	got, wait := p.takeOrWait(b, key)
	if wait == nil {
		return got
	}
	t := time.NewTimer(maxWait)
	defer t.Stop()
	select {
	case w := <-wait:
		return w
	case <-t.C:
	}
	p.mu.Lock()
	if kp := p.keys[key]; kp != nil {
		kp.waiting = slices.DeleteFunc(kp.waiting, func(c chan *pooled) bool { return c == wait })
	}
	p.mu.Unlock()
	select {
	case w := <-wait: // handed over as the wait ended
		return w
	default:
		return nil
	}
}

// takeOrWait takes a ready sandbox of key, or returns the channel on
// which one being started will be handed over (nil, nil: start cold).
func (p *Pool) takeOrWait(b isolation.Prestarter, key string) (*pooled, chan *pooled) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, nil
	}
	kp := p.keys[key]
	if kp == nil {
		kp = &keyPool{b: b}
		p.keys[key] = kp
	}
	kp.lastUse = time.Now()
	if n := len(kp.ready); n > 0 {
		got := kp.ready[n-1]
		kp.ready = kp.ready[:n-1]
		p.claims++
		got.refill = p.refillLater(key, kp)
		return got, nil
	}
	p.refillLocked(key, kp)
	if kp.starting > len(kp.waiting) {
		wait := make(chan *pooled, 1)
		kp.waiting = append(kp.waiting, wait)
		return nil, wait
	}
	return nil, nil
}

// refillLater returns a function that starts the sandboxes key lacks,
// once, and calls it after refillDelay if nobody did.
func (p *Pool) refillLater(key string, kp *keyPool) func() {
	var once sync.Once
	refill := func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if !p.closed && p.keys[key] == kp {
				p.refillLocked(key, kp)
			}
		})
	}
	time.AfterFunc(refillDelay, refill)
	return refill
}

// refillLocked starts the sandboxes key lacks. p.mu is held.
func (p *Pool) refillLocked(key string, kp *keyPool) {
	if time.Since(kp.failedAt) < retryAfter {
		return
	}
	for len(kp.ready)+kp.starting < p.settings.Size {
		kp.starting++
		p.wg.Add(1)
		go p.prestart(key, kp)
	}
}

// prestart makes one warm sandbox of key and adds it to the pool.
func (p *Pool) prestart(key string, kp *keyPool) {
	defer p.wg.Done()
	w, err := p.make(kp.b, key)
	p.mu.Lock()
	kp.starting--
	var waiter chan *pooled
	if len(kp.waiting) > 0 {
		waiter = kp.waiting[0]
		kp.waiting = kp.waiting[1:]
	}
	if err != nil {
		kp.failedAt = time.Now()
		p.mu.Unlock()
		if waiter != nil {
			waiter <- nil // it starts cold
		}
		fmt.Fprintf(p.log, "sandboxed: pool: prestart a sandbox: %v\n", err)
		return
	}
	switch {
	case waiter != nil && !p.closed:
		p.claims++
		waiter <- w
		p.refillLocked(key, kp)
	case p.closed || p.keys[key] != kp:
		p.mu.Unlock()
		if waiter != nil {
			waiter <- nil
		}
		p.discard(w)
		return
	default:
		kp.ready = append(kp.ready, w)
	}
	p.mu.Unlock()
}

// make prestarts one sandbox with a fresh run id, held live, in its own
// host directory. On error nothing is left.
func (p *Pool) make(b isolation.Prestarter, key string) (_ *pooled, retErr error) {
	runID := NewRunID(time.Now())
	if err := ensurePrivateDir(p.runtimeDir); err != nil {
		return nil, err
	}
	hostDir := HostDir(p.runtimeDir, runID)
	release, err := holdRun(hostDir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	w, err := b.Prestart(ctx, key, runID, hostDir)
	if err != nil {
		release()
		return nil, err
	}
	return &pooled{w: w, hostDir: hostDir, release: release}, nil
}

// discard destroys a warm sandbox nobody claimed, and what the pool made
// for it.
func (p *Pool) discard(w *pooled) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := w.w.Discard(ctx); err != nil {
		fmt.Fprintf(p.log, "sandboxed: pool: discard sandbox %s: %v\n", w.w.RunID(), err)
	}
	w.drop()
}

// expire discards the sandboxes of keys unused for the idle lifetime.
func (p *Pool) expire() {
	defer p.wg.Done()
	t := time.NewTicker(max(p.settings.Idle/4, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		var idle []*pooled
		p.mu.Lock()
		for key, kp := range p.keys {
			if time.Since(kp.lastUse) < p.settings.Idle || kp.starting > 0 {
				continue
			}
			idle = append(idle, kp.ready...)
			delete(p.keys, key)
		}
		p.mu.Unlock()
		for _, w := range idle {
			p.discard(w)
		}
	}
}

// Claims reports how many warm sandboxes were handed to runs so far.
func (p *Pool) Claims() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.claims
}

// Ready reports how many warm sandboxes wait for a claim, over all keys.
func (p *Pool) Ready() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, kp := range p.keys {
		n += len(kp.ready)
	}
	return n
}

// Close discards every warm sandbox and waits for the pool's work to end.
// It is idempotent.
func (p *Pool) Close() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.stop)
	var all []*pooled
	for _, kp := range p.keys {
		all = append(all, kp.ready...)
		for _, w := range kp.waiting {
			w <- nil
		}
		kp.waiting = nil
	}
	p.keys = map[string]*keyPool{}
	p.mu.Unlock()
	for _, w := range all {
		p.discard(w)
	}
	p.wg.Wait()
	return nil
}

// warmFor takes a warm sandbox for the prepared run pr from the
// controller's pool and re-plans the run with its run id. It returns the
// run as prepared (and nil) when the run starts cold.
func (c *Controller) warmFor(pr *Prepared) (*Prepared, *pooled) {
	if c.Pool == nil || pr.Plan == nil || pr.Plan.Backend != "" || pr.Facts == nil || pr.Facts.RuntimeDir != c.Pool.runtimeDir {
		return pr, nil
	}
	b, ok := c.Backends[pr.Plan.Tier].(isolation.Prestarter)
	if !ok {
		return pr, nil
	}
	key, ok := b.WarmKey(pr.Plan)
	if !ok {
		return pr, nil
	}
	w := c.Pool.take(b, key)
	if w == nil {
		return pr, nil
	}
	again, err := pr.withRunID(w.w.RunID())
	if err != nil || again.Plan.HostDir != w.hostDir {
		c.Pool.discard(w)
		w.refillNow()
		return pr, nil
	}
	return again, w
}
