package reown

import (
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
	f *os.File
}

// Hold takes a shared hold on the grant at path, making dir and the lock
// file as needed. It waits while another run hands the grant back. The
// caller calls Release, after handing back when Last says so.
func Hold(dir, path string) (*Shared, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, &ReownError{Path: path, Op: "stat", Err: err}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("hold write grant %s: %w", path, err)
	}
	name := filepath.Join(dir, fmt.Sprintf("grant-%d-%d.lock", st.Dev, st.Ino))
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("hold write grant %s: %w", path, err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_SH)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("hold write grant %s: lock %s: %w", path, name, err)
	}
	return &Shared{f: f}, nil
}

// Last reports whether no other run holds the grant. When it does, the
// caller holds the grant alone until Release and hands it back; when it
// does not, the caller's hold is gone (a lock's conversion drops it
// first) and the last of the others hands it back.
func (s *Shared) Last() bool {
	return unix.Flock(int(s.f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil
}

// Release ends the hold.
func (s *Shared) Release() { s.f.Close() }
