package process

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestIDFilesStamp(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "subuid")
	if err := os.WriteFile(f, []byte("a:100000:65536\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s1, settled := idFilesStamp(0, 0, []string{f})
	if settled {
		t.Error("a file written just now counts as settled")
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(f, old, old); err != nil {
		t.Fatal(err)
	}
	// Chtimes changes the change time to now: still not settled, and
	// another stamp.
	s2, settled := idFilesStamp(0, 0, []string{f})
	if settled || s2 == s1 {
		t.Errorf("after chtimes: settled %t, stamp unchanged %t", settled, s2 == s1)
	}
	if s3, _ := idFilesStamp(0, 1, []string{f}); s3 == s2 {
		t.Error("another gid has the same stamp")
	}
	if err := os.WriteFile(f, []byte("b:100000:65536\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s4, _ := idFilesStamp(0, 0, []string{f}); s4 == s2 {
		t.Error("a rewritten file has the same stamp")
	}
	if err := os.Remove(f); err != nil {
		t.Fatal(err)
	}
	if s5, settled := idFilesStamp(0, 0, []string{f}); !settled || s5 == s2 {
		t.Errorf("absent file: settled %t, stamp unchanged %t", settled, s5 == s2)
	}
}
