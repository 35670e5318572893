package reown

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFolderRestore: a grant folder's mode comes back after the tool
// changed it; one replaced during the run is left alone and reported.
func TestFolderRestore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "grant")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(dir, 0o1750); err != nil {
		t.Fatal(err)
	}
	f, err := SaveFolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := f.Restore(); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil || st.Mode&0o7777 != 0o1750 {
		t.Errorf("mode %o after Restore (%v), want 1750", st.Mode&0o7777, err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", dir); err != nil {
		t.Fatal(err)
	}
	if err := f.Restore(); err == nil {
		t.Errorf("Restore of a folder replaced by a link: no error")
	}
}

// TestRestoreSocket: a granted socket's mode is restored without opening
// it (which fails with ENXIO, or would connect).
func TestRestoreSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Chmod(path, 0o750); err != nil {
		t.Fatal(err)
	}
	f, err := SaveFolder(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := f.Restore(); err != nil {
		t.Fatalf("Restore of a socket: %v", err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o750 {
		t.Errorf("mode %o after Restore, want 750", got)
	}
}
