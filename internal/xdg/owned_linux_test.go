package xdg

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCheckOwned(t *testing.T) {
	root := t.TempDir() // under a sticky /tmp: accepted above it
	mine := filepath.Join(root, "mine")
	open := filepath.Join(root, "open")
	under := filepath.Join(open, "under")
	for _, d := range []string{mine, under} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(mine, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir string
		ok  bool
	}{
		{mine, true},
		{open, false},  // writable by others
		{under, false}, // below a directory others can write
		{link, false},  // a link, not a directory (resolve it first)
		{filepath.Join(root, "missing"), false},
	} {
		if err := CheckOwned(c.dir); (err == nil) != c.ok {
			t.Errorf("CheckOwned(%s) = %v, want ok %v", c.dir, err, c.ok)
		}
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(root, "other")
		if err := os.Mkdir(other, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 12345, 12345); err != nil {
			t.Fatal(err)
		}
		if err := CheckOwned(other); err == nil {
			t.Error("a directory of another uid was accepted")
		}
	}
	if got := ExistingPrefix(filepath.Join(link, "a", "b")); got != mine {
		t.Errorf("ExistingPrefix = %s, want %s", got, mine)
	}
}
