package xdg

import (
	"fmt"
	"os"
	"path/filepath"
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
