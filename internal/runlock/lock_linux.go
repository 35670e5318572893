package runlock

import (
	"os"

	"golang.org/x/sys/unix"
)

const noFollow = unix.O_NOFOLLOW

// lock takes an open file description write lock on the whole of f,
// without waiting.
func lock(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0}
	return unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
}

// locked reports whether another open file description holds a lock on f
// that a write lock would conflict with. It takes no lock.
func locked(f *os.File) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return false, err
	}
	return lk.Type != unix.F_UNLCK, nil
}
