//go:build !linux

package host

import "github.com/sandboxed-dev/sandboxed/isolation"

// Reown is Linux's alone (see reown_linux.go).
func Reown(root string, from, to Owner) (Reowned, error) {
	return Reowned{}, isolation.ErrUnsupported
}
