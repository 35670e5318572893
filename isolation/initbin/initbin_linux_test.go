package initbin

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// withImage makes this build carry the binary at path for one test.
func withImage(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("no %s: %v", path, err)
	}
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
