package landlock

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestChmodDirsFollowsNoLink: the directories a tool left unwritable are
// made writable and removed, and a link in the scratch directory to a
// directory elsewhere leaves that directory's mode alone.
func TestChmodDirsFollowsNoLink(t *testing.T) {
	outside := t.TempDir()
	if err := os.Chmod(outside, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(outside, 0o755)
	scratch := filepath.Join(t.TempDir(), "scratch")
	deep := filepath.Join(scratch, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deep, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(scratch, "a", "link")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{deep, filepath.Dir(deep)} {
		if err := os.Chmod(d, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := chmodDirs(unix.AT_FDCWD, scratch, 0); err != nil {
		t.Fatalf("chmodDirs: %v", err)
	}
	for _, d := range []string{scratch, filepath.Dir(deep), deep} {
		if st, err := os.Lstat(d); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v (%v), want 0700", d, st.Mode().Perm(), err)
		}
	}
	if st, err := os.Stat(outside); err != nil || st.Mode().Perm() != 0o555 {
		t.Errorf("the link's target changed: mode %v (%v), want 0555", st.Mode().Perm(), err)
	}
	if err := removeTree(scratch); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(scratch); !os.IsNotExist(err) {
		t.Errorf("scratch directory left: %v", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the link's target went: %v", err)
	}
}
