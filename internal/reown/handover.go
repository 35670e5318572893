package reown

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Handed are write grants handed from their owner to the uid a sandbox
// runs as, for one run: HandOver makes it, Back undoes it. It is the one
// hand-over of every tier that needs one (the container tier as root, the
// landlock tier as root, the process tier without root).
type Handed struct {
	from, to Owner
	via      Via
	folders  []Folder
	// held are the run's holds on the grants, by path: runs sharing a
	// grant hand it back when the last of them ends.
	held map[string]*Shared
}

// Func gives the entries of each path owned by from to to: Reown in this
// process (nil), or a helper that runs it where the ids are mapped.
type Func func(paths []string, from, to Owner) error

// Via is how a hand-over runs: Do (nil: Reown in this process), in the
// user namespace of UIDs and GIDs when they are set (a helper's, where
// the ids it is given are mapped). Each hold records the maps, so that gc
// hands a grant back the same way after a crash.
type Via struct {
	Do         Func
	UIDs, GIDs []specs.LinuxIDMapping
	// Origins name, for a path handed over that goes with the run (a
	// bind of the grant staged in the run's directory), the grant's own
	// path, where gc hands it back once the run's is gone.
	Origins map[string]string
}

// reownHere is Func in this process.
func reownHere(paths []string, from, to Owner) error {
	var errs []error
	for _, p := range paths {
		if _, err := Reown(p, from, to); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// HandOver gives paths (write grants) from from to to for a run, by via,
// after holding each in the folder of holds holds ("" for none). The first
// of the runs holding a grant together saves its folder's mode and ACLs
// and records them, with the owners, in the hold before the hand-over;
// the others keep what it saved. A grant a killed run left handed over
// (its hold recorded, but held by no run) is handed back first. What was
// handed over before an error is handed back.
func HandOver(paths []string, from, to Owner, holds string, via Via) (*Handed, error) {
	return handOver(paths, from, to, holds, via, false)
}

// HandOverAlone is HandOver for a run that must hold its grants alone
// (HoldAlone): its tool's uid is its own, not one every run shares. It
// waits while another run holds one of paths.
func HandOverAlone(paths []string, from, to Owner, holds string) (*Handed, error) {
	return handOver(paths, from, to, holds, Via{}, true)
}

func handOver(paths []string, from, to Owner, holds string, via Via, alone bool) (*Handed, error) {
	if via.Do == nil {
		via.Do = reownHere
	}
	h := &Handed{from: from, to: to, via: via, held: map[string]*Shared{}}
	// One order for every run, so that two runs of the same grants never
	// wait for each other's holds.
	paths = slices.Clone(paths)
	sort.Strings(paths)
	for _, p := range paths {
		f, err := h.hold(p, holds, alone)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("hand write grant %s to uid %d: %w", p, to.UID, err), h.Back())
		}
		h.folders = append(h.folders, f)
	}
	err := via.Do(h.paths(h.folders), from, to)
	for _, s := range h.held {
		s.endSetup()
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("hand write grants to uid %d: %w", to.UID, err), h.Back())
	}
	return h, nil
}

// hold holds the grant p in holds (none when ""), and says what its folder
// was before the first of the runs holding it was handed it. A hold that
// records a hand-over no run holds is handed back first; a new hand-over
// is recorded before it is done.
func (h *Handed) hold(p, holds string, alone bool) (Folder, error) {
	if holds == "" {
		return SaveFolder(p)
	}
	s, err := holdSetup(holds, p, alone)
	if err != nil {
		return Folder{}, err
	}
	h.held[p] = s
	g, err := s.record()
	if err != nil {
		s.keep = true
		return Folder{}, fmt.Errorf("%w (remove it if no run holds the grant, after handing the grant back)", err)
	}
	if g != nil && !s.alone() {
		// Runs hold it: they share one hand-over.
		if g.From != h.from || g.To != h.to || !slices.Equal(g.UIDs, h.via.UIDs) || !slices.Equal(g.GIDs, h.via.GIDs) {
			return Folder{}, fmt.Errorf("another run holds it, handed from uid %d to uid %d", g.From.UID, g.To.UID)
		}
		return g.Folder, nil
	}
	if g != nil {
		// Left by a killed run: hand it back the way it was handed over.
		if !slices.Equal(g.UIDs, h.via.UIDs) || !slices.Equal(g.GIDs, h.via.GIDs) {
			return Folder{}, fmt.Errorf("a run killed before it ended left it handed to uid %d in another user namespace: run sandboxed gc as the user who ran it", g.To.UID)
		}
		if err := g.Back(h.via.Do); err != nil && !errors.Is(err, ErrGrantGone) {
			s.keep = true // for gc, or the next run
			return Folder{}, fmt.Errorf("hand back what a killed run left: %w", err)
		}
		if err := s.setRecord(nil); err != nil {
			return Folder{}, err
		}
	}
	f, err := SaveFolder(p)
	if err != nil {
		return Folder{}, err
	}
	rec := &Grant{Path: p, Origin: h.via.Origins[p], Folder: f, From: h.from, To: h.to, UIDs: h.via.UIDs, GIDs: h.via.GIDs}
	return f, s.setRecord(rec)
}

// paths are the folders' paths.
func (h *Handed) paths(fs []Folder) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Path)
	}
	return out
}

// Back gives what the sandbox's uid holds in the grants (what it was
// given and what it made) back to their owner and restores each grant
// folder's mode and ACLs — of the grants no other run holds still: the
// last of them hands it back. It runs once the sandbox's processes are
// gone; a nil Handed has nothing to give back, and Back is done once. A
// hold whose grant could not be handed back keeps its record for gc.
func (h *Handed) Back() error {
	if h == nil || h.held == nil {
		return nil
	}
	defer func() {
		for _, s := range h.held {
			s.Release()
		}
		h.held = nil
	}()
	var last []Folder
	for _, f := range h.folders {
		if s := h.held[f.Path]; s == nil || s.Last() {
			last = append(last, f)
		}
	}
	if len(last) == 0 {
		return nil
	}
	if err := h.via.Do(h.paths(last), h.to, h.from); err != nil {
		for _, f := range last {
			if s := h.held[f.Path]; s != nil {
				s.keep = true
			}
		}
		return fmt.Errorf("hand write grants back from uid %d: %w", h.to.UID, err)
	}
	var errs []error
	for _, f := range last {
		errs = append(errs, f.Restore())
		if s := h.held[f.Path]; s != nil {
			errs = append(errs, s.setRecord(nil))
		}
	}
	return errors.Join(errs...)
}
