package container

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// outside describes an engine that runs the container sandboxed itself
// runs in (Docker-outside-of-Docker: a CI container with the host's
// socket mounted). Such an engine resolves bind sources on its host, not
// in this container: a path is visible to it only when this container has
// it bound from the host at the same path. The staging of grants (mounts
// made in this container's mount namespace) and the check of a started
// container's binds through /proc/PID/root (a host pid) cannot work from
// here, so they are off and the bind sources' lstat check is what stands,
// as for a user who is not root.
type outside struct {
	// self names this container in the engine.
	self string
	// binds are this container's bind mounts (destination → host source).
	binds []container.MountPoint
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

// engineOutside asks the engine whether it runs this process's own
// container; nil when it does not (the engine shares this process's
// paths). The answer is kept.
func (b *Backend) engineOutside(ctx context.Context) *outside {
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
		o := &outside{self: strings.TrimPrefix(ins.Name, "/")}
		for _, m := range ins.Mounts {
			if m.Type == mount.TypeBind {
				o.binds = append(o.binds, m)
			}
		}
		b.outside = o
	})
	return b.outside
}

// visible reports whether the engine sees path (a path of this container)
// at the same path: it lies in a bind from the host whose source is its
// destination.
func (o *outside) visible(path string) bool {
	var best *container.MountPoint
	for i := range o.binds {
		m := &o.binds[i]
		if path == m.Destination || strings.HasPrefix(path, strings.TrimSuffix(m.Destination, "/")+"/") {
			if best == nil || len(m.Destination) > len(best.Destination) {
				best = m
			}
		}
	}
	return best != nil && filepath.Clean(best.Source) == filepath.Clean(best.Destination)
}

// check refuses a run whose bind sources (sources) the engine cannot see
// at the same paths, naming each.
func (o *outside) check(sources []string) error {
	var hidden []string
	for _, s := range sources {
		if !o.visible(s) {
			hidden = append(hidden, s)
		}
	}
	if len(hidden) == 0 {
		return nil
	}
	return &isolation.UnsupportedError{
		What: "the container tier from inside container " + o.self + ", whose Docker engine runs it and resolves bind sources on its own host: " +
			strings.Join(hidden, ", ") + " not mounted into this container from the host at the same path",
		Fix: "mount each from the host at the same path (docker run -v /srv/ci:/srv/ci; for the run directory and the init: SANDBOXED_RUNTIME_DIR and XDG_CACHE_HOME under such a directory), or run sandboxed on the host",
	}
}
