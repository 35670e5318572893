package execgate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// errKilled is what Enter returns after Kill.
var errKilled = fmt.Errorf("the sandbox was killed: %w", isolation.ErrClosed)

// Gate is the commands' side of a sandbox's life. The zero Gate admits
// commands; it is safe for concurrent use.
type Gate struct {
	mu     sync.Mutex
	active int // commands admitted and not yet left
	killed bool
	closed bool
	// done is signalled (non-blocking) when a command leaves. It holds
	// one wakeup: Wait reads active, then waits on it, and a command
	// that ends in between must still wake it (an unbuffered channel
	// dropped that wakeup, and Kill waited out the whole grace).
	done chan struct{}
}

// Enter admits one command. After Close it returns isolation.ErrClosed,
// after Kill an error that wraps it. Otherwise the caller must call leave
// once the command returned.
func (g *Gate) Enter() (leave func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.closed:
		return nil, isolation.ErrClosed
	case g.killed:
		return nil, errKilled
	}
	g.active++
	done := g.doneLocked()
	return func() {
		g.mu.Lock()
		g.active--
		g.mu.Unlock()
		select {
		case done <- struct{}{}:
		default:
		}
	}, nil
}

// Kill stops admitting commands. It reports false when the gate was
// already closed: there is nothing left to kill.
func (g *Gate) Kill() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.killed = true
	return true
}

// Close stops admitting commands, for good.
func (g *Gate) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// Wait waits until no admitted command runs, grace passed or ctx ended.
func (g *Gate) Wait(ctx context.Context, grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	for {
		g.mu.Lock()
		n := g.active
		done := g.doneLocked()
		g.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-done:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// doneLocked returns the wakeup channel, made on first use. g.mu is held.
func (g *Gate) doneLocked() chan struct{} {
	if g.done == nil {
		g.done = make(chan struct{}, 1)
	}
	return g.done
}
