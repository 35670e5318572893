package process

import (
	"context"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
)

// SetGCMinAge lets tests collect cgroups they have just made.
func SetGCMinAge(d time.Duration) (restore func()) {
	old := gcMinAge
	gcMinAge = d
	return func() { gcMinAge = old }
}

// StartEdited starts p as Backend.Start does, with the init's
// configuration changed by edit first. Only tests can make the mounts and
// the Landlock rules disagree this way (a deliberately writable bind that
// the rules hold read-only); no plan can.
func StartEdited(ctx context.Context, p *isolation.Plan, edit func(*sbinit.Config)) (isolation.Sandbox, error) {
	b := New()
	cfg, m, err := b.check(ctx, p)
	if err != nil {
		return nil, err
	}
	edit(cfg)
	return start(ctx, b.spawner(), p, b.Exe, b.features(ctx).cgroups, cfg, m, nil)
}

// ReservedStart is reservedStart, for tests that check the mapping.
var ReservedStart = reservedStart
