package reown

import (
	"errors"
	"fmt"
)

// Handed are write grants handed from their owner to the uid a sandbox
// runs as, for one run: HandOver makes it, Back undoes it. It is the one
// hand-over of every tier that needs one (the container tier as root, the
// landlock tier as root, the process tier without root).
type Handed struct {
	from, to Owner
	do       Func
	folders  []Folder
	// held are the run's holds on the grants, by path: runs sharing a
	// grant hand it back when the last of them ends.
	held map[string]*Shared
}

// Func gives the entries of each path owned by from to to: Reown in this
// process (nil), or a helper that runs it where the ids are mapped.
type Func func(paths []string, from, to Owner) error

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

// HandOver gives paths (write grants) from from to to for a run, by do
// (nil: Reown here), after holding each in the folder of holds holds (""
// for none) and saving each grant folder's mode and ACLs. What was handed
// over before an error is handed back.
func HandOver(paths []string, from, to Owner, holds string, do Func) (*Handed, error) {
	return handOver(paths, from, to, holds, do, Hold)
}

// HandOverAlone is HandOver for a run that must hold its grants alone
// (HoldAlone): its tool's uid is its own, not one every run shares. It
// waits while another run holds one of paths.
func HandOverAlone(paths []string, from, to Owner, holds string) (*Handed, error) {
	return handOver(paths, from, to, holds, nil, HoldAlone)
}

func handOver(paths []string, from, to Owner, holds string, do Func, hold func(dir, path string) (*Shared, error)) (*Handed, error) {
	if do == nil {
		do = reownHere
	}
	h := &Handed{from: from, to: to, do: do, held: map[string]*Shared{}}
	for _, p := range paths {
		if holds != "" {
			s, err := hold(holds, p)
			if err != nil {
				return nil, errors.Join(err, h.Back())
			}
			h.held[p] = s
		}
		f, err := SaveFolder(p)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("hand write grant %s to uid %d: %w", p, to.UID, err), h.Back())
		}
		h.folders = append(h.folders, f)
	}
	if err := do(h.paths(h.folders), from, to); err != nil {
		return nil, errors.Join(fmt.Errorf("hand write grants to uid %d: %w", to.UID, err), h.Back())
	}
	return h, nil
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
// gone; a nil Handed has nothing to give back, and Back is done once.
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
	if err := h.do(h.paths(last), h.to, h.from); err != nil {
		return fmt.Errorf("hand write grants back from uid %d: %w", h.to.UID, err)
	}
	var errs []error
	for _, f := range last {
		errs = append(errs, f.Restore())
	}
	return errors.Join(errs...)
}
