package landlock

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
)

var _ isolation.Prestarter = (*Backend)(nil)

// warmKey is what a landlock-tier sandbox fixes when its init starts: the
// init binary, the identity of this process (which the init keeps), and
// whether a cgroup holds the run's limits (the init is born in it).
// Everything else is the claim's: the tool's uid, the scratch directory,
// the confinement and the rlimits, all in the init's config.
type warmKey struct {
	Tier   isolation.Tier `json:"tier"`
	Exe    string         `json:"exe"`
	EUID   int            `json:"euid"`
	EGID   int            `json:"egid"`
	Cgroup bool           `json:"cgroup"`
}

// keyOf is the key of this process's sandboxes of the init exe, in a
// cgroup or not.
func keyOf(exe string, inCgroup bool) string {
	js, _ := json.Marshal(warmKey{Tier: isolation.TierLandlock, Exe: exe, EUID: os.Geteuid(), EGID: os.Getegid(), Cgroup: inCgroup})
	return string(js)
}

// WarmKey names the pool of a landlock-tier plan (see warmKey). An
// observed run has none: it is refused.
func (b *Backend) WarmKey(p *isolation.Plan) (string, bool) {
	if p == nil || p.Tier != isolation.TierLandlock || p.Spec == nil || p.Spec.Process == nil || p.Observe {
		return "", false
	}
	host, err := process.OutsideCgroup(p)
	if err != nil {
		return "", false
	}
	return keyOf(b.Exe, host != nil), true
}

// Prestart starts the init of a sandbox for plans of key, in its cgroup
// without limits where the key has one: an unconfined process of this
// one's identity that waits for its config, holding nothing of any run.
// The scratch directory, the tool's uid and the limits are the claim's.
func (b *Backend) Prestart(ctx context.Context, key, runID, hostDir string) (isolation.Warm, error) {
	var k warmKey
	if err := json.Unmarshal([]byte(key), &k); err != nil || keyOf(b.Exe, k.Cgroup) != key {
		return nil, fmt.Errorf("prestart: %q is not a landlock-tier key of this process: %w", key, ErrBadPlan)
	}
	var host *cgroup.Host
	if k.Cgroup {
		if host = process.WritableCgroups(); host == nil {
			return nil, fmt.Errorf("prestart sandbox %s: no cgroup hierarchy this process may write: %w", runID, ErrBadPlan)
		}
	}
	pb := b.Process
	if pb == nil {
		pb = process.New()
	}
	o, err := pb.PrestartOutside(ctx, runID, b.Exe, host)
	if err != nil {
		return nil, err
	}
	return &warm{b: b, key: key, runID: runID, inCgroup: k.Cgroup, o: o}, nil
}

// warm is a landlock-tier sandbox whose init waits for its config.
type warm struct {
	b        *Backend
	key      string
	runID    string
	inCgroup bool
	o        *process.Outside
}

func (w *warm) RunID() string { return w.runID }
func (w *warm) Key() string   { return w.key }

// Claim checks p as Start does, makes the run's scratch directory and
// sends the init its config. The warm sandbox is consumed whatever the
// outcome.
func (w *warm) Claim(ctx context.Context, p *isolation.Plan) (isolation.Sandbox, error) {
	sb, err := w.claim(ctx, p)
	if err != nil {
		w.o.Discard(ctx) // (nothing, once the init has had its config)
		return nil, fmt.Errorf("claim sandbox %s: %w", w.runID, err)
	}
	return sb, nil
}

func (w *warm) claim(ctx context.Context, p *isolation.Plan) (isolation.Sandbox, error) {
	if p == nil || p.RunID != w.runID {
		return nil, fmt.Errorf("the plan of another run: %w", ErrBadPlan)
	}
	if key, ok := w.b.WarmKey(p); !ok || key != w.key {
		return nil, fmt.Errorf("the plan's pool is not this sandbox's: %w", ErrBadPlan)
	}
	c, err := w.b.check(p)
	if err != nil {
		return nil, err
	}
	return startWith(p, c, w.inCgroup, func(cfg *sbinit.Config) (isolation.Sandbox, error) {
		return w.o.Claim(ctx, p, cfg)
	})
}

// Discard kills the init and removes its cgroup.
func (w *warm) Discard(ctx context.Context) error {
	w.o.Discard(ctx)
	return nil
}
