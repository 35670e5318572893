//go:build !linux

package kubernetes

import (
	"io"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// extractInto needs openat2: write grants come back only on Linux.
func extractInto(io.Reader, string, []string, int64) error {
	return isolation.ErrUnsupported
}
