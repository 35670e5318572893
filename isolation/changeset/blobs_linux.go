package changeset

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Keeper returns a KeepFunc that keeps each file it is given in dir as a
// blob named by its sha256 (0600), once per content: a reflink of the
// file where the filesystem can (FICLONE: no bytes copied, the blocks
// shared copy-on-write), else a copy.
func Keeper(dir string) KeepFunc {
	return func(rel string, fd int, e Entry) error {
		if !validHash(e.SHA256) {
			return fmt.Errorf("keep %s: no hash", rel)
		}
		dst := filepath.Join(dir, e.SHA256)
		if _, err := os.Lstat(dst); err == nil {
			return nil
		}
		f, err := os.CreateTemp(dir, ".blob-")
		if err != nil {
			return fmt.Errorf("keep %s: %w", rel, err)
		}
		defer os.Remove(f.Name()) // after the rename: nothing
		defer f.Close()
		if err := unix.IoctlFileClone(int(f.Fd()), fd); err != nil {
			if _, err := io.Copy(f, io.NewSectionReader(fdReaderAt(fd), 0, e.Size)); err != nil {
				return fmt.Errorf("keep %s: %w", rel, err)
			}
		}
		if err := f.Chmod(0o600); err != nil {
			return fmt.Errorf("keep %s: %w", rel, err)
		}
		if err := os.Rename(f.Name(), dst); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("keep %s: %w", rel, err)
		}
		return nil
	}
}
