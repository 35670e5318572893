//go:build !linux

package none

import (
	"context"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// Backend is the none tier; this build supports it on Linux only.
type Backend struct{ Exe string }

// New returns the none-tier backend.
func New() *Backend { return &Backend{} }

func unsupported() error {
	return &isolation.UnsupportedError{What: "the none tier on this OS", Fix: "run on Linux"}
}

// Tier reports isolation.TierNone.
func (b *Backend) Tier() isolation.Tier { return isolation.TierNone }

// Check refuses every plan off Linux.
func (b *Backend) Check(ctx context.Context, p *isolation.Plan) error { return unsupported() }

// Start refuses every plan off Linux.
func (b *Backend) Start(ctx context.Context, p *isolation.Plan) (isolation.Sandbox, error) {
	return nil, unsupported()
}

// GC has nothing to do off Linux.
func (b *Backend) GC(ctx context.Context, keep func(string) bool) ([]string, error) { return nil, nil }
