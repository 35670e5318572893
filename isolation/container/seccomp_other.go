//go:build !linux

package container

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// seccompProfile needs Linux: the engine's default profile depends on the
// kernel it runs on.
func seccompProfile(*specs.LinuxSeccomp, []string) (*specs.LinuxSeccomp, error) {
	return nil, &isolation.UnsupportedError{What: "seccomp profiles off Linux", Fix: "run the container tier on Linux"}
}
