//go:build !linux

package initbin

import "os"

// Embedded reports whether this build carries the init binary; sandboxes
// need Linux, so off Linux it never does.
func Embedded() bool { return false }

// Open returns nil: there is no init off Linux.
func Open() (*os.File, error) { return nil, nil }

// ExecPath is not used off Linux.
func ExecPath(f *os.File) string { return "" }
