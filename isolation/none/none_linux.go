package none

import (
	"context"
	"fmt"
	"os"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
)

// Backend is the none tier.
type Backend struct {
	// Exe is the binary executed as the init; empty means the init this
	// build carries (package initbin), else /proc/self/exe. It must call
	// sbinit.Main early.
	Exe string
}

// New returns the none-tier backend.
func New() *Backend { return &Backend{} }

var _ isolation.Backend = (*Backend)(nil)

// Tier reports isolation.TierNone.
func (b *Backend) Tier() isolation.Tier { return isolation.TierNone }

// Check refuses a plan whose limits the host cannot enforce.
func (b *Backend) Check(ctx context.Context, p *isolation.Plan) error {
	if p == nil || p.Spec == nil {
		return fmt.Errorf("check plan: no spec: %w", ErrBadPlan)
	}
	if p.Tier != isolation.TierNone {
		return fmt.Errorf("check plan: tier %q: %w", p.Tier, ErrBadPlan)
	}
	if p.RunID == "" {
		return fmt.Errorf("check plan: no run id: %w", ErrBadPlan)
	}
	if p.Observe {
		return isolation.ObserveUnsupported(p.Tier)
	}
	c, err := ConvertSpec(p.Spec)
	if err != nil {
		return fmt.Errorf("check plan: %w", err)
	}
	if c.RunID != p.RunID {
		return fmt.Errorf("check plan: the spec is of run %q, the plan of %q: %w", c.RunID, p.RunID, ErrBadPlan)
	}
	// The tool runs as whoever runs sandboxed: a spec that names
	// another identity would not be honoured.
	if c.UID != uint32(os.Getuid()) || c.GID != uint32(os.Getgid()) {
		return &isolation.UnsupportedError{
			What: fmt.Sprintf("uid %d, gid %d in the none tier, which runs the tool as you (uid %d, gid %d)", c.UID, c.GID, os.Getuid(), os.Getgid()),
			Fix:  "run the tool same-as-user, or in the process tier",
		}
	}
	// Limits go to the run's cgroup where this host has one it may use,
	// else to rlimits (process.StartUnconfined), which refuses a CPU
	// limit without a cgroup.
	return nil
}

// Start starts the run's init on the host.
func (b *Backend) Start(ctx context.Context, p *isolation.Plan) (isolation.Sandbox, error) {
	if err := b.Check(ctx, p); err != nil {
		return nil, err
	}
	return process.StartUnconfined(ctx, p, b.Exe)
}

// GC removes cgroups of runs that are not live (shared with the process
// tier: both name them sandboxed/<run-id>).
func (b *Backend) GC(ctx context.Context, keep func(runID string) bool) ([]string, error) {
	return process.New().GC(ctx, keep)
}
