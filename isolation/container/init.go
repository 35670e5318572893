package container

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// startTimeout bounds how long Start waits for the init to dial in.
const startTimeout = 30 * time.Second

// alivePoll is how often Start checks, while waiting for the init, that
// the container still runs (so a dead init fails fast, not at the timeout).
const alivePoll = 250 * time.Millisecond

// connectInit accepts the init's connection on ln and hands the init its
// configuration.
func connectInit(ctx context.Context, ln *net.UnixListener, p *isolation.Plan, alive func(context.Context) error) (initConn, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	conn, err := accept(ctx, ln, alive)
	if err != nil {
		return nil, err
	}
	cl, err := handshake(ctx, conn, p)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return cl, nil
}

// awaitFunc waits for the init of a warm container to dial ln; its
// handshake waits for the run that claims it.
type awaitFunc func(ctx context.Context, ln *net.UnixListener, alive func(context.Context) error) (pendingInit, error)

// pendingInit is an init that dialled in and waits for its configuration.
type pendingInit interface {
	// handshake hands it p's configuration (see handshake).
	handshake(ctx context.Context, p *isolation.Plan) (initConn, error)
	// Close closes the channel: the init exits, and its container stops.
	Close() error
}

// awaitInit accepts the init's connection on ln.
func awaitInit(ctx context.Context, ln *net.UnixListener, alive func(context.Context) error) (pendingInit, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	conn, err := accept(ctx, ln, alive)
	if err != nil {
		return nil, err
	}
	return pendingConn{conn}, nil
}

type pendingConn struct{ c *net.UnixConn }

func (pc pendingConn) handshake(ctx context.Context, p *isolation.Plan) (initConn, error) {
	return handshake(ctx, pc.c, p)
}

func (pc pendingConn) Close() error { return pc.c.Close() }

// accept waits for one connection on ln, until ctx ends or alive reports
// the container gone.
func accept(ctx context.Context, ln *net.UnixListener, alive func(context.Context) error) (*net.UnixConn, error) {
	type result struct {
		c   *net.UnixConn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := ln.AcceptUnix()
		ch <- result{c, err}
	}()
	tick := time.NewTicker(alivePoll)
	defer tick.Stop()
	fail := func(err error) (*net.UnixConn, error) {
		// Unblock the accept; the caller's Close closes ln again harmlessly.
		_ = ln.SetDeadline(time.Now())
		if r := <-ch; r.c != nil {
			r.c.Close()
		}
		return nil, err
	}
	for {
		select {
		case r := <-ch:
			if r.err != nil {
				return nil, fmt.Errorf("accept the init's connection: %w", r.err)
			}
			return r.c, nil
		case <-tick.C:
			if alive == nil {
				continue
			}
			if err := alive(ctx); err != nil {
				return fail(err)
			}
		case <-ctx.Done():
			err := ctx.Err()
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("the init did not connect in time: %w", err)
			}
			return fail(err)
		}
	}
}
