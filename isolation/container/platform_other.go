//go:build !linux

package container

import (
	"runtime"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// platformUnsupported says why this OS cannot run the container tier. The
// host talks to the init over a Unix socket bind-mounted into the
// container and passes the command's descriptors over it (SCM_RIGHTS);
// where the engine runs its containers in a VM (Docker Desktop, colima,
// OrbStack on macOS) neither crosses the VM's file sharing, the sandboxed
// binary mounted as the init is not a Linux one, and the grants cannot be
// pinned as they are on Linux (open_tree). Refusing is the only correct
// answer until the tier speaks the stream protocol the Kubernetes backend
// uses (sbinit.StreamClient) over the engine's API.
func platformUnsupported() error {
	return &isolation.UnsupportedError{
		What: "the container tier on " + runtime.GOOS + " (its control socket and descriptors cannot cross the VM the Docker engine runs containers in)",
		Fix:  "run sandboxed on Linux (a Linux host or VM)",
	}
}
