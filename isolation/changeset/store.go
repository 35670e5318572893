package changeset

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Record is what a run changed under its write grants, as the store keeps
// it (record.json): enough to show the change and to undo it.
type Record struct {
	RunID     string    `json:"run_id"`
	Tool      string    `json:"tool"`
	CreatedAt time.Time `json:"created_at"`
	// Review is a run whose tool wrote into working copies; Applied says
	// whether its change reached the grants (only then can it be undone).
	Review  bool `json:"review,omitempty"`
	Applied bool `json:"applied,omitempty"`
	// Applying is a review whose apply began (the record, with the
	// pre-images of all it overwrites or removes, was written before the
	// first change reached a grant) and did not end: it failed or was
	// killed midway, so each path holds the change or not. It can be
	// undone: the undo accepts both (PrepareUndo's resume).
	Applying bool `json:"applying,omitempty"`
	// Undoing is an undo that began and did not end; undo again finishes
	// it, accepting the paths it already put back.
	Undoing bool `json:"undoing,omitempty"`
	// UndoneAt is when `sandboxed undo` put the grants back.
	UndoneAt *time.Time `json:"undone_at,omitempty"`
	Grants   []Grant    `json:"grants"`
}

// Grant is one write grant's changes.
type Grant struct {
	Root    string   `json:"root"`   // the host directory
	Target  string   `json:"target"` // where the sandbox saw it
	Changes []Change `json:"changes"`
}

// Counts are the record's changes counted over its grants.
func (r *Record) Counts() Counts {
	var n Counts
	for _, g := range r.Grants {
		c := Count(g.Changes)
		n.Created += c.Created
		n.Modified += c.Modified
		n.Deleted += c.Deleted
	}
	return n
}

// Store keeps change records and their pre-images under Dir
// (STATE/changes): one directory per run, mode 0700, files 0600, outside
// every grant (sandboxed's state directory is denied to all of them).
type Store struct{ Dir string }

// ValidRunID reports whether id can name a run's directory: one path
// element of letters, digits, '-', '_' and '.', not starting with '.'.
func ValidRunID(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '.' {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// RunDir is the directory of runID's record.
func (s Store) RunDir(runID string) string { return filepath.Join(s.Dir, runID) }

// BlobDir is where runID's pre-images are kept, each named by its sha256.
func (s Store) BlobDir(runID string) string { return filepath.Join(s.RunDir(runID), "blobs") }

// WorkDir is the working copy of runID's grant i (run --review).
func (s Store) WorkDir(runID string, i int) string {
	return filepath.Join(s.RunDir(runID), "work", fmt.Sprint(i))
}

// Begin makes runID's directory and its blob directory.
func (s Store) Begin(runID string) error {
	if !ValidRunID(runID) {
		return fmt.Errorf("run id %q: %w", runID, ErrNotFound)
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("create change store %s: %w", s.Dir, err)
	}
	if err := os.MkdirAll(s.BlobDir(runID), 0o700); err != nil {
		return fmt.Errorf("create change record %s: %w", s.RunDir(runID), err)
	}
	return nil
}

// Save writes r as runID's record (record.json, 0600, renamed into place).
func (s Store) Save(r *Record) error {
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode change record: %w", err)
	}
	dir := s.RunDir(r.RunID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create change record %s: %w", dir, err)
	}
	tmp := filepath.Join(dir, ".record.json.tmp")
	sync := r.Applying || r.Undoing
	if err := writeRecord(tmp, append(js, '\n'), sync); err != nil {
		return fmt.Errorf("write change record: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "record.json")); err != nil {
		return fmt.Errorf("store change record: %w", err)
	}
	if sync {
		// The rename is on disk too: a record marked applying is there
		// before the first change reaches a grant.
		if err := syncDir(dir); err != nil {
			return fmt.Errorf("store change record: %w", err)
		}
	}
	return nil
}

// syncDir flushes dir's entries (fsync of the directory).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// Lock takes runID's record for an undo or an apply: an exclusive
// flock(2) on its lock file, which ends with the process (a killed undo
// leaves no lock behind). Held by another process, it is ErrBusy at
// once. The caller calls the returned unlock.
func (s Store) Lock(runID string) (unlock func(), err error) {
	if !ValidRunID(runID) {
		return nil, fmt.Errorf("run id %q: %w", runID, ErrNotFound)
	}
	f, err := os.OpenFile(filepath.Join(s.RunDir(runID), lockName), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("run %s: %w in %s", runID, ErrNotFound, s.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("lock the change record of %s: %w", runID, err)
	}
	if err := flock(f, true); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("run %s: its change record is %w (wait for it to end, then run sandboxed undo %s again)", runID, ErrBusy, runID)
		}
		return nil, fmt.Errorf("lock the change record of %s: %w", runID, err)
	}
	return func() { f.Close() }, nil
}

// Busy reports whether a process holds runID's record (Lock).
func (s Store) Busy(runID string) bool {
	f, err := os.OpenFile(filepath.Join(s.RunDir(runID), lockName), os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	return errors.Is(flock(f, true), syscall.EWOULDBLOCK)
}

// lockName is the lock file of a run's record (Lock).
const lockName = "lock"

// flock takes an exclusive lock on f, without waiting when nb.
func flock(f *os.File, nb bool) error {
	how := syscall.LOCK_EX
	if nb {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// writeRecord writes data to the new file name (0600), synced to disk
// when sync: a record saying a change is under way must be there before
// the change is.
func writeRecord(name string, data []byte, sync bool) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// Load reads runID's record.
func (s Store) Load(runID string) (*Record, error) {
	if !ValidRunID(runID) {
		return nil, fmt.Errorf("run id %q: want an id as `sandboxed audit` shows it: %w", runID, ErrNotFound)
	}
	data, err := os.ReadFile(filepath.Join(s.RunDir(runID), "record.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("run %s: %w in %s", runID, ErrNotFound, s.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("read change record of %s: %w", runID, err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("read change record of %s: %w", runID, err)
	}
	return &r, nil
}

// Prune removes what runID no longer needs: its working copies, and the
// pre-images no change of r refers to.
func (s Store) Prune(r *Record) error {
	var errs []error
	if err := os.RemoveAll(filepath.Join(s.RunDir(r.RunID), "work")); err != nil {
		errs = append(errs, err)
	}
	need := map[string]bool{}
	for _, g := range r.Grants {
		for _, c := range g.Changes {
			if c.Before != nil && c.Before.Kind == KindFile {
				need[c.Before.SHA256] = true
			}
		}
	}
	ents, err := os.ReadDir(s.BlobDir(r.RunID))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, e := range ents {
		if !need[e.Name()] {
			errs = append(errs, os.Remove(filepath.Join(s.BlobDir(r.RunID), e.Name())))
		}
	}
	return errors.Join(errs...)
}

// Remove removes runID's record and pre-images.
func (s Store) Remove(runID string) error {
	if !ValidRunID(runID) {
		return fmt.Errorf("run id %q: %w", runID, ErrNotFound)
	}
	return os.RemoveAll(s.RunDir(runID))
}

// Stored is one run's record directory as Reap sees it.
type Stored struct {
	RunID string
	// Modified is when sandboxed last wrote there (its working copies,
	// whose times the tool sets, do not count).
	Modified time.Time
	Bytes    int64
}

// List lists the stored records, oldest first.
func (s Store) List() ([]Stored, error) {
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Stored
	for _, e := range ents {
		if !e.IsDir() || !ValidRunID(e.Name()) {
			continue
		}
		st := Stored{RunID: e.Name()}
		_ = filepath.WalkDir(s.RunDir(e.Name()), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if fi, err := d.Info(); err == nil {
				if d.Type().IsRegular() {
					st.Bytes += fi.Size()
				}
				// The working copies' times are the tool's to set (a
				// year 2100 would keep the record from gc for ever):
				// only what sandboxed wrote dates a record.
				if rel, _ := filepath.Rel(s.RunDir(e.Name()), p); rel == "work" || strings.HasPrefix(rel, "work/") {
					return nil
				}
				if fi.ModTime().After(st.Modified) {
					st.Modified = fi.ModTime()
				}
			}
			return nil
		})
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b Stored) int { return strings.Compare(a.RunID, b.RunID) })
	return out, nil
}

// ToReap picks what to remove of stored (oldest first): every record
// older than keep, then the oldest until the rest hold at most maxBytes;
// live are runs still going, never picked. Zero keep or maxBytes is no
// bound. It is pure.
func ToReap(stored []Stored, now time.Time, keep time.Duration, maxBytes int64, live func(string) bool) []Stored {
	var out, kept []Stored
	var total int64
	for _, st := range stored {
		switch {
		case live != nil && live(st.RunID):
		case keep > 0 && now.Sub(st.Modified) > keep:
			out = append(out, st)
			continue
		}
		kept = append(kept, st)
		total += st.Bytes
	}
	for _, st := range kept {
		if maxBytes <= 0 || total <= maxBytes {
			break
		}
		if live != nil && live(st.RunID) {
			continue
		}
		out = append(out, st)
		total -= st.Bytes
	}
	return out
}

// validHash reports whether h is a sha256 in hex, the name of a blob.
func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, r := range h {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}
