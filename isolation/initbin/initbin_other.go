//go:build !linux

package initbin

import (
	"errors"
	"os"
)

// Embedded reports whether this build carries the init binary; sandboxes
// need Linux, so off Linux it never does.
func Embedded() bool { return false }

// Open returns nil: there is no init off Linux.
func Open() (*os.File, error) { return nil, nil }

// Exec returns "": there is no init off Linux.
func Exec(cacheDir string) (string, func(), error) { return "", func() {}, nil }

// Cached fails: there is no init off Linux.
func Cached(dir string) (string, error) { return "", errors.New("no init off Linux") }

// RemoveStale does nothing off Linux.
func RemoveStale(dir string) ([]string, error) { return nil, nil }

// ExecPath is not used off Linux.
func ExecPath(f *os.File) string { return "" }
