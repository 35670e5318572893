package xdg

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// CacheDir is $XDG_CACHE_HOME/sandboxed, else ~/.cache/sandboxed: what can
// be rebuilt at any time (made root filesystems, the init binary). It is
// not created. A relative XDG_CACHE_HOME is ignored, as the specification
// says.
func CacheDir() (string, error) {
	if x := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "sandboxed"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", fmt.Errorf("find the cache directory: no home directory (%v): set XDG_CACHE_HOME", err)
	}
	return filepath.Join(home, ".cache", "sandboxed"), nil
}

// RuntimeDir is where sandboxed keeps what lives only while it runs
// (runs' host directories, the server's socket): $SANDBOXED_RUNTIME_DIR,
// else /run/sandboxed as root, $XDG_RUNTIME_DIR/sandboxed, or
// /tmp/sandboxed-UID. It is not created.
func RuntimeDir() string {
	if d := os.Getenv("SANDBOXED_RUNTIME_DIR"); d != "" {
		// A relative one is relative to the working directory; the plan
		// names the run's host directory by its absolute path.
		if abs, err := filepath.Abs(d); err == nil {
			return abs
		}
		return d
	}
	if os.Geteuid() == 0 {
		return "/run/sandboxed"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "sandboxed")
	}
	return "/tmp/sandboxed-" + strconv.Itoa(os.Geteuid())
}
