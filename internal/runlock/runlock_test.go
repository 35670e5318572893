package runlock

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestLiveness(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "20260101T000000-aaaaaaaaaaaa")
	if st, why := Test(dir); st != Unknown || why == "" {
		t.Errorf("no directory: %v (%q), want unknown with a reason", st, why)
	}
	h, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("run dir: %v %v, want mode 0700", fi, err)
	}
	if st, why := Test(dir); st != Held {
		t.Errorf("while held: %v (%s)", st, why)
	}
	if _, err := Create(dir); err == nil {
		t.Error("a second Create of one run dir succeeded")
	}
	// A child started while the lock is held does not inherit it: once
	// the holder closes its file the run is gone, though the child lives.
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	h.f.Close()
	if st, why := Test(dir); st != Free {
		t.Errorf("after its holder closed it, with a child alive: %v (%s), want free", st, why)
	}
	h.f = nil
	h.Release() // closed already: no-op
	os.RemoveAll(dir)

	h, err = Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	h.Release()
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("released run dir: %v, want it gone", err)
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Errorf("left beside it: %v", left)
	}
}

func TestUntestable(t *testing.T) {
	dir := t.TempDir()
	// A directory without a lock file (an older version's run).
	if st, why := Test(dir); st != Unknown || why == "" {
		t.Errorf("no lock file: %v (%q)", st, why)
	}
	// A link in place of the lock file is not followed.
	target := filepath.Join(t.TempDir(), "x")
	os.WriteFile(target, nil, 0o600)
	if err := os.Symlink(target, filepath.Join(dir, FileName)); err != nil {
		t.Fatal(err)
	}
	if st, _ := Test(dir); st != Unknown {
		t.Errorf("a link as lock file: %v, want unknown", st)
	}
}

func TestCreating(t *testing.T) {
	for _, tc := range []struct {
		name, run string
		ok        bool
	}{
		{".creating-20260101T000000-aaaaaaaaaaaa-123456", "20260101T000000-aaaaaaaaaaaa", true},
		{"20260101T000000-aaaaaaaaaaaa", "", false},
		{".creating-", "", false},
		{".other", "", false},
	} {
		run, ok := Creating(tc.name)
		if run != tc.run || ok != tc.ok {
			t.Errorf("Creating(%q) = %q, %t; want %q, %t", tc.name, run, ok, tc.run, tc.ok)
		}
	}
	// The names Create makes are recognised.
	parent := t.TempDir()
	tmp, err := os.MkdirTemp(parent, tempPrefix+"20260101T000000-bbbbbbbbbbbb-")
	if err != nil {
		t.Fatal(err)
	}
	if run, ok := Creating(filepath.Base(tmp)); !ok || run != "20260101T000000-bbbbbbbbbbbb" {
		t.Errorf("Creating(%q) = %q, %t", filepath.Base(tmp), run, ok)
	}
}
