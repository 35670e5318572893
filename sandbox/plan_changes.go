package sandbox

import (
	"fmt"
	"path/filepath"

	"github.com/sandboxed-dev/sandboxed/internal/pathglob"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/changeset"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/policy"
)

// ApproveWrites applies a reviewed run's change without asking
// (--approve writes with --review).
const ApproveWrites = "writes"

// ChangesInput is how a run's write grants are recorded (PlanInput).
type ChangesInput struct {
	// StateDir holds the records (ChangesDir); "" records nothing.
	StateDir string
	// Review has the tool write into working copies (run --review).
	Review bool
	Bounds policy.UndoBounds
}

// ChangesDir is where the change records of runs are kept.
func ChangesDir(stateDir string) string { return filepath.Join(stateDir, "changes") }

// planChanges is the plan's record of its write grants: each write grant
// that no other write grant holds, with its working copy in a review; nil
// when the run records nothing (no write grant, records off, a run on a
// cluster, whose grants are not this host's directories).
func planChanges(in PlanInput, mounts []*permissions.Mount) *isolation.Changes {
	c := in.Changes
	if c.StateDir == "" || (!c.Bounds.Record && !c.Review) || kubernetesRun(in) {
		return nil
	}
	store := changeset.Store{Dir: ChangesDir(c.StateDir)}
	ch := &isolation.Changes{Review: c.Review, Store: store.Dir,
		MaxFiles: c.Bounds.MaxFiles, MaxBytes: c.Bounds.MaxBytes, Rule: c.Bounds.Rule}
	for _, m := range mounts {
		if !m.Write || m.Resolved == "" || underWriteGrant(m, mounts) {
			continue
		}
		g := isolation.ChangesGrant{Host: m.Resolved, Target: m.Target}
		if c.Review {
			g.Work = store.WorkDir(in.RunID, len(ch.Grants))
		}
		ch.Grants = append(ch.Grants, g)
	}
	if len(ch.Grants) == 0 {
		return nil
	}
	return ch
}

// underWriteGrant reports whether another write grant holds m's directory.
func underWriteGrant(m *permissions.Mount, mounts []*permissions.Mount) bool {
	for _, o := range mounts {
		if o != m && o.Write && o.Resolved != "" && o.Resolved != m.Resolved && pathglob.Within(m.Resolved, o.Resolved) {
			return true
		}
	}
	return false
}

// mountSource is the bind source of m: its working copy in a review.
func mountSource(m *permissions.Mount, ch *isolation.Changes) string {
	if ch != nil {
		for _, g := range ch.Grants {
			if g.Work != "" && g.Host == m.Resolved && g.Target == m.Target {
				return g.Work
			}
		}
	}
	return m.Resolved
}

// reviewRefusal says why a run asked for with --review cannot be
// reviewed; "" when it can (or was not asked to be).
func reviewRefusal(req *Request, d policy.Decision, in PlanInput) string {
	switch {
	case !req.Review:
		return ""
	case req.StateDir == "":
		return "--review needs a state directory for the working copies"
	case d.Backend == isolation.BackendKubernetes || req.Cluster.Backend == isolation.BackendKubernetes:
		return "--review works in this host's tiers: a pod's grants are not this host's directories"
	case d.Isolation == isolation.TierNone, d.Isolation == isolation.TierLandlock:
		return fmt.Sprintf("--review cannot hold back the writes of a run in the %s tier: it mounts nothing, so a working copy cannot stand where the grant is and the tool writes to the host's paths directly", d.Isolation)
	}
	return ""
}
