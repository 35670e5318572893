package sbinit

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The host's half of a transfer (WriteTar) is portable: the Kubernetes
// backend runs it wherever sandboxed runs, macOS included. The init's half
// (untarInto) is in transfer_linux.go.

// WriteTar writes the directories and regular files under t.Path, but
// those at or under t.Skip, as a tar stream to w, with their permission
// bits and owners. Symlinks and special files are left out. A t.Path that
// is a regular file is written as one entry named after it.
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
			return tw.WriteHeader(withMeta(&tar.Header{Typeflag: tar.TypeDir, Name: filepath.ToSlash(rel) + "/", Mode: int64(fi.Mode().Perm())}, fi))
		case fi.Mode().IsRegular():
			if rel == "." {
				rel = filepath.Base(p)
			}
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
	if err := tw.WriteHeader(withMeta(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(fi.Mode().Perm()), Size: fi.Size()}, fi)); err != nil {
		return err
	}
	// A file that grew since it was measured is cut at its measured size.
	_, err = io.CopyN(tw, f, fi.Size())
	return err
}

// withOwner sets h's owner to fi's. An extractor that runs as root (a
// Docker engine copying into a container) gives the files their owners;
// the init's extracts them as itself.
func withMeta(h *tar.Header, fi fs.FileInfo) *tar.Header {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		h.Uid, h.Gid = int(st.Uid), int(st.Gid)
	}
	return h
}
