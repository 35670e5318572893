package reown

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Shared is one run's hold on a write grant it was handed: runs that use
// the same grant at once (an agent's parallel calls) hold it together,
// and only the last to end hands it back, so that no run's tool loses
// its grant while it runs. Holds are flock(2) locks on a file named by
// the grant's device and inode in a directory of the caller's (the
// runtime directory), so they hold across processes of the same user.
type Shared struct {
	f         *os.File
	dir, name string
	alone     bool // Last said so: Release removes the lock file
}

// Hold takes a shared hold on the grant at path, making dir and the lock
// file as needed. It waits while another run hands the grant back. The
// caller calls Release, after handing back when Last says so. The last
// run removes the lock file (and dir, when empty): a hold taken on a file
// removed meanwhile is taken again on the new one.
func Hold(dir, path string) (*Shared, error) { return hold(dir, path, false) }

// HoldAlone takes the only hold on the grant at path: it waits while any
// other run holds it, and keeps every other run waiting until Release. It
// is for runs whose tools each have a uid of their own (the landlock tier
// as root): two of them cannot share a grant handed to one uid, and the
// later one's hand-over would find the grant the earlier's.
func HoldAlone(dir, path string) (*Shared, error) { return hold(dir, path, true) }

func hold(dir, path string, alone bool) (*Shared, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, &ReownError{Path: path, Op: "stat", Err: err}
	}
	name := filepath.Join(dir, fmt.Sprintf("grant-%d-%d.lock", st.Dev, st.Ino))
	how := unix.LOCK_SH
	if alone {
		how = unix.LOCK_EX
	}
	for try := 0; ; try++ {
		s, err := holdOnce(dir, name, how)
		if s != nil || try == 100 {
			if err != nil {
				return nil, fmt.Errorf("hold write grant %s: %w", path, err)
			}
			if s != nil {
				s.alone = alone
			}
			return s, err
		}
	}
}

// holdOnce takes a lock (how: LOCK_SH or LOCK_EX) on the file name in
// dir; nil, nil when the file it locked is no longer name (removed by the
// last run meanwhile).
func holdOnce(dir, name string, how int) (*Shared, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // dir removed meanwhile
	}
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	var held, now unix.Stat_t
	if unix.Fstat(int(f.Fd()), &held) != nil || unix.Stat(name, &now) != nil || held.Ino != now.Ino || held.Dev != now.Dev {
		f.Close()
		return nil, nil
	}
	return &Shared{f: f, dir: dir, name: name}, nil
}

// Last reports whether no other run holds the grant. When it does, the
// caller holds the grant alone until Release and hands it back; when it
// does not, the caller's hold is gone (a lock's conversion drops it
// first) and the last of the others hands it back.
func (s *Shared) Last() bool {
	s.alone = unix.Flock(int(s.f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil
	return s.alone
}

// Release ends the hold; the last run's (whether or not it asked Last)
// removes the lock file, and the folder of holds when it is empty.
func (s *Shared) Release() {
	if s.alone || s.Last() {
		_ = os.Remove(s.name)
		_ = os.Remove(s.dir)
	}
	s.f.Close()
}

// ReapHolds removes the lock files in dir that no run holds (a run killed
// before it could hand its grant back leaves its own), and dir when it is
// then empty, and says which it removed. The grants themselves are not
// handed back: that needs the run's ids.
func ReapHolds(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var reaped []string
	for _, e := range entries {
		name := filepath.Join(dir, e.Name())
		f, err := os.OpenFile(name, os.O_RDWR|unix.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil && os.Remove(name) == nil {
			reaped = append(reaped, "grant hold "+name)
		}
		f.Close()
	}
	_ = os.Remove(dir)
	return reaped, nil
}
