package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxed-dev/sandboxed/internal/xdg"
)

// TestStateDirWithoutAHome: a user whose home is missing or not theirs to
// write (a CI container's --user 1000 has HOME=/) keeps the state in the
// runtime directory instead of failing every run record.
func TestStateDirWithoutAHome(t *testing.T) {
	t.Setenv("SANDBOXED_STATE_DIR", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("SANDBOXED_RUNTIME_DIR", t.TempDir())
	home := t.TempDir()
	for _, c := range []struct {
		home, want string
	}{
		{home, filepath.Join(home, ".local", "state", "sandboxed")},
		{filepath.Join(home, "missing", "deeper"), filepath.Join(home, "missing", "deeper", ".local", "state", "sandboxed")},
		{"", filepath.Join(xdg.RuntimeDir(), "state")},
		{"relative", filepath.Join(xdg.RuntimeDir(), "state")},
	} {
		t.Setenv("HOME", c.home)
		if got := StateDir(); got != c.want {
			t.Errorf("HOME=%q: StateDir() = %s, want %s", c.home, got, c.want)
		}
	}
	if os.Geteuid() != 0 {
		ro := t.TempDir()
		if err := os.Chmod(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Setenv("HOME", ro)
		if got, want := StateDir(), filepath.Join(xdg.RuntimeDir(), "state"); got != want {
			t.Errorf("read-only home: StateDir() = %s, want %s", got, want)
		}
	}
}
