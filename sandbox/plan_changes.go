package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"

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
// when the run records nothing (no write grant, records off). A run on
// Kubernetes is recorded too: its write grants are this host's
// directories, copied into the pod and back (in the sandbox's Close,
// which a recorded run does before its result, Controller.closeLast), so
// the scans before the copy in and after the copy back see the change. A
// review cannot hold a pod's writes back (reviewRefusal refuses it).
func planChanges(in PlanInput, mounts []*permissions.Mount) *isolation.Changes {
	c := in.Changes
	if c.StateDir == "" || (!c.Bounds.Record && !c.Review) || (c.Review && kubernetesRun(in)) {
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
		if ff, ok := in.Facts.Files[m.Resolved]; ok && !ff.Dir && !ff.IsLink {
			g.Host, g.Target, g.File = filepath.Dir(m.Resolved), filepath.Dir(m.Target), filepath.Base(m.Resolved)
		}
		if c.Review {
			g.Work = store.WorkDir(in.RunID, len(ch.Grants))
		} else if in.Facts != nil {
			g.Skip = ownDirsUnder(g.Host, in.Facts.OwnDirs)
		}
		ch.Grants = append(ch.Grants, g)
	}
	if len(ch.Grants) == 0 {
		return nil
	}
	return ch
}

// ownDirsUnder are sandboxed's own directories (OwnDirs) inside the
// directory host, relative to it, each as given and with its symlinks
// resolved. The policy hides them from the tool, but sandboxed writes
// there during the run (records, sockets, the run's own pre-images), so
// a recorded grant that holds one leaves it out: an undo would otherwise
// remove the pre-images it restores from, and other runs' records and
// sockets.
func ownDirsUnder(host string, own []string) []string {
	var out []string
	for _, d := range own {
		abs, err := filepath.Abs(d)
		if err != nil {
			continue
		}
		for _, p := range []string{abs, resolveExistingPrefix(abs)} {
			rel, err := filepath.Rel(host, p)
			if err != nil || rel == "." || outside(rel) || !pathglob.Within(p, host) {
				continue
			}
			if rel = filepath.ToSlash(rel); !slices.Contains(out, rel) {
				out = append(out, rel)
			}
		}
	}
	return out
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
	return reviewSource(m.Resolved, ch)
}

// reviewSource is where host path p is in a review's working copies: a
// write grant nested in a reviewed one, and the mask binds and anchors
// under it, are bound from the working copy too, or the tool would
// write to the host through them. p itself outside a review.
func reviewSource(p string, ch *isolation.Changes) string {
	if ch == nil || !ch.Review {
		return p
	}
	for _, g := range ch.Grants {
		if g.Work == "" || !pathglob.Within(p, filepath.Join(g.Host, g.File)) {
			continue
		}
		rel, err := filepath.Rel(g.Host, p)
		if err != nil || outside(rel) {
			continue
		}
		return filepath.Join(g.Work, rel)
	}
	return p
}

// protectGrants lists in each grant of a review the policy's masks under
// it (ChangesGrant.Protected): their matches are masked in the sandbox,
// but a path that did not exist when the run was planned is not, and
// what the tool made there must not reach the host on apply.
func protectGrants(ch *isolation.Changes, d *policy.Decision) {
	if ch == nil || !ch.Review || d == nil {
		return
	}
	ch.SecretExcept = append([]string(nil), d.SecretExcept...)
	for i := range ch.Grants {
		g := &ch.Grants[i]
		for _, mk := range d.Masks {
			rel, err := filepath.Rel(g.Target, mk.Path)
			if err != nil || outside(rel) || !pathglob.Within(mk.Under, g.Target) {
				continue
			}
			g.Protected = append(g.Protected, isolation.ProtectedPattern{Pattern: rel, Rule: mk.Rule, Secret: mk.Secret})
		}
	}
}

// grantProtection is what the policy protects under a reviewed grant,
// its patterns compiled once for every change of the run.
type grantProtection struct {
	g            isolation.ChangesGrant
	secretExcept []string
	compiled     []maskPattern // of g.Protected
}

func newGrantProtection(g isolation.ChangesGrant, secretExcept []string) *grantProtection {
	p := &grantProtection{g: g, secretExcept: secretExcept}
	for _, pp := range g.Protected {
		p.compiled = append(p.compiled, compileMask(pp.Pattern))
	}
	return p
}

// protectedBy is the rule of the first pattern of g that protects the
// change at rel (relative to g.Host: it, or a directory above it, is a
// match); "" when none does.
func (p *grantProtection) protectedBy(rel string) string {
	g, secretExcept := p.g, p.secretExcept
	for i, pp := range g.Protected {
		mp := p.compiled[i]
		for a := rel; a != "." && a != "/" && a != ""; a = filepath.Dir(a) {
			host := filepath.Join(g.Host, a)
			if !mp.match(a, host) {
				continue
			}
			if pp.Secret && secretExcepted(secretExcept, host) {
				continue
			}
			return pp.Rule
		}
		// A rule that applies anywhere may name the grant itself (a grant
		// of a repository's .git/hooks).
		if mp.anywhere && mp.match(".", g.Host) && !(pp.Secret && secretExcepted(secretExcept, g.Host)) {
			return pp.Rule
		}
	}
	return ""
}

// secretExcepted is policy.Decision.SecretExcepted over the plan's copy
// of the patterns.
func secretExcepted(patterns []string, p string) bool {
	d := policy.Decision{SecretExcept: patterns}
	return d.SecretExcepted(p)
}

// hasWriteGrant reports whether grants hold a write grant of a path.
func hasWriteGrant(grants []permissions.Grant) bool {
	for _, m := range mountGrants(grants) {
		if m.Write {
			return true
		}
	}
	return false
}

// reviewRefusal says why a run asked for with --review cannot be
// reviewed; "" when it can (or was not asked to be).
func reviewRefusal(req *Request, d policy.Decision, in PlanInput) string {
	switch {
	case !req.Review || !hasWriteGrant(in.Grants):
		return "" // nothing to hold back
	case req.StateDir == "":
		return "--review needs a state directory for the working copies"
	case d.Backend == isolation.BackendKubernetes || req.Cluster.Backend == isolation.BackendKubernetes:
		return "--review works in this host's tiers: a pod's grants are not this host's directories"
	case d.Isolation == isolation.TierNone, d.Isolation == isolation.TierLandlock:
		return fmt.Sprintf("--review cannot hold back the writes of a run in the %s tier: it mounts nothing, so a working copy cannot stand where the grant is and the tool writes to the host's paths directly", d.Isolation)
	}
	return ""
}
