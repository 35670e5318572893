package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnprivileged: inside, the thread is a user (a directory with mode 0
// cannot be read, children are that user too); outside, nothing changed.
// As root the switch itself is what is tested; as a user f runs as is.
func TestUnprivileged(t *testing.T) {
	uid := os.Geteuid()
	ran := false
	Unprivileged(t, func() {
		ran = true
		if os.Geteuid() == 0 || os.Getuid() == 0 {
			t.Fatalf("inside: uid %d euid %d", os.Getuid(), os.Geteuid())
		}
		dir := filepath.Join(t.TempDir(), "closed")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
		os.Chmod(dir, 0)
		defer os.Chmod(dir, 0o755)
		if _, err := os.ReadDir(dir); err == nil {
			t.Error("read a mode-0 directory")
		}
		out, err := exec.Command("id", "-u").Output()
		if err != nil || strings.TrimSpace(string(out)) == "0" {
			t.Errorf("a child's id -u: %q, %v", out, err)
		}
	})
	if !ran {
		t.Fatal("f did not run")
	}
	if os.Geteuid() != uid {
		t.Errorf("after: euid %d, want %d", os.Geteuid(), uid)
	}
}

// TestUnprivilegedRestoresAfterFatal: a test stopped inside f gets its
// thread back as root before anything else runs on it.
func TestUnprivilegedRestoresAfterFatal(t *testing.T) {
	uid := os.Geteuid()
	f := run(func(tb testing.TB) {
		Unprivileged(tb, func() { tb.Fatal("stop") })
		tb.(*fakeTB).after = true
	})
	if f.outcome != "fatal" || f.after || len(f.errors) != 0 {
		t.Errorf("outcome %q after %v errors %q", f.outcome, f.after, f.errors)
	}
	if os.Geteuid() != uid {
		t.Errorf("euid %d, want %d", os.Geteuid(), uid)
	}
}
