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

// ErrTooLarge: a transfer of files went over its byte cap.
var ErrTooLarge = errors.New("files too large to carry")

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

// WriteTar writes the directories and regular files under t.Path, but
// those at or under t.Skip, as a tar stream to w. Symlinks and special
// files are left out.
func WriteTar(w io.Writer, t *Transfer) error {
	if t == nil || !filepath.IsAbs(t.Path) {
		return fmt.Errorf("get files: no absolute source: %w", ErrProtocol)
	}
	tw := tar.NewWriter(w)
	var total int64
	err := filepath.WalkDir(t.Path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(t.Path, p)
		if rel != "." && Skipped(rel, t.Skip) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: filepath.ToSlash(rel) + "/", Mode: int64(fi.Mode().Perm())})
		case fi.Mode().IsRegular():
			total += fi.Size()
			if t.MaxBytes > 0 && total > t.MaxBytes {
				return fmt.Errorf("get files from %s: more than %d bytes: %w", t.Path, t.MaxBytes, ErrTooLarge)
			}
			return copyFileTo(tw, p, filepath.ToSlash(rel), fi)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func copyFileTo(tw *tar.Writer, p, name string, fi fs.FileInfo) error {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(fi.Mode().Perm()), Size: fi.Size()}); err != nil {
		return err
	}
	// A file that grew since it was measured is cut at its measured size.
	_, err = io.CopyN(tw, f, fi.Size())
	return err
}
