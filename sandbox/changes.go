package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/reown"
	"github.com/sandboxed-dev/sandboxed/internal/safetext"
	"github.com/sandboxed-dev/sandboxed/internal/units"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/changeset"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/policy"
)

// maxChangedPaths bounds the paths a result and an audit line list.
const maxChangedPaths = 200

// maxReviewRead bounds what of one file the review's diff reads.
const maxReviewRead = 1 << 20

// ChangesInfo is what a run changed under its write grants (Result.Changes).
type ChangesInfo struct {
	// Undo: `sandboxed undo RUN_ID` can put the grants back.
	Undo bool `json:"undo"`
	// Unavailable says why the run's writes were not recorded.
	Unavailable string `json:"unavailable,omitempty"`
	// Review: the tool wrote into working copies; Applied says whether
	// the change reached the grants.
	Review  bool `json:"review,omitempty"`
	Applied bool `json:"applied"`
	// PartlyApplied: applying the change failed midway; some of it
	// reached the grants, and Undo says `sandboxed undo RUN_ID` puts that
	// back.
	PartlyApplied bool `json:"partly_applied,omitempty"`
	// NotApplied says why a review's change was not applied (not
	// approved, declined, or nobody to ask).
	NotApplied string `json:"not_applied,omitempty"`
	Created    int    `json:"created"`
	Modified   int    `json:"modified"`
	Deleted    int    `json:"deleted"`
	// Paths are the changed paths on the host, deletions first, at most
	// maxChangedPaths; PathsTruncated says there were more.
	Paths          []ChangedPath `json:"paths"`
	PathsTruncated bool          `json:"paths_truncated,omitempty"`
	// Diff is a review's summary and diff, control characters escaped.
	Diff string `json:"diff,omitempty"`
	// RunID is the run's (Result.RunID), for a prompt to name.
	RunID string `json:"-"`
	// Refused are the changes of a review left out because the policy
	// protects their paths (paths.deny, paths.deny-write, secrets.mask):
	// they are never applied, approved or not.
	Refused []RefusedPath `json:"refused,omitempty"`
}

// RefusedPath is a change a review leaves out, with the rule protecting it.
type RefusedPath struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	Rule string `json:"rule"`
}

// ChangedPath is one changed path.
type ChangedPath struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	Kind string `json:"kind"`
}

// runChanges is a run's record in progress (Job.changes).
type runChanges struct {
	plan   *isolation.Changes
	store  changeset.Store
	runID  string
	tool   string
	before []changeset.Tree
}

// beginChanges scans the plan's write grants before the sandbox starts:
// with pre-images kept (undo), or into working copies (review). A grant
// that cannot be recorded turns undo off for the run with a note; a
// review that cannot make its working copies fails the run.
func beginChanges(p *isolation.Plan, tool string) (*runChanges, string, *runFailure) {
	ch := p.Changes
	rc := &runChanges{plan: ch, store: changeset.Store{Dir: ch.Store}, runID: p.RunID, tool: tool}
	if err := rc.store.Begin(p.RunID); err != nil {
		if ch.Review {
			return nil, "", &runFailure{CodeInitFailed, "review: " + err.Error(), ""}
		}
		return nil, unavailable(err, ch), nil
	}
	for _, g := range ch.Grants {
		var t changeset.Tree
		var err error
		lim := grantLimits(ch, g)
		if ch.Review {
			if err = os.MkdirAll(rc.store.RunDir(p.RunID)+"/work", 0o700); err == nil {
				t, err = changeset.Copy(g.Host, g.Work, lim)
			}
		} else {
			t, err = changeset.Scan(g.Host, lim, nil, changeset.Keeper(rc.store.BlobDir(p.RunID)))
		}
		if err != nil {
			_ = rc.store.Remove(p.RunID)
			if ch.Review {
				return nil, "", &runFailure{CodeInitFailed, "review: make a working copy of " + g.Host + ": " + err.Error(),
					"raise undo.max-files or undo.max-size in the policy (" + ch.Rule + "), or run without --review"}
			}
			return nil, unavailable(err, ch), nil
		}
		rc.before = append(rc.before, t)
	}
	return rc, "", nil
}

// grantLimits bound the scan of g: the policy's undo bounds, narrowed to
// its one file for a grant of a file, less sandboxed's own directories.
func grantLimits(ch *isolation.Changes, g isolation.ChangesGrant) changeset.Limits {
	return changeset.Limits{MaxFiles: ch.MaxFiles, MaxBytes: ch.MaxBytes, Name: g.File, Skip: g.Skip}
}

// unavailable is the note of a run whose writes cannot be undone.
func unavailable(err error, ch *isolation.Changes) string {
	msg := "undo is unavailable for this run: " + err.Error()
	if errors.Is(err, changeset.ErrTooLarge) {
		msg += "; the bounds are " + ch.Rule
	}
	return msg
}

// finish reads the grants (or working copies) again, stores the record,
// and in a review asks whether to apply the change (review.go). It fills
// res.Changes.
func (rc *runChanges) finish(res *Result, approved bool, ask func(*ChangesInfo) (bool, error)) {
	info := &ChangesInfo{Review: rc.plan.Review, Paths: []ChangedPath{}, RunID: rc.runID}
	res.Changes = info
	rec := &changeset.Record{RunID: rc.runID, Tool: rc.tool, CreatedAt: time.Now().UTC(), Review: rc.plan.Review}
	for i, g := range rc.plan.Grants {
		lim := grantLimits(rc.plan, g)
		root := g.Host
		if rc.plan.Review {
			root = g.Work
		}
		after, err := changeset.Scan(root, lim, rc.before[i], nil)
		if err != nil {
			rc.fail(res, info, err)
			return
		}
		rec.Grants = append(rec.Grants, changeset.Grant{Root: g.Host, Target: g.Target, Changes: changeset.Diff(rc.before[i], after)})
	}
	if rc.plan.Review {
		info.Refused = leaveOutProtected(rec, rc.plan)
		for _, r := range info.Refused {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the tool %s %q, which the policy protects (%s): left out of the change, it is never applied", r.Op, r.Path, r.Rule))
		}
	}
	fillPaths(info, rec)
	if info.Created+info.Modified+info.Deleted == 0 {
		_ = rc.store.Remove(rc.runID) // nothing to undo or to apply
		return
	}
	if rc.plan.Review {
		rc.review(res, info, rec, approved, ask)
		return
	}
	if err := rc.save(rec); err != nil {
		rc.fail(res, info, err)
		return
	}
	info.Undo, info.Applied = true, true
}

func (rc *runChanges) save(rec *changeset.Record) error {
	if err := rc.store.Save(rec); err != nil {
		return err
	}
	return rc.store.Prune(rec)
}

// fail notes that the run's change could not be recorded or applied.
func (rc *runChanges) fail(res *Result, info *ChangesInfo, err error) {
	info.Undo = false
	info.Unavailable = err.Error()
	if rc.plan.Review {
		res.Warnings = append(res.Warnings, "the reviewed change was not applied: "+err.Error())
	} else {
		res.Warnings = append(res.Warnings, "undo is unavailable for this run: "+err.Error())
	}
	_ = rc.store.Remove(rc.runID)
}

// leaveOutProtected removes from rec the changes to paths the policy
// protects under each grant (isolation.ChangesGrant.Protected) and lists
// them: in the sandbox those paths are masked, but one the tool created
// where none existed could not be, and applying it would hand the host a
// git hook, a config or a secret the run was never allowed to write.
func leaveOutProtected(rec *changeset.Record, ch *isolation.Changes) []RefusedPath {
	var out []RefusedPath
	for i := range rec.Grants {
		g := &rec.Grants[i]
		prot := newGrantProtection(ch.Grants[i], ch.SecretExcept)
		kept := g.Changes[:0]
		for _, c := range g.Changes {
			if rule := prot.protectedBy(c.Path); rule != "" {
				out = append(out, RefusedPath{Op: string(c.Op), Path: g.Root + "/" + c.Path, Rule: rule})
				continue
			}
			kept = append(kept, c)
		}
		g.Changes = kept
	}
	return out
}

// fillPaths counts rec's changes into info and lists them, deletions first.
func fillPaths(info *ChangesInfo, rec *changeset.Record) {
	n := rec.Counts()
	info.Created, info.Modified, info.Deleted = n.Created, n.Modified, n.Deleted
	for _, g := range rec.Grants {
		for _, c := range changeset.ReviewOrder(g.Changes) {
			e := c.After
			if e == nil {
				e = c.Before
			}
			info.Paths = append(info.Paths, ChangedPath{Op: string(c.Op), Path: g.Root + "/" + c.Path, Kind: string(e.Kind)})
		}
	}
	slices.SortStableFunc(info.Paths, func(a, b ChangedPath) int { return opRank(a.Op) - opRank(b.Op) })
	if len(info.Paths) > maxChangedPaths {
		info.Paths, info.PathsTruncated = info.Paths[:maxChangedPaths], true
	}
}

func opRank(op string) int {
	return map[string]int{string(changeset.OpDeleted): 0, string(changeset.OpModified): 1, string(changeset.OpCreated): 2}[op]
}

// review shows the change and applies it when approved: by "writes",
// or by ask. Unapplied, nothing reaches the grants.
func (rc *runChanges) review(res *Result, info *ChangesInfo, rec *changeset.Record, approved bool, ask func(*ChangesInfo) (bool, error)) {
	var buf bytes.Buffer
	changeset.Render(&buf, rec, func(gi int, c changeset.Change, after bool) ([]byte, error) {
		if after {
			return changeset.ReadFile(rc.plan.Grants[gi].Work, c.Path, maxReviewRead)
		}
		return changeset.ReadFile(rc.plan.Grants[gi].Host, c.Path, maxReviewRead)
	})
	if len(info.Refused) > 0 {
		fmt.Fprintf(&buf, "Left out, never applied (the policy protects them):\n")
		for _, r := range info.Refused {
			fmt.Fprintf(&buf, "  %-9s %s (%s)\n", r.Op, safetext.Line(r.Path), safetext.Line(r.Rule))
		}
	}
	info.Diff = buf.String()
	info.NotApplied = "not approved: approve it with --approve writes, or answer the prompt"
	if !approved && ask != nil {
		ok, err := ask(info)
		if err != nil {
			res.Warnings = append(res.Warnings, "ask to apply the change: "+err.Error())
			info.NotApplied = err.Error()
		} else if !ok {
			info.NotApplied = "declined"
		}
		approved = ok && err == nil
	}
	if !approved {
		res.Notes = append(res.Notes, "the change was not applied: nothing reached the host ("+info.NotApplied+")")
		_ = rc.store.Remove(rc.runID)
		return
	}
	info.NotApplied = ""
	rc.apply(res, info, rec)
}

// apply writes an approved change to the grants as a transaction that
// undo can always reverse: every grant is checked and the pre-images of
// all it overwrites or removes are kept first (a conflict or a damaged
// working copy then applies nothing); the record is written, marked
// applying, before the first change reaches a grant; then the grants are
// changed, and the record marked applied. A failure (or a kill) midway
// leaves the record applying: sandboxed undo puts back what was applied.
// The record's lock is held throughout, so no undo runs beside it.
func (rc *runChanges) apply(res *Result, info *ChangesInfo, rec *changeset.Record) {
	notApplied := func(err error) {
		info.Unavailable = err.Error()
		res.Warnings = append(res.Warnings, "the reviewed change was not applied, nothing reached the host: "+err.Error())
		_ = rc.store.Remove(rc.runID)
	}
	unlock, err := rc.store.Lock(rc.runID)
	if err != nil {
		notApplied(err)
		return
	}
	defer unlock()
	var pend []*changeset.Pending
	defer func() {
		for _, p := range pend {
			p.Close()
		}
	}()
	keep := changeset.Keeper(rc.store.BlobDir(rc.runID))
	for i, g := range rec.Grants {
		p, err := changeset.PrepareApply(g.Root, rc.plan.Grants[i].Work, g.Changes, keep)
		if err != nil {
			notApplied(fmt.Errorf("apply to %s: %w", g.Root, err))
			return
		}
		pend = append(pend, p)
	}
	if err := changeset.Sync(rc.store.BlobDir(rc.runID)); err != nil {
		notApplied(err)
		return
	}
	rec.Applying = true
	if err := rc.store.Save(rec); err != nil {
		notApplied(err)
		return
	}
	for i, p := range pend {
		skipped, err := p.Do()
		for _, s := range skipped {
			res.Warnings = append(res.Warnings, "not applied: "+s)
		}
		if err != nil {
			// The record, applying, stays with its pre-images: undo
			// accepts each path applied or not.
			root := rec.Grants[i].Root
			info.Unavailable = fmt.Sprintf("apply to %s: %v", root, err)
			info.PartlyApplied, info.Undo = true, true
			_ = rc.store.Prune(rec)
			res.Warnings = append(res.Warnings, fmt.Sprintf("the reviewed change was partly applied: applying it to %s failed midway: %v; sandboxed undo %s puts back what was applied", root, err, rc.runID))
			return
		}
	}
	rec.Applying, rec.Applied = false, true
	if err := rc.save(rec); err != nil {
		// Still marked applying: undo works, and checks every path.
		res.Warnings = append(res.Warnings, "the change was applied, but its record could not say so: "+err.Error()+"; sandboxed undo "+rc.runID+" still puts it back")
	}
	info.Applied, info.Undo = true, true
	res.Notes = append(res.Notes, "the reviewed change was applied; sandboxed undo "+rc.runID+" puts it back")
}

// UndoReport is what `sandboxed undo` put back.
type UndoReport struct {
	RunID string `json:"run_id"`
	Tool  string `json:"tool"`
	// Resumed: the undo finished one stopped midway, or the apply of a
	// review stopped midway; paths already as before the run were left.
	Resumed bool          `json:"resumed,omitempty"`
	Grants  []UndoneGrant `json:"grants"`
}

// UndoneGrant is one grant put back.
type UndoneGrant struct {
	Root string `json:"root"`
	// Restored counts the run's changes undone: what it created removed,
	// what it modified or deleted written back.
	Restored int `json:"restored"`
	// Skipped are paths not put back (device files, sockets, FIFOs).
	Skipped []string `json:"skipped,omitempty"`
}

// ErrAlreadyUndone is a run whose change was undone before.
var ErrAlreadyUndone = errors.New("already undone")

// ErrUndoStopped is an undo that failed after it changed a grant: the
// record says so, and the next undo of the run finishes it.
var ErrUndoStopped = errors.New("the undo stopped midway")

// UndoRun puts the write grants of runID back as they were before the
// run, from its change record under stateDir. It holds the record's lock
// throughout (a second undo, or the apply of the run's review, is
// ErrBusy). Every grant is checked, and every pre-image read and matched
// to its hash, before any is changed: a path changed since the run
// refuses the whole undo, with the list (a *changeset.ConflictError).
// The record is marked undoing before the first change: an undo stopped
// midway (an error, a kill) is finished by the next, which accepts the
// paths already put back; so is the apply of a review stopped midway
// (the record applying), whose paths may hold the change or not.
//
// It also takes each grant alone the way runs that hand a grant over to
// their tool hold it (reown.HoldAlone in runtimeDir): it waits for such
// runs of the grant to end, calling waiting (when set) with the grant
// if they have not within a moment, and they wait for it.
func UndoRun(stateDir, runtimeDir, runID string, waiting func(grant string)) (*UndoReport, error) {
	store := changeset.Store{Dir: ChangesDir(stateDir)}
	if _, err := store.Load(runID); err != nil {
		return nil, err
	}
	unlock, err := store.Lock(runID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rec, err := store.Load(runID) // again, under the lock
	if err != nil {
		return nil, err
	}
	if rec.UndoneAt == nil && runtimeDir != "" {
		release, err := holdGrants(runtimeDir, rec, waiting)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	switch {
	case rec.UndoneAt != nil:
		return nil, fmt.Errorf("run %s: %w at %s", runID, ErrAlreadyUndone, rec.UndoneAt.Local().Format(time.DateTime))
	case rec.Review && !rec.Applied && !rec.Applying:
		return nil, fmt.Errorf("run %s: its reviewed change was never applied: nothing to undo: %w", runID, changeset.ErrNotFound)
	}
	resume := rec.Applying || rec.Undoing
	var pend []*changeset.Pending
	defer func() {
		for _, p := range pend {
			p.Close()
		}
	}()
	for _, g := range rec.Grants {
		p, err := changeset.PrepareUndo(g.Root, g.Changes, store.BlobDir(runID), resume)
		if err != nil {
			return nil, err
		}
		pend = append(pend, p)
	}
	if !rec.Undoing {
		rec.Undoing = true
		if err := store.Save(rec); err != nil {
			return nil, fmt.Errorf("nothing was put back: %w", err)
		}
	}
	rep := &UndoReport{RunID: runID, Tool: rec.Tool, Resumed: resume}
	for i, p := range pend {
		g := rec.Grants[i]
		skipped, err := p.Do()
		if err != nil {
			return rep, fmt.Errorf("%w: %w (run sandboxed undo %s again to finish it)", ErrUndoStopped, err, runID)
		}
		rep.Grants = append(rep.Grants, UndoneGrant{Root: g.Root, Restored: len(g.Changes), Skipped: skipped})
	}
	// What was put back is on disk before the record says so.
	for _, g := range rec.Grants {
		if err := changeset.Sync(g.Root); err != nil && !errors.Is(err, os.ErrNotExist) {
			return rep, fmt.Errorf("%w: %w (run sandboxed undo %s again to finish it)", ErrUndoStopped, err, runID)
		}
	}
	now := time.Now().UTC()
	rec.UndoneAt, rec.Undoing = &now, false
	if err := store.Save(rec); err != nil {
		return rep, fmt.Errorf("the grants were put back, but the record could not say so: %w", err)
	}
	_ = store.Prune(rec) // a review's working copies, left by an apply stopped midway
	return rep, nil
}

// holdGrants takes each grant of rec that still exists alone, as the
// runs that hand it over to their tool hold it (reown.HoldAlone), and
// returns what releases them. waiting is told of a grant not had within
// grantWaitNotice.
func holdGrants(runtimeDir string, rec *changeset.Record, waiting func(string)) (release func(), err error) {
	var held []*reown.Shared
	release = func() {
		for _, h := range held {
			h.Release()
		}
	}
	for _, g := range rec.Grants {
		if _, err := os.Lstat(g.Root); errors.Is(err, os.ErrNotExist) {
			continue // the undo says so when it looks
		}
		done := make(chan struct{})
		go func() {
			select {
			case <-done:
			case <-time.After(grantWaitNotice):
				if waiting != nil {
					waiting(g.Root)
				}
			}
		}()
		// A grant a killed run left handed to its tool is handed back
		// first, as gc would: the undo then writes into the user's
		// grant, and the hold's record is not lost with it.
		back := func(g reown.Grant) error { return process.HandBack(context.Background(), g) }
		h, err := reown.HoldAlone(filepath.Join(runtimeDir, reown.HoldsDir), g.Root, back)
		close(done)
		if err != nil {
			release()
			return nil, err
		}
		held = append(held, h)
	}
	return release, nil
}

// grantWaitNotice is how long an undo waits for a grant's runs before it
// says it is waiting.
const grantWaitNotice = 500 * time.Millisecond

// ReapChanges removes the change records gc may: those older than
// b.Keep, then the oldest while all of them hold more than b.MaxTotal,
// and those of runs that died before their record was written (no
// record.json, untouched for a day). A record still being made (no
// record.json yet, touched within a day or held live: a run in progress,
// or one waiting for its review's answer) is left alone. held reports
// whether a controller holds a run live (Controller.Live); nil is none.
func ReapChanges(stateDir string, b policy.UndoBounds, now time.Time, held func(runID string) bool) ([]string, error) {
	if stateDir == "" {
		return nil, nil
	}
	store := changeset.Store{Dir: ChangesDir(stateDir)}
	stored, err := store.List()
	if err != nil {
		return nil, err
	}
	byID := map[string]changeset.Stored{}
	for _, s := range stored {
		byID[s.RunID] = s
	}
	recorded := func(id string) bool {
		_, err := os.Stat(filepath.Join(store.RunDir(id), "record.json"))
		return err == nil
	}
	live := func(id string) bool {
		return !recorded(id) && (now.Sub(byID[id].Modified) < 24*time.Hour || held != nil && held(id))
	}
	// A run that died before its record was written (killed, out of
	// memory, the host down) left pre-images or working copies that no
	// undo can use: they go now, not after undo.keep.
	var reap []changeset.Stored
	for _, s := range stored {
		if !recorded(s.RunID) && !live(s.RunID) {
			reap = append(reap, s)
		}
	}
	for _, s := range changeset.ToReap(stored, now, b.Keep, b.MaxTotal, live) {
		if !slices.ContainsFunc(reap, func(r changeset.Stored) bool { return r.RunID == s.RunID }) {
			reap = append(reap, s)
		}
	}
	var removed []string
	var errs []error
	for _, s := range reap {
		if store.Busy(s.RunID) {
			continue // an undo or an apply is using it
		}
		if err := store.Remove(s.RunID); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, fmt.Sprintf("change record of run %s (%s)", s.RunID, units.FormatSize(s.Bytes)))
	}
	return removed, errors.Join(errs...)
}

// ChangeRecord is one run's change record as `sandboxed undo --list`
// shows it.
type ChangeRecord struct {
	RunID     string    `json:"run_id"`
	Tool      string    `json:"tool"`
	CreatedAt time.Time `json:"created_at"`
	// State is what undo would do with it: "recorded" (undo puts the
	// grants back), "undone", "review not applied" (nothing to undo),
	// "apply stopped midway" or "undo stopped midway" (undo finishes it).
	State  string           `json:"state"`
	Counts changeset.Counts `json:"counts"`
	Grants []string         `json:"grants"`
}

// ListChanges lists the change records kept in stateDir, oldest first; a
// record that cannot be read is listed with its error as its state.
func ListChanges(stateDir string) ([]ChangeRecord, error) {
	store := changeset.Store{Dir: ChangesDir(stateDir)}
	stored, err := store.List()
	if err != nil {
		return nil, err
	}
	var out []ChangeRecord
	for _, s := range stored {
		rec, err := store.Load(s.RunID)
		if err != nil {
			out = append(out, ChangeRecord{RunID: s.RunID, State: "unreadable: " + err.Error()})
			continue
		}
		cr := ChangeRecord{RunID: rec.RunID, Tool: rec.Tool, CreatedAt: rec.CreatedAt, State: recordState(rec), Counts: rec.Counts()}
		for _, g := range rec.Grants {
			cr.Grants = append(cr.Grants, g.Root)
		}
		out = append(out, cr)
	}
	return out, nil
}

// recordState is rec's ChangeRecord.State.
func recordState(rec *changeset.Record) string {
	switch {
	case rec.UndoneAt != nil:
		return "undone"
	case rec.Undoing:
		return "undo stopped midway"
	case rec.Applying:
		return "apply stopped midway"
	case rec.Review && !rec.Applied:
		return "review not applied"
	}
	return "recorded"
}
