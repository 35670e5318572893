package sbinit

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// untarInto extracts the tar stream r into t.Path, which must exist.
// Only directories and regular files are made; a name that is absolute
// or climbs out is refused. Files are made afresh (never through a
// symlink) with their permission bits and no set-id bit.
func untarInto(r io.Reader, t *Transfer) error {
	if t == nil || !filepath.IsAbs(t.Path) {
		return fmt.Errorf("put files: no absolute target: %w", ErrProtocol)
	}
	tr := tar.NewReader(r)
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("put files into %s: %w", t.Path, err)
		}
		rel, ok := CleanRel(h.Name)
		if !ok {
			return fmt.Errorf("put files into %s: entry %q climbs out: %w", t.Path, h.Name, ErrProtocol)
		}
		dst := filepath.Join(t.Path, rel)
		mode := os.FileMode(h.Mode) & 0o777
		switch h.Typeflag {
		case tar.TypeDir:
			if rel == "." {
				continue
			}
			if err := os.Mkdir(dst, mode|0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("put files: %w", err)
			}
		case tar.TypeReg:
			total += h.Size
			if t.MaxBytes > 0 && total > t.MaxBytes {
				return fmt.Errorf("put files into %s: more than %d bytes: %w", t.Path, t.MaxBytes, ErrTooLarge)
			}
			f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode|0o200)
			if err != nil {
				return fmt.Errorf("put files: %w", err)
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil && mode&0o200 == 0 {
				err = os.Chmod(dst, mode)
			}
			if err != nil {
				return fmt.Errorf("put files: %w", err)
			}
		}
	}
}
