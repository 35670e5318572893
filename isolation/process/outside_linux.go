package process

import (
	"context"
	"fmt"
	"sync"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
)

// Outside is the init of a sandbox with no namespaces (the landlock
// tier's) started ahead of its run, for a resident controller's warm
// pool: it waits for its config, in the run's cgroup without limits when
// it has one. It holds nothing of any run, and runs nothing before its
// Claim.
type Outside struct{ held }

// held is a launched init that no run has claimed yet.
type held struct {
	mu sync.Mutex
	l  *launched // nil once claimed or discarded
}

// PrestartOutside starts the init of run runID with no namespaces, as
// StartOutside does, without its config (the landlock tier's: it has the
// init start its first command's confining start meanwhile): exe is the init binary ("" for
// the one this build carries), host the cgroup hierarchy that will hold
// the run (nil: none). The backend's spawner starts it, where it has one.
// On error nothing is left behind.
func (b *Backend) PrestartOutside(ctx context.Context, runID, exe string, host *cgroup.Host) (*Outside, error) {
	if _, err := cgroupRunID(runID); err != nil {
		return nil, err
	}
	l, err := launch(ctx, b.spawner(), runID, exe, host, cgroup.Resources{}, false, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	// The init starts its first command's confining start while it
	// waits (sbinit's spare); a config it does not fit ends it.
	if err := l.cl.SendSpare(); err != nil {
		l.destroy(ctx)
		return nil, fmt.Errorf("prestart sandbox %s: %w", runID, err)
	}
	return &Outside{held{l: l}}, nil
}

// take hands the launched init to one caller.
func (h *held) take() *launched {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.l
	h.l = nil
	return l
}

// Claim sends the init cfg, sets the limits of p on its cgroup while the
// init reads it, and waits until it is ready: the sandbox StartOutside
// would have started. p.RunID must be the run id the init was born with.
// The Outside is consumed whatever the outcome; on error the init is
// destroyed.
func (o *Outside) Claim(ctx context.Context, p *isolation.Plan, cfg *sbinit.Config) (isolation.Sandbox, error) {
	l := o.take()
	if l == nil {
		return nil, fmt.Errorf("claim sandbox: already claimed or discarded: %w", isolation.ErrClosed)
	}
	fail := func(err error) (isolation.Sandbox, error) {
		l.destroy(ctx)
		return nil, fmt.Errorf("claim sandbox %s: %w", l.runID, err)
	}
	if p == nil || p.Spec == nil || cfg == nil || cfg.BuildRoot || p.RunID != l.runID {
		return fail(fmt.Errorf("no plan, spec or config, a config that builds a root, or the plan of another run: %w", ErrBadPlan))
	}
	if err := checkSpecPids(p); err != nil {
		return fail(err)
	}
	l.cl.KillGrace = p.Limits.KillGrace
	if err := l.cl.SendConfig(cfg); err != nil {
		return fail(l.initFailed(err))
	}
	// Written while the init reads its config: it runs nothing of the
	// run before it is ready, and nothing of the run runs before Claim
	// has returned.
	if l.cg != nil {
		if err := l.cg.Update(resources(p)); err != nil {
			return fail(err)
		}
	}
	return l.ready(ctx, p)
}

// Discard kills an init no run claimed and removes its cgroup. It is
// idempotent.
func (o *Outside) Discard(ctx context.Context) {
	if l := o.take(); l != nil {
		l.destroy(ctx)
	}
}
