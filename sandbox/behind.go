package sandbox

import (
	"fmt"
	"io"
	"sync"
)

// Behind runs the teardown of runs behind their results: a resident
// controller (or a one-shot run, before it exits) reports a run as soon
// as its result, run record and audit line are final, while the sandbox
// is killed, unmounted and removed. The teardown is still verified: what
// it could not remove is written to the log and reported as a warning of
// the next run (and `sandboxed gc` reaps it).
type Behind struct {
	log io.Writer

	wg    sync.WaitGroup
	mu    sync.Mutex
	leaks []string // not yet reported to a run
}

// NewBehind returns a Behind that logs teardown failures to log (nil:
// discarded; they are still reported to the next run).
func NewBehind(log io.Writer) *Behind {
	if log == nil {
		log = io.Discard
	}
	return &Behind{log: log}
}

// goTeardown runs the teardown f of run runID behind the result.
func (b *Behind) goTeardown(runID string, f func() error) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := f(); err != nil {
			msg := fmt.Sprintf("teardown of run %s: %v", runID, err)
			fmt.Fprintf(b.log, "sandboxed: error: %s\n", msg)
			b.mu.Lock()
			b.leaks = append(b.leaks, msg)
			b.mu.Unlock()
		}
	}()
}

// takeLeaks returns the teardown failures not yet reported, once.
func (b *Behind) takeLeaks() []string {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.leaks
	b.leaks = nil
	return l
}

// Wait waits until every teardown started so far has ended, and returns
// the failures not yet reported to a run.
func (b *Behind) Wait() []string {
	if b == nil {
		return nil
	}
	b.wg.Wait()
	return b.takeLeaks()
}
