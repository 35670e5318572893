package container

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/sandboxed-dev/sandboxed/internal/pathglob"
)

// outside describes an engine that runs the container sandboxed itself
// runs in (Docker-outside-of-Docker: a CI container with the host's
// socket mounted). Such an engine resolves bind sources on its host, not
// in this container: a path is visible to it only when this container has
// it bound from the host at the same path. What it cannot see is copied
// into a volume it owns, and the init is reached over the container's
// attached streams (copy.go). The staging of grants (mounts made in this
// container's mount namespace) and the check of a started container's
// binds through /proc/PID/root (a host pid) cannot work from here, so
// they are off and the bind sources' lstat check is what stands, as for a
// user who is not root.
type outside struct {
	// self names this container in the engine.
	self string
	// binds are this container's mounts (destination → host source; a
	// volume's or a tmpfs's source is never its destination).
	binds []container.MountPoint
	// vm, when set, is the VM the engine runs its containers in (vm.go):
	// what it shares replaces self and binds.
	vm *vmEngine
}

// containerIDRE finds a Docker container id in a path of mountinfo:
// Docker binds each container's /etc/hostname, hosts and resolv.conf from
// /var/lib/docker/containers/ID/.
var containerIDRE = regexp.MustCompile(`/containers/([0-9a-f]{64})/`)

// ownContainerID is the id of the Docker container this process runs in,
// read from its mount table, "" when there is none.
func ownContainerID() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	if m := containerIDRE.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}

// engineOutside says how the engine sees this process's paths when it
// does not share them: it runs this process's own container
// (engineContainer), or runs its containers in a VM (engineVM). nil: the
// engine shares this process's paths.
func (b *Backend) engineOutside(ctx context.Context) *outside {
	if o := b.engineContainer(ctx); o != nil || b.outsideErr != nil {
		return o
	}
	return b.engineVM(ctx)
}

// engineVM asks the engine whether it runs its containers in a VM
// (detectVM); nil when it does not, or did not answer (Start then fails
// on the engine anyway). An answer is kept.
func (b *Backend) engineVM(ctx context.Context) *outside {
	b.vmMu.Lock()
	defer b.vmMu.Unlock()
	if b.vmKnown {
		return b.vm
	}
	if !mayRunInVM(b.api.DaemonHost(), runtime.GOOS) {
		b.vmKnown = true
		return nil
	}
	info, err := b.engineInfo(ctx)
	if err != nil {
		return nil
	}
	home, _ := os.UserHomeDir()
	if vm := detectVM(info, b.api.DaemonHost(), home, runtime.GOOS); vm != nil {
		b.vm = &outside{vm: vm}
	}
	b.vmKnown = true
	return b.vm
}

// engineContainer asks the engine whether it runs this process's own
// container; nil when it does not. The answer is kept.
func (b *Backend) engineContainer(ctx context.Context) *outside {
	b.outsideOnce.Do(func() {
		id := ownContainerID()
		if id == "" {
			return
		}
		ins, err := b.api.ContainerInspect(ctx, id)
		if err != nil {
			if !cerrdefs.IsNotFound(err) {
				b.outsideErr = b.engineErr("inspect this container "+id, err)
			}
			return
		}
		b.outside = outsideOf(ins)
	})
	return b.outside
}

// outsideOf is the engine's view of the container ins: its mounts, every
// kind, for the deepest decides (visible). A volume or a tmpfs inside a
// bind from the host hides what the engine would bind from that path.
func outsideOf(ins container.InspectResponse) *outside {
	o := &outside{self: strings.TrimPrefix(ins.Name, "/"), binds: append([]container.MountPoint(nil), ins.Mounts...)}
	if ins.HostConfig != nil {
		for dst := range ins.HostConfig.Tmpfs {
			o.binds = append(o.binds, container.MountPoint{Type: mount.TypeTmpfs, Destination: dst})
		}
	}
	return o
}

// visible reports whether the engine sees path (a path of this container)
// at the same path: it lies in a bind from the host whose source is its
// destination, or it is /dev/null, which the engine has as well.
func (o *outside) visible(path string) bool {
	if o.vm != nil {
		return o.vm.visible(path)
	}
	if path == "/dev/null" {
		return true
	}
	var best *container.MountPoint
	for i := range o.binds {
		m := &o.binds[i]
		if pathglob.Within(path, filepath.Clean(m.Destination)) {
			if best == nil || len(m.Destination) > len(best.Destination) {
				best = m
			}
		}
	}
	return best != nil && filepath.Clean(best.Source) == filepath.Clean(best.Destination)
}
