package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
)

var _ isolation.Prestarter = (*Backend)(nil)

// WarmKey names what a process-tier sandbox fixes when its init starts:
// the tier, the init binary, the user namespace (the privilege and the
// ids it maps, from the invoking user's ids), and what its skeleton holds
// of the plan (see sbinit.Skeleton): the masked and read-only paths below
// /proc, the capabilities' bounding set, the host name and the size of
// /tmp. The namespaces, the cgroup and
// the network namespace (with or without an egress relay, which the init
// starts from its config) are the same for every plan.
func (b *Backend) WarmKey(p *isolation.Plan) (string, bool) {
	if p == nil || p.Tier != isolation.TierProcess || p.Spec == nil || p.Spec.Process == nil {
		return "", false
	}
	if p.Observe {
		// The watch filter is loaded by the init as it starts: an
		// observed run starts cold.
		return "", false
	}
	ids, err := probeHostIDs()
	if err != nil {
		return "", false
	}
	u := p.Spec.Process.User
	m, err := planIDMapping(ids, p.Privilege, u.UID, u.GID)
	if err != nil {
		return "", false
	}
	k := warmKeyOf(b.Exe, ids, p.Privilege, u.UID, u.GID, m)
	if l := p.Spec.Linux; l != nil {
		k.Masked, k.Readonly = sbinit.ProcPaths(l.MaskedPaths), sbinit.ProcPaths(l.ReadonlyPaths)
	}
	if c := p.Spec.Process.Capabilities; c != nil {
		if k.Bounding, err = sbinit.CapMask(c.Bounding); err != nil {
			return "", false
		}
	}
	if k.TmpfsBytes, err = specconv.TmpfsBytes(p.Spec); err != nil {
		return "", false
	}
	k.Hostname = p.Spec.Hostname
	return k.String(), true
}

// warmKey is what a process-tier key holds, encoded as JSON.
type warmKey struct {
	Tier      isolation.Tier      `json:"tier"`
	Exe       string              `json:"exe"`
	EUID      int                 `json:"euid"`
	EGID      int                 `json:"egid"`
	Privilege privilege.Privilege `json:"privilege"`
	UID       uint32              `json:"uid"`
	GID       uint32              `json:"gid"`
	// Userns is the user namespace the init starts in ("" for none).
	Userns string `json:"userns"`
	// Masked and Readonly are the spec's masked and read-only paths
	// below /proc: the skeleton's (sbinit.ProcPaths).
	Masked   []string `json:"masked,omitempty"`
	Readonly []string `json:"readonly,omitempty"`
	// Bounding is the bounding set of the spec's capabilities, which the
	// skeleton cuts.
	Bounding uint64 `json:"bounding,omitempty"`
	// Hostname (the spec's) and TmpfsBytes (the limit's) are written into
	// the skeleton's /etc and its /tmp.
	Hostname   string `json:"hostname,omitempty"`
	TmpfsBytes int64  `json:"tmpfs_bytes,omitempty"`
}

func (k warmKey) String() string {
	js, _ := json.Marshal(k)
	return string(js)
}

// warmKeyOf is the key of a sandbox started with mapping m, without what
// its skeleton holds of the spec. Everything the init's start depends on
// is in it, and nothing of a run.
func warmKeyOf(exe string, ids hostIDs, priv privilege.Privilege, uid, gid uint32, m *idMapping) warmKey {
	k := warmKey{Tier: isolation.TierProcess, Exe: exe, EUID: ids.euid, EGID: ids.egid, Privilege: priv, UID: uid, GID: gid}
	if m != nil {
		k.Userns = fmt.Sprintf("%v/%v helper=%t become=%v keep=%t idmap=%t drop=%t",
			m.uids, m.gids, m.helper, m.become, m.keepGroups, m.idmapGrants, m.dropGroups)
	}
	return k
}

// Prestart starts the init of a sandbox for plans of key, in its cgroup
// (no limit yet: nothing of a run runs before the claim sets them) and
// its namespaces, with the user namespace's maps written, and has it build
// the skeleton of its root (sbinit.Skeleton); the init waits for its
// config.
func (b *Backend) Prestart(ctx context.Context, key, runID, hostDir string) (isolation.Warm, error) {
	f := b.features(ctx)
	if f.cgroups == nil {
		return nil, &isolation.UnsupportedError{What: "cgroups", Fix: "mount cgroup v2 at /sys/fs/cgroup"}
	}
	k, m, err := b.mappingOf(key)
	if err != nil {
		return nil, err
	}
	if _, err := cgroupRunID(runID); err != nil {
		return nil, err
	}
	l, err := launch(ctx, b.spawner(), runID, b.Exe, f.cgroups, cgroup.Resources{}, true, m, nil, nil)
	if err != nil {
		return nil, err
	}
	if m != nil && m.helper {
		if err := writeIDMaps(l.proc.pid, m); err != nil {
			l.destroy(ctx)
			return nil, fmt.Errorf("prestart sandbox %s: %w", runID, err)
		}
	}
	// What initConfig and check ask of every root (no RootBase, lo up).
	sk := &sbinit.Skeleton{MaskedPaths: k.Masked, ReadonlyPaths: k.Readonly, NetworkUp: true, Bounding: k.Bounding,
		UID: k.UID, GID: k.GID, Hostname: k.Hostname, TmpfsBytes: k.TmpfsBytes}
	if m != nil && m.become != nil {
		sk.BuildAs = &sbinit.ID{UID: m.become[0], GID: m.become[1]}
	}
	if err := l.cl.Prepare(ctx, sk); err != nil {
		err = l.initFailed(err)
		l.destroy(ctx)
		return nil, fmt.Errorf("prestart sandbox %s: %w", runID, err)
	}
	return &warm{b: b, key: key, runID: runID, hostDir: hostDir, m: m, held: held{l: l}}, nil
}

// mappingOf is key decoded, with its user namespace computed again for
// this host now: a key that this host would not make today is refused.
func (b *Backend) mappingOf(key string) (warmKey, *idMapping, error) {
	bad := fmt.Errorf("prestart: %q is not a process-tier key of this host: %w", key, ErrBadPlan)
	var k warmKey
	if err := json.Unmarshal([]byte(key), &k); err != nil || k.Tier != isolation.TierProcess {
		return k, nil, bad
	}
	ids, err := probeHostIDs()
	if err != nil {
		return k, nil, err
	}
	m, err := planIDMapping(ids, k.Privilege, k.UID, k.GID)
	if err != nil {
		return k, nil, err
	}
	again := warmKeyOf(b.Exe, ids, k.Privilege, k.UID, k.GID, m)
	again.Masked, again.Readonly, again.Bounding = k.Masked, k.Readonly, k.Bounding
	again.Hostname, again.TmpfsBytes = k.Hostname, k.TmpfsBytes
	if again.String() != key {
		return k, nil, bad
	}
	return k, m, nil
}

// warm is a process-tier sandbox whose init waits for its config.
type warm struct {
	b       *Backend
	key     string
	runID   string
	hostDir string
	m       *idMapping
	held
}

func (w *warm) RunID() string { return w.runID }
func (w *warm) Key() string   { return w.key }

// Claim sends the init the run's config (with its grants prepared here
// where the init builds its root as another identity, idmapped where the
// namespace needs it), sets the run's limits on the cgroup while the init
// builds the rest of the root, and waits until it is ready.
func (w *warm) Claim(ctx context.Context, p *isolation.Plan) (isolation.Sandbox, error) {
	l := w.take()
	if l == nil {
		return nil, fmt.Errorf("claim sandbox %s: already claimed or discarded: %w", w.runID, isolation.ErrClosed)
	}
	fail := func(err error) (isolation.Sandbox, error) {
		l.destroy(ctx)
		return nil, fmt.Errorf("claim sandbox %s: %w", w.runID, err)
	}
	if p.RunID != w.runID || p.HostDir != w.hostDir {
		return fail(fmt.Errorf("plan of run %s (host dir %s): %w", p.RunID, p.HostDir, ErrBadPlan))
	}
	if key, ok := w.b.WarmKey(p); !ok || key != w.key {
		return fail(fmt.Errorf("the plan's pool is not this sandbox's: %w", ErrBadPlan))
	}
	cfg, m, err := w.b.check(ctx, p)
	if err != nil {
		return fail(err)
	}
	l.cl.KillGrace = p.Limits.KillGrace
	g, handed, err := w.b.grants(ctx, p, m)
	if err != nil {
		return fail(err)
	}
	sb, err := w.finishClaim(ctx, l, p, m, g, cfg, fail)
	return withHanded(sb, err, handed)
}

// finishClaim is Claim once the grants are decided: the config sent, the
// limits set, the init ready.
func (w *warm) finishClaim(ctx context.Context, l *launched, p *isolation.Plan, m *idMapping, g *grantAccess, cfg *sbinit.Config, fail func(error) (isolation.Sandbox, error)) (isolation.Sandbox, error) {
	if err := l.configure(ctx, m, g, nil, cfg); err != nil {
		return fail(err)
	}
	// The limits are written while the init finishes its root: it runs
	// nothing of the run before it is ready, and nothing of the run runs
	// before Claim has returned.
	if l.cg != nil {
		if err := l.cg.Update(resources(p)); err != nil {
			return fail(err)
		}
	}
	return l.ready(ctx, p)
}

// Discard kills the init and removes its cgroup.
func (w *warm) Discard(ctx context.Context) error {
	l := w.take()
	if l == nil {
		return nil
	}
	l.destroy(ctx)
	if l.cg != nil {
		if pids, err := l.cg.Procs(); err == nil && len(pids) > 0 {
			return fmt.Errorf("discard sandbox %s: processes left in cgroup %s", w.runID, l.cg.Path())
		}
	}
	if err := unmountLeftovers(w.hostDir); err != nil {
		return fmt.Errorf("discard sandbox %s: %w", w.runID, err)
	}
	if _, err := os.Stat(w.hostDir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("discard sandbox %s: %w", w.runID, err)
	}
	return nil
}
