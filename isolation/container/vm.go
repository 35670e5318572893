package container

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"

	"github.com/docker/docker/api/types/system"

	"github.com/sandboxed-dev/sandboxed/internal/pathglob"
)

// An engine that runs its containers in a Linux VM on this host — on
// macOS always (Docker Desktop, colima, OrbStack), on Linux with Docker
// Desktop — resolves bind sources in the VM. The VM shares some of this
// host's directories at the same path (virtiofs, 9p, sshfs); elsewhere a
// bind source is missing, or, on some engines, an empty directory the
// engine makes in the VM. No socket and no descriptor crosses a share. So
// a run goes to such an engine as it goes to one outside this process's
// container (copy.go): grants in a share are bound by path, read grants
// elsewhere are copied into a volume, write grants elsewhere are refused
// with the fix, the control and egress sockets are never bound, and the
// init is reached over the container's attached streams.
//
// Only the engines' default shares are known here; a directory a user
// added to them is copied (read) or refused (write), never bound blind.

// vmEngine is an engine whose containers run in a VM, and what of this
// host the VM shares.
type vmEngine struct {
	// name is the engine's product: Docker Desktop, colima, OrbStack.
	name string
	// shared are the directories of this host the VM shares at the same
	// path; "/" for all.
	shared []string
}

// detectVM says whether the engine described by info, at the socket
// daemonHost, runs its containers in a VM, and what that VM shares of a
// host of OS goos for a user whose home directory is home. nil: the
// engine runs on this host's kernel.
func detectVM(info system.Info, daemonHost, home, goos string) *vmEngine {
	switch {
	case info.OperatingSystem == "OrbStack" || strings.Contains(daemonHost, "/.orbstack/"):
		// OrbStack's machine sees the whole Mac at the same paths.
		return &vmEngine{name: "OrbStack", shared: []string{"/"}}
	case info.OperatingSystem == "Docker Desktop" || strings.Contains(daemonHost, "/.docker/run/docker.sock"):
		if goos == "darwin" {
			// Settings > Resources > File sharing, as installed. /tmp
			// and /var/folders are /private's: the planner resolves
			// grants to the latter.
			return &vmEngine{name: "Docker Desktop", shared: []string{"/Users", "/Volumes", "/private", "/tmp", "/var/folders"}}
		}
		// Docker Desktop for Linux shares the home directory.
		return &vmEngine{name: "Docker Desktop", shared: homeShare(home)}
	case info.Name == "colima" || strings.HasPrefix(info.Name, "colima-") || strings.Contains(daemonHost, "/.colima/"):
		// Lima's default mounts: the home directory, and colima's own
		// /tmp/colima.
		return &vmEngine{name: "colima", shared: append(homeShare(home), "/tmp/colima")}
	}
	if goos == "darwin" {
		// Every Docker engine on macOS runs in a VM; one not known here
		// shares nothing known: everything is copied or refused.
		return &vmEngine{name: "the Docker engine's VM (" + cmp.Or(info.OperatingSystem, "unknown") + ")"}
	}
	return nil
}

// mayRunInVM says whether the engine at daemonHost may run its containers
// in a VM, so that its info is worth asking: on macOS always; on Linux
// unless it is the system's engine (/var/run/docker.sock), which runs on
// this kernel. Docker Desktop and colima listen in the user's home.
func mayRunInVM(daemonHost, goos string) bool {
	if goos != "linux" {
		return true
	}
	switch daemonHost {
	case "unix:///var/run/docker.sock", "unix:///run/docker.sock":
		return false
	}
	return true
}

func homeShare(home string) []string {
	if home == "" || !filepath.IsAbs(home) {
		return nil
	}
	return []string{filepath.Clean(home)}
}

// visible reports whether the VM sees path, a path of this host, at the
// same path: it lies in a share, or it is /dev/null, which the VM has
// too.
func (v *vmEngine) visible(path string) bool {
	if path == "/dev/null" {
		return true
	}
	path = filepath.Clean(path)
	return slices.ContainsFunc(v.shared, func(s string) bool { return pathglob.Within(path, s) })
}
