package hostsetup

import (
	"slices"
	"strings"
)

// Environment returns what sandboxed can tell about the container it runs
// in, read as ProbeUser reads it.
func (s *System) Environment() Container { return s.probeContainer() }

// The engine flags and pod settings that let the process tier run inside a
// container, as measured with Docker 20.10 on cgroup v1 (a default
// container refuses each piece: the seccomp profile refuses the
// namespaces, CAP_SYS_ADMIN makes them and mounts, CAP_NET_ADMIN brings
// the sandbox's loopback up, and the cgroup filesystem is mounted
// read-only).
const (
	processDockerFlags = "--cap-add SYS_ADMIN --cap-add NET_ADMIN --security-opt seccomp=unconfined -v /sys/fs/cgroup:/sys/fs/cgroup:rw"
	processPodSettings = "securityContext: {capabilities: {add: [SYS_ADMIN, NET_ADMIN]}, seccompProfile: {type: Unconfined}} with a writable /sys/fs/cgroup (a hostPath volume), or privileged: true"
	dockerSocketFix    = "mount the host's Docker socket (-v /var/run/docker.sock:/var/run/docker.sock: it gives root on that host) or set DOCKER_HOST to an engine kept for sandboxes"
)

// Fix says how to let tier run inside the container c describes: which
// `docker run` flags or pod securityContext enable it, and, where the
// build has it, the landlock tier as the way that needs no privilege.
// root says whether sandboxed runs as root; tiers are the tiers of this
// build. Outside a container it is "": the refusal's own fix stands.
func (c Container) Fix(tier string, root bool, tiers []string) string {
	if !c.Inside {
		return ""
	}
	var fixes []string
	switch tier {
	case "process":
		fix := "start this container with " + processDockerFlags + " (in Kubernetes, " + processPodSettings + ")"
		if !root {
			fix = "run this container as root (--user 0; runAsUser: 0), started with " + processDockerFlags +
				" (in Kubernetes, " + processPodSettings + "): a container's user has neither the subordinate ids nor the delegated cgroup the process tier needs without root"
		}
		fixes = append(fixes, fix+"; the host's cgroup tree is then shared, and gc leaves the host's other runs alone")
	case "container":
		if c.DockerSocket == "" {
			fixes = append(fixes, dockerSocketFix)
		}
	case "none":
		if root {
			fixes = append(fixes, "as root the none tier keeps the run in a cgroup of its own: start this container with -v /sys/fs/cgroup:/sys/fs/cgroup:rw")
		}
	}
	if tier != "landlock" && slices.Contains(tiers, "landlock") {
		fixes = append(fixes, "or, with no privilege at all, the landlock tier: --isolation landlock --approve isolation-landlock (or the policy's isolation.landlock)")
	}
	return strings.Join(fixes, "; ")
}
