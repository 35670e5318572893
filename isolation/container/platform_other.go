//go:build !linux

package container

import (
	"runtime"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// platformUnsupported says why this OS cannot run the container tier yet.
// The way to an engine that runs its containers in a VM is built (vm.go:
// grants by the VM's shares, the init on the container's attached
// streams); what a build off Linux still lacks is a Linux init to hand the
// engine's VM (make build is to cross-build and embed it) and the engine's
// default seccomp profile, which the tier narrows with the plan's and
// renders with Docker's Linux-only code. Refusing is the only correct
// answer until both are there: a container without either would run
// weaker than the plan.
func platformUnsupported() error {
	return &isolation.UnsupportedError{
		What: "the container tier on " + runtime.GOOS + " (this build carries no Linux init for the Docker engine's VM, and cannot render the engine's default seccomp profile off Linux)",
		Fix:  "run sandboxed on Linux (a Linux host or VM); docs/tiers.md#macos says what the macOS build lacks",
	}
}
