package changeset

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Keeper returns a KeepFunc that keeps each file it is given in dir as a
// blob named by its sha256 (0600): a reflink of the file where the
// filesystem can (FICLONE: no bytes copied, the blocks shared
// copy-on-write), else a copy. The hash is read from the blob once made
// (a reflink) or while copying, so the name is always that of the blob's
// content.
func Keeper(dir string) KeepFunc {
	return func(rel string, fd int) (string, int64, error) {
		f, err := os.CreateTemp(dir, ".blob-")
		if err != nil {
			return "", 0, fmt.Errorf("keep %s: %w", rel, err)
		}
		defer os.Remove(f.Name()) // after the rename: nothing
		defer f.Close()
		h := sha256.New()
		var n int64
		if unix.IoctlFileClone(int(f.Fd()), fd) == nil {
			n, err = io.Copy(h, io.NewSectionReader(fdReaderAt(int(f.Fd())), 0, 1<<62))
		} else {
			n, err = io.Copy(io.MultiWriter(f, h), io.NewSectionReader(fdReaderAt(fd), 0, 1<<62))
		}
		if err != nil {
			return "", 0, fmt.Errorf("keep %s: %w", rel, err)
		}
		if err := f.Chmod(0o600); err != nil {
			return "", 0, fmt.Errorf("keep %s: %w", rel, err)
		}
		sum := hex.EncodeToString(h.Sum(nil))
		if err := os.Rename(f.Name(), filepath.Join(dir, sum)); err != nil {
			return "", 0, fmt.Errorf("keep %s: %w", rel, err)
		}
		return sum, n, nil
	}
}

// Sync writes to disk what the file system holding dir has in memory
// (syncfs(2)), and dir's own entries: one call for every pre-image a scan
// kept, or every file an undo put back, where a fsync of each would cost
// one disk flush per file. A pre-image is durable before the record that
// names it, so a change the host lost power in the midst of can still be
// put back.
func Sync(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	if err := unix.Fsync(fd); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
