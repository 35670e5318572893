// Package container is the container tier: one fresh Docker container per
// run, made through the Docker Engine API (never the docker CLI), with the
// static sandboxed binary bind-mounted read-only at InitPath as its
// entrypoint, the same init as the process tier.
//
//	host (Backend, sandbox)                      container (init, PID 1)
//	  listen HostDir/init.sock (0666 in a 0700 dir)
//	  ContainerCreate + ContainerStart ----------> /.sandboxed/sandboxed __sandboxed-init
//	                                                   --connect=/.sandboxed/init.sock
//	  accept <------------------------------------ dial (the socket is bind-mounted as a file)
//	  config / exec + stdio fds (SCM_RIGHTS) ----> fork+exec, exit codes back
//	  Close: close channel, ContainerRemove(force, volumes)
//
// Stdio never goes through the engine (no attach, no logs: the log driver
// is "none"), so a run costs two engine calls to start and one to remove.
//
// From a CI container whose engine runs outside it (Docker's socket
// mounted from the host; dood.go), a bind source the engine cannot see is
// copied instead: read grants and the init go into a volume of the run,
// bound read-only from there, and the init speaks sbinit's stream
// protocol over the container's attached streams (copy.go). A write grant
// the engine cannot see is refused.
//
// What the container gets: no network (a lone loopback; egress only through
// the bind-mounted proxy socket the init relays), a read-only root and /dev,
// a size-capped /tmp, all capabilities dropped (elevated runs get at most
// Docker's default set, and only with user namespace remapping or runsc),
// no_new_privs, the engine's masked and read-only /proc paths plus the
// plan's, pids, memory (no swap) and cpu limits, and Docker's default
// seccomp profile narrowed by the plan's (see seccompProfile).
//
// Grant binds: as root, each grant's source is opened without following
// symlinks and mounted from that descriptor (open_tree + move_mount) on a
// staging path under the run's host directory, and the engine is handed
// the staging path, so nothing a tool could swap is resolved by dockerd;
// Close and GC detach the staging mounts. Under runc the mounted targets
// are also checked through /proc/PID/root after start.
//
// Runtime runsc (gVisor) must be registered with --host-uds=open (the init
// dials the bind-mounted proxy socket) and --oci-seccomp (else the profile
// is ignored); sandboxed setup --runtime runsc does it, and a plan that
// asks for runsc on an engine without them is refused. Under runsc the
// pids limit bounds the sandbox's host tasks (see runscHostPids), and an
// OOM kill of the Sentry is read from the engine once the container stops.
//
// Warm containers (Backend.WarmKey, Prestart; warm.go) are started ahead
// of their run with everything a container fixes at start and nothing of
// a run; a claim stages the grants and the egress socket on placeholders
// bound with rslave propagation, sets the run's limits and hands the init
// its configuration. Not under runsc, and without root only for plans
// with no grant and no egress.
//
// It owns the translation of an isolation.Plan into the engine's Config
// and HostConfig, the sandbox lifecycle and gc of containers labelled with
// a run id. It makes no policy decision: it enforces the plan and refuses,
// with isolation.ErrUnsupported, what the engine cannot enforce (engine
// down, image or runtime missing, an elevated run without user namespace
// remapping). It never falls back to a weaker tier.
package container
