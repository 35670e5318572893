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
