package initbin

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

// withImage makes this build carry the binary at path for one test.
func withImage(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	testenv.Need(t, path+" (a binary to embed)", err)
	old := image
	image = b
	t.Cleanup(func() { image = old })
}

func TestOpenNotEmbedded(t *testing.T) {
	old := image
	image = nil
	defer func() { image = old }()
	if Embedded() {
		t.Fatal("Embedded with no image")
	}
	f, err := Open()
	if f != nil || err != nil {
		t.Fatalf("Open = %v, %v; want nil, nil", f, err)
	}
}

func TestOpenRunsAndIsSealed(t *testing.T) {
	withImage(t, "/bin/true")
	f, err := Open()
	if err != nil || f == nil {
		t.Fatalf("Open: %v, %v", f, err)
	}
	defer f.Close()
	// The child runs the memory file under its exec path.
	if out, err := exec.Command(ExecPath(f)).CombinedOutput(); err != nil {
		t.Fatalf("exec %s: %v: %s", ExecPath(f), err, out)
	}
	// Sealed: no write, no resize, no new seals.
	if _, err := unix.Pwrite(int(f.Fd()), []byte{0}, 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("write to the sealed file: %v, want EPERM", err)
	}
	if err := unix.Ftruncate(int(f.Fd()), 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("truncate the sealed file: %v, want EPERM", err)
	}
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil || seals&unix.F_SEAL_SEAL == 0 || seals&unix.F_SEAL_WRITE == 0 {
		t.Errorf("seals %#x (%v): want SEAL|WRITE|GROW|SHRINK", seals, err)
	}
	// Close-on-exec, so no command the init starts inherits it.
	if fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); err != nil || fl&unix.FD_CLOEXEC == 0 {
		t.Errorf("FD flags %#x (%v): want close-on-exec", fl, err)
	}
}

func withSum(t *testing.T, s string) {
	t.Helper()
	old := sum
	sum = s
	t.Cleanup(func() { sum = old })
}

func TestCachedWritesOnceAndRuns(t *testing.T) {
	withImage(t, "/bin/true")
	withSum(t, "0123456789abcdef0123")
	dir := filepath.Join(t.TempDir(), "cache")
	p, err := Cached(dir)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(p) != "init-0123456789abcdef" {
		t.Errorf("path %s", p)
	}
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode().Perm() != 0o555 {
		t.Fatalf("cached init: %v %v", fi, err)
	}
	if out, err := exec.Command(p).CombinedOutput(); err != nil {
		t.Fatalf("exec %s: %v: %s", p, err, out)
	}
	// The second call reuses it.
	p2, err := Cached(dir)
	if err != nil || p2 != p {
		t.Fatalf("second Cached = %s, %v", p2, err)
	}
	fi2, _ := os.Lstat(p)
	if !os.SameFile(fi, fi2) {
		t.Error("the init was written again")
	}
	// Exec prefers it over a memory file.
	path, release, err := Exec(dir)
	if err != nil || path != p {
		t.Errorf("Exec = %s, %v", path, err)
	}
	release()
}

func TestCachedRefusesWhatOthersCouldChange(t *testing.T) {
	withImage(t, "/bin/true")
	withSum(t, "0123456789abcdef0123")
	for name, setup := range map[string]func(t *testing.T, dir string){
		"dir writable by others": func(t *testing.T, dir string) {
			os.MkdirAll(dir, 0o700)
			os.Chmod(dir, 0o777)
		},
		"writable file": func(t *testing.T, dir string) {
			os.MkdirAll(dir, 0o700)
			os.WriteFile(filepath.Join(dir, "init-0123456789abcdef"), image, 0o755)
		},
		"wrong size": func(t *testing.T, dir string) {
			os.MkdirAll(dir, 0o700)
			os.WriteFile(filepath.Join(dir, "init-0123456789abcdef"), []byte("#!/bin/sh\n"), 0o555)
		},
		"symlink": func(t *testing.T, dir string) {
			os.MkdirAll(dir, 0o700)
			os.Symlink("/bin/true", filepath.Join(dir, "init-0123456789abcdef"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			setup(t, dir)
			if p, err := Cached(dir); err == nil {
				t.Fatalf("Cached = %s, want a refusal", p)
			}
			// Exec falls back to a sealed memory file.
			path, release, err := Exec(dir)
			if err != nil || !strings.HasPrefix(path, "/proc/") {
				t.Fatalf("Exec = %s, %v; want a memory file", path, err)
			}
			release()
		})
	}
}

func TestRemoveStale(t *testing.T) {
	withSum(t, "0123456789abcdef0123")
	dir := t.TempDir()
	for _, n := range []string{"init-0123456789abcdef", "init-fedcba9876543210", "rootfs-bookworm.tar"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o555)
	}
	removed, err := RemoveStale(dir)
	if err != nil || len(removed) != 1 || filepath.Base(removed[0]) != "init-fedcba9876543210" {
		t.Fatalf("RemoveStale = %v, %v", removed, err)
	}
	for _, n := range []string{"init-0123456789abcdef", "rootfs-bookworm.tar"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s removed: %v", n, err)
		}
	}
}

func TestCachedRefusesAFileThatCannotRun(t *testing.T) {
	withImage(t, "/bin/true")
	withSum(t, "0123456789abcdef0123")
	dir := filepath.Join(t.TempDir(), "cache")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "init-0123456789abcdef"), image, 0o444)
	if p, err := Cached(dir); err == nil {
		t.Fatalf("Cached = %s for a mode 0444 file, want a refusal", p)
	}
}

func TestCachedCreatesNothingUnderAnUnsafeParent(t *testing.T) {
	withImage(t, "/bin/true")
	withSum(t, "0123456789abcdef0123")
	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	dir := filepath.Join(open, "cache", "sandboxed")
	if p, err := Cached(dir); err == nil {
		t.Fatalf("Cached = %s under a world-writable parent", p)
	}
	if _, err := os.Stat(filepath.Join(open, "cache")); err == nil {
		t.Error("Cached created directories under a world-writable parent")
	}
	// RemoveStale does not clean where Cached would not write.
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "init-fedcba9876543210"), nil, 0o555)
	if removed, _ := RemoveStale(dir); len(removed) != 0 {
		t.Errorf("RemoveStale removed %v under a world-writable parent", removed)
	}
}
