package execgate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

func TestGate(t *testing.T) {
	var g Gate
	leave, err := g.Enter()
	if err != nil {
		t.Fatal(err)
	}
	if !g.Kill() {
		t.Fatal("Kill of an open gate reported it closed")
	}
	if _, err := g.Enter(); !errors.Is(err, isolation.ErrClosed) || err == isolation.ErrClosed {
		t.Errorf("Enter after Kill: %v, want the killed error wrapping ErrClosed", err)
	}
	// A command that leaves while Wait waits ends the wait at once.
	go func() {
		time.Sleep(20 * time.Millisecond)
		leave()
	}()
	start := time.Now()
	g.Wait(context.Background(), time.Minute)
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Wait took %s after the last command left", d)
	}
	g.Close()
	if _, err := g.Enter(); err != isolation.ErrClosed {
		t.Errorf("Enter after Close: %v, want ErrClosed", err)
	}
	if g.Kill() {
		t.Error("Kill after Close reported something to kill")
	}
}

// A command that leaves between Wait's count and its wait still wakes it:
// the wakeup is kept.
func TestGateWakeupKept(t *testing.T) {
	var g Gate
	leave, _ := g.Enter()
	leave()
	leave2, _ := g.Enter()
	done := make(chan struct{})
	go func() {
		g.Wait(context.Background(), time.Minute)
		close(done)
	}()
	leave2()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Wait missed the last command's leaving")
	}
}

func TestGateWaitEnds(t *testing.T) {
	var g Gate
	if _, err := g.Enter(); err != nil {
		t.Fatal(err)
	}
	g.Wait(context.Background(), 10*time.Millisecond) // grace passes
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.Wait(ctx, time.Minute) // ctx ended
}
