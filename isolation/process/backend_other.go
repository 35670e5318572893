//go:build !linux

package process

import (
	"context"
	"io"

	host "github.com/sandboxed-dev/sandboxed/internal/hostsetup"
	"github.com/sandboxed-dev/sandboxed/isolation"
)

// Backend is the process tier; it needs Linux.
type Backend struct {
	Exe     string
	Spawner bool
	Log     io.Writer
}

// Features is what this host offers the process tier.
type Features struct {
	Missing []error `json:"-"`
}

// Probe reports that the process tier needs Linux.
func Probe(ctx context.Context) Features {
	return Features{Missing: []error{unsupported()}}
}

func unsupported() error {
	return &isolation.UnsupportedError{What: "the process tier", Fix: "run on Linux"}
}

// New returns the process-tier backend.
func New() *Backend { return &Backend{} }

// Tier reports isolation.TierProcess.
func (b *Backend) Tier() isolation.Tier { return isolation.TierProcess }

// Check refuses every plan off Linux.
func (b *Backend) Check(ctx context.Context, p *isolation.Plan) error { return unsupported() }

// Start refuses every plan off Linux.
func (b *Backend) Start(ctx context.Context, p *isolation.Plan) (isolation.Sandbox, error) {
	return nil, unsupported()
}

// GC has nothing to do off Linux.
func (b *Backend) GC(ctx context.Context, keep func(string) bool) ([]string, error) { return nil, nil }

// Checks renders f for `sandboxed doctor`.
func (f Features) Checks() []host.Check {
	return []host.Check{{Tier: string(isolation.TierProcess), Name: "linux", Fix: "the process tier needs Linux"}}
}

// HostIdentity cannot say off Linux: there is no process tier.
func HostIdentity(p *isolation.Plan) (uid, gid uint32, ok bool) { return 0, 0, false }

// CgroupHolds is false off Linux: there are no cgroups.
func CgroupHolds(isolation.Limits) bool { return false }

// ReservedID is Linux's alone.
func ReservedID() (int, error) { return 0, unsupported() }

// HandBack is Linux's alone: there is no hand-over elsewhere.
func HandBack(ctx context.Context, g host.Grant) error { return g.Back(nil) }
