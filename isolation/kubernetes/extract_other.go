//go:build !linux

package kubernetes

import (
	"io"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// extractInto needs openat2: write grants come back only on Linux.
func extractInto(io.Reader, string, []string, int64, map[string]bool) error {
	return isolation.ErrUnsupported
}

func removeGone(string, []string, map[string]bool) error { return isolation.ErrUnsupported }

func regularFiles(string, []string) ([]string, error) { return nil, isolation.ErrUnsupported }
