package images

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockCache takes an exclusive lock on the cache directory so that two
// builds at once make the root filesystem once. The caller must call the
// returned unlock.
func lockCache(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock cache %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock cache %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}
