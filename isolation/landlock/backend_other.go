//go:build !linux

package landlock

import (
	"context"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
)

// Backend is the landlock tier; this build supports it on Linux only.
type Backend struct {
	Exe string
	ABI func() int
	// Process starts the inits of warm sandboxes on Linux.
	Process *process.Backend
}

// New returns the landlock-tier backend.
func New() *Backend { return &Backend{} }

func unsupported() error {
	return &isolation.UnsupportedError{What: "the landlock tier on this OS", Fix: "run on Linux"}
}

// Tier reports isolation.TierLandlock.
func (b *Backend) Tier() isolation.Tier { return isolation.TierLandlock }

// Check refuses every plan off Linux.
func (b *Backend) Check(ctx context.Context, p *isolation.Plan) error { return unsupported() }

// Start refuses every plan off Linux.
func (b *Backend) Start(ctx context.Context, p *isolation.Plan) (isolation.Sandbox, error) {
	return nil, unsupported()
}

// GC has nothing to do off Linux.
func (b *Backend) GC(ctx context.Context, keep func(string) bool) ([]string, error) { return nil, nil }
