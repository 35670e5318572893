package reown

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Shared is one run's hold on a write grant it was handed: runs that use
// the same grant at once (an agent's parallel calls) hold it together,
// and only the last to end hands it back, so that no run's tool loses
// its grant while it runs. Holds are flock(2) locks on a file named by
// the grant's device and inode in a directory of the caller's (the
// runtime directory), so they hold across processes of the same user.
//
// The file records the hand-over (a Grant, written before it), so that
// once no run holds it — every run that held it was killed — gc, or the
// next run to hold the grant, hands the grant back. A second lock on the
// file's first byte (an open file description lock, which flock does not
// see) lets one run at a time set up a hold: read the record, hand the
// grant over and write it; gc takes it too, so it never judges a hold
// that a run is setting up.
type Shared struct {
	f         *os.File
	dir, name string
	// excl: the flock is exclusive (taken alone, or by Last).
	excl bool
	// shared: the run shares the grant (Hold); a hold set up while alone
	// becomes shared when its setup ends.
	shared bool
	// setup: this run holds the setup lock.
	setup bool
	// keep: Release leaves the file, whose record gc still needs (the
	// hand-back failed).
	keep bool
}

// Hold takes a shared hold on the grant at path, making dir and the lock
// file as needed. It waits while another run hands the grant back. The
// caller calls Release, after handing back when Last says so. The last
// run removes the lock file (and dir, when empty): a hold taken on a file
// removed meanwhile is taken again on the new one.
func Hold(dir, path string) (*Shared, error) {
	s, err := holdSetup(dir, path, false)
	if err == nil {
		s.endSetup()
	}
	return s, err
}

// HoldAlone takes the only hold on the grant at path: it waits while any
// other run holds it, and keeps every other run waiting until Release. It
// is for what must not share a grant with a run (an undo writing into it).
// A grant a killed run left handed over (the hold records it, no run holds
// it) is handed back first by back (nil: Grant.Back here), so the caller
// finds it its user's; when that fails the hold, and its record for gc,
// stay and HoldAlone fails.
func HoldAlone(dir, path string, back func(Grant) error) (*Shared, error) {
	s, err := holdSetup(dir, path, true)
	if err != nil {
		return nil, err
	}
	if err := s.handBackLeft(back); err != nil {
		s.keep = true
		s.Release()
		return nil, fmt.Errorf("hold write grant %s: hand back what a run killed before it ended left (sandboxed gc tries again): %w", path, err)
	}
	s.endSetup()
	return s, nil
}

// handBackLeft hands back, by back, the grant the hold records, and
// empties the record; only for a hold taken alone, whose record is of
// runs that are gone.
func (s *Shared) handBackLeft(back func(Grant) error) error {
	g, err := s.record()
	if err != nil || g == nil {
		return err
	}
	if back == nil {
		back = func(g Grant) error { return g.Back(nil) }
	}
	if err := back(*g); err != nil && !errors.Is(err, ErrGrantGone) {
		return err
	}
	return s.setRecord(nil)
}

// holdSetup takes a hold on the grant at path (alone: the only one) and
// keeps its setup lock until endSetup. Alone or not, a run that finds no
// other holding the grant holds it exclusively until endSetup: what the
// file records is then of runs that are gone.
func holdSetup(dir, path string, alone bool) (*Shared, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, &ReownError{Path: path, Op: "stat", Err: err}
	}
	name := holdName(dir, &st)
	for try := 0; ; try++ {
		s, err := holdOnce(dir, name, alone)
		if s != nil || err != nil || try == 100 {
			if err != nil {
				return nil, fmt.Errorf("hold write grant %s: %w", path, err)
			}
			if s == nil {
				return nil, fmt.Errorf("hold write grant %s: its lock file %s keeps being replaced", path, name)
			}
			return s, nil
		}
	}
}

// holdOnce takes the setup lock and then a flock on the file name in dir
// (exclusive when alone or when no other run holds it, else shared); nil,
// nil when the file it locked is no longer name (removed by the last run
// meanwhile).
func holdOnce(dir, name string, alone bool) (*Shared, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := trustedDir(dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil // removed by the last run meanwhile
	} else if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // dir removed meanwhile
	}
	if err != nil {
		return nil, err
	}
	if err := trustedFile(f); err != nil {
		f.Close()
		return nil, err
	}
	if err := setupLock(f, true); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	s := &Shared{f: f, dir: dir, name: name, shared: !alone, setup: true, excl: true}
	if alone || unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		how := unix.LOCK_EX
		if !alone {
			how, s.excl = unix.LOCK_SH, false
		}
		if err := flock(f, how); err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
	}
	if !sameFile(f, name) {
		f.Close()
		return nil, nil
	}
	return s, nil
}

// trustedDir checks that dir, the folder of holds, and the folder holding
// it are the caller's and that no one else may write them: a hold's
// record is acted on (its grant's owner, mode and ACLs are set from it),
// and a runtime directory of a predictable name (/tmp/sandboxed-UID) may
// have been made first by another user.
func trustedDir(dir string) error {
	for _, d := range []string{dir, filepath.Dir(dir)} {
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
			return fmt.Errorf("%s is not a folder of uid %d that only it may write (owner %d, mode %o): the holds of write grants are not read there; remove it, or set SANDBOXED_RUNTIME_DIR to a directory only you can write", d, os.Geteuid(), st.Uid, st.Mode&0o7777)
		}
	}
	return nil
}

// trustedFile checks that the hold file f is the caller's and that no one
// else may write it.
func trustedFile(f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return fmt.Errorf("hold file %s is not a file of uid %d that only it may write (owner %d, mode %o): remove it", f.Name(), os.Geteuid(), st.Uid, st.Mode&0o7777)
	}
	return nil
}

// setupLock takes the setup lock of f (an open file description lock on
// its first byte): wait, or fail with EAGAIN when another holds it.
func setupLock(f *os.File, wait bool) error {
	cmd := unix.F_OFD_SETLK
	if wait {
		cmd = unix.F_OFD_SETLKW
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: 0, Len: 1}
	for {
		err := unix.FcntlFlock(f.Fd(), cmd, &lk)
		if err != unix.EINTR {
			return err
		}
	}
}

// flock takes how on f, waiting.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			return err
		}
	}
}

// sameFile reports whether f is still the file name names.
func sameFile(f *os.File, name string) bool {
	var held, now unix.Stat_t
	return unix.Fstat(int(f.Fd()), &held) == nil && unix.Stat(name, &now) == nil && held.Ino == now.Ino && held.Dev == now.Dev
}

// alone reports whether the run holds the grant with no other (its hold
// exclusive); only then is what the file records of runs that are gone.
func (s *Shared) alone() bool { return s.excl }

// endSetup ends the hold's setup: a shared hold taken alone becomes
// shared, and other runs may set up theirs.
func (s *Shared) endSetup() {
	if !s.setup {
		return
	}
	if s.shared && s.excl {
		// No other run waits for the flock without the setup lock, so
		// no one comes in while it changes.
		if flock(s.f, unix.LOCK_SH) == nil {
			s.excl = false
		}
	}
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: io.SeekStart, Start: 0, Len: 1}
	_ = unix.FcntlFlock(s.f.Fd(), unix.F_OFD_SETLK, &lk)
	s.setup = false
}

// record reads the hand-over the file records; nil when none.
func (s *Shared) record() (*Grant, error) { return readGrant(s.f) }

// setRecord writes g as the file's record (nil: none).
func (s *Shared) setRecord(g *Grant) error { return writeGrant(s.f, g) }

// Last reports whether no other run holds the grant. When it does, the
// caller holds the grant alone until Release and hands it back; when it
// does not, the caller's hold is gone (a lock's conversion drops it
// first) and the last of the others hands it back.
func (s *Shared) Last() bool {
	s.excl = unix.Flock(int(s.f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil
	return s.excl
}

// Release ends the hold; the last run's (whether or not it asked Last)
// removes the lock file, and the folder of holds when it is empty —
// unless the hand-back failed, whose record gc needs.
func (s *Shared) Release() {
	if (s.excl || s.Last()) && !s.keep && s.recordsNothing() {
		_ = os.Remove(s.name)
		_ = os.Remove(s.dir)
	}
	s.f.Close()
}

// recordsNothing reports whether the hold's file records no hand-over: a
// file that does (a killed run's, not handed back) is gc's to remove.
func (s *Shared) recordsNothing() bool {
	g, err := s.record()
	return err == nil && g == nil
}

// readGrant reads the Grant f records; nil when f is empty.
func readGrant(f *os.File) (*Grant, error) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil, nil
	}
	var g Grant
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	if g.Path == "" {
		return nil, fmt.Errorf("read %s: it names no grant", f.Name())
	}
	return &g, nil
}

// writeGrant makes g the whole of f (nil: empties it). A crash of the
// controller leaves what it wrote in the page cache, where gc reads it.
func writeGrant(f *os.File, g *Grant) error {
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	if g == nil {
		return nil
	}
	b, err := json.Marshal(g)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	return nil
}

// ReapHolds removes the lock files in dir that no run holds (a run killed
// before it could hand its grant back leaves its own), after handing
// back by back (nil: Grant.Back here) the grant each records, and dir
// when it is then empty; it says what it did. A hold whose hand-back
// fails stays, for a later gc, and its error is returned. A hold a run
// holds, or is setting up, is never touched.
func ReapHolds(dir string, back func(Grant) error) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := trustedDir(dir); err != nil {
		return nil, err
	}
	if back == nil {
		back = func(g Grant) error { return g.Back(nil) }
	}
	live, known := liveGrants(dir, entries)
	var reaped []string
	var errs []error
	for _, e := range entries {
		r, err := reapHold(filepath.Join(dir, e.Name()), back, func(g *Grant) bool {
			return !known || slices.ContainsFunc(live, func(l string) bool { return nested(l, g.name()) })
		})
		reaped = append(reaped, r...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	_ = os.Remove(dir)
	return reaped, errors.Join(errs...)
}

// liveGrants are the grants of the holds in dir that runs hold (by their
// user's names); known is false when one could not be read (a run is
// setting it up).
func liveGrants(dir string, entries []os.DirEntry) (live []string, known bool) {
	for _, e := range entries {
		f, err := os.OpenFile(filepath.Join(dir, e.Name()), os.O_RDWR|unix.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		if trustedFile(f) != nil {
			f.Close()
			continue
		}
		// The setup lock first, as a run takes it before its flock: a
		// run never finds the flock taken by this look alone.
		if setupLock(f, false) != nil {
			f.Close()
			return nil, false
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
			g, err := readGrant(f)
			if err != nil {
				f.Close()
				return nil, false
			}
			if g != nil {
				live = append(live, g.name())
			}
		}
		f.Close()
	}
	return live, true
}

// name is the grant's path as its user names it: Origin, when Path is a
// bind of the run's.
func (g *Grant) name() string {
	if g.Origin != "" {
		return g.Origin
	}
	return g.Path
}

// nested reports whether a and b are the same path or one holds the other.
func nested(a, b string) bool {
	a, b = filepath.Clean(a), filepath.Clean(b)
	within := func(p, dir string) bool { return dir == "/" || strings.HasPrefix(p, dir+"/") }
	return a == b || within(a, b) || within(b, a)
}

// reapHold reaps the hold file name, when no run holds or sets it up. A
// grant that holds, or lies in, one a run holds (busy) is left for a
// later gc: handing it back would hand that run's tool's files (of the
// same uid, in the tiers whose runs share one) to the user while it runs.
func reapHold(name string, back func(Grant) error, busy func(*Grant) bool) ([]string, error) {
	f, err := os.OpenFile(name, os.O_RDWR|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	if err := trustedFile(f); err != nil {
		return nil, err
	}
	if setupLock(f, false) != nil || unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil || !sameFile(f, name) {
		return nil, nil
	}
	var reaped []string
	g, err := readGrant(f)
	if err != nil {
		return nil, err
	}
	if g != nil && busy(g) {
		return nil, nil
	}
	if g != nil {
		err := back(*g)
		name := g.name() // the user's name for it, not the run's bind
		if errors.Is(err, ErrGrantGone) {
			reaped = append(reaped, fmt.Sprintf("grant %s left as it is: %v", name, err))
		} else if err != nil {
			return nil, fmt.Errorf("hand write grant %s back from uid %d to %d (its hold %s stays for the next gc): %w", name, g.To.UID, g.From.UID, f.Name(), err)
		} else {
			reaped = append(reaped, fmt.Sprintf("write grant %s handed back from uid %d to %d", name, g.To.UID, g.From.UID))
		}
		if err := writeGrant(f, nil); err != nil {
			return reaped, err
		}
	}
	if err := os.Remove(name); err != nil {
		return reaped, err
	}
	return append(reaped, "grant hold "+name), nil
}

// Recorded is the hand-over that the hold on the grant at path in the
// folder of holds dir records, whether a run holds it or not; nil when
// there is none, or dir is not the caller's alone. It takes no lock (a
// record being written reads as none): for a check that must judge a
// grant as its owner left it before a run was handed it.
func Recorded(dir, path string) *Grant {
	if dir == "" {
		return nil
	}
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil || trustedDir(dir) != nil {
		return nil
	}
	f, err := os.OpenFile(holdName(dir, &st), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if trustedFile(f) != nil {
		return nil
	}
	g, err := readGrant(f)
	if err != nil {
		return nil
	}
	return g
}

// holdName is the hold file in dir of the grant st is of: named by its
// device and inode.
func holdName(dir string, st *unix.Stat_t) string {
	return filepath.Join(dir, fmt.Sprintf("grant-%d-%d.lock", st.Dev, st.Ino))
}
