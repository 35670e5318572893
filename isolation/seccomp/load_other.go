//go:build !linux

package seccomp

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// Supported reports whether the kernel offers seccomp filters.
func Supported() bool { return false }

// Load is not available off Linux.
func Load(prog []bpf.RawInstruction) error {
	return fmt.Errorf("load seccomp filter: %w", ErrUnsupported)
}
