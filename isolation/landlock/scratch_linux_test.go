package landlock

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestScratchDirsWhereRunsPutThem: with a TMPDIR that is not an absolute
// path a run's scratch directory is in /tmp (ScratchDir), and gc looks
// for it there, not relative to its working directory.
func TestScratchDirsWhereRunsPutThem(t *testing.T) {
	dir := ScratchDir("/tmp", "test-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(dir)
	t.Chdir(t.TempDir())
	if err := os.Mkdir("rel", 0o700); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join("rel", ScratchPrefix+"stray")
	if err := os.Mkdir(stray, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", "rel")
	if got := ScratchDir(os.TempDir(), "x"); filepath.Dir(got) != "/tmp" {
		t.Fatalf("ScratchDir with TMPDIR=rel: %s", got)
	}
	dirs := scratchDirs()
	if !slices.Contains(dirs, dir) || slices.Contains(dirs, stray) {
		t.Fatalf("scratchDirs with TMPDIR=rel: %v, want %s among them and not %s", dirs, dir, stray)
	}
}
