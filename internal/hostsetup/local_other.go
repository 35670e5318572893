//go:build !linux

package hostsetup

import (
	"fmt"
	"runtime"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// Local fails: setup and its probes are for Linux hosts.
func Local() (*System, error) {
	return nil, fmt.Errorf("prepare a %s host: %w", runtime.GOOS, isolation.ErrUnsupported)
}
