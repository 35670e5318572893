package hostsetup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// writeAtomic replaces path with data through a temporary file in the same
// directory and a rename, so a reader sees the old or the new file, never
// half of one. An existing file keeps its mode and owner; a new one gets
// mode and the owner of whoever writes it (root, for setup).
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	uid, gid := -1, -1
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
		uid, gid, _ = fileOwner(fi)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("write %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".sandboxed-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	name := tmp.Name()
	defer os.Remove(name) // a no-op after the rename
	err = func() error {
		defer tmp.Close()
		if _, err := tmp.Write(data); err != nil {
			return err
		}
		if err := tmp.Chmod(mode); err != nil {
			return err
		}
		if uid >= 0 {
			if err := tmp.Chown(uid, gid); err != nil {
				return err
			}
		}
		return tmp.Sync()
	}()
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the new name durable where the filesystem can
		d.Close()
	}
	return nil
}

// readOptional reads path; a missing file reads as empty, with exists
// false.
func readOptional(path string) (data []byte, exists bool, err error) {
	data, err = os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// InstallFile writes data to path (mode 0644, through a temporary file and
// a rename; its directory made, mode 0755, where missing) unless path
// already holds exactly data. It reports whether it wrote.
func InstallFile(path string, data []byte) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := writeAtomic(path, data, 0o644); err != nil {
		return false, err
	}
	return true, nil
}
