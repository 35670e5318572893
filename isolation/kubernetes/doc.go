// Package kubernetes is the Kubernetes backend: one Pod per run, made
// through the API server with client-go's transport (no typed clientset:
// plain JSON requests on the core, networking and node groups).
//
//	host (Backend, sandbox)                     pod sbx-<run id> (one container)
//	  create NetworkPolicy (no rule: nothing in or out)
//	  create ConfigMap (the read grants' files, masks)
//	  create Pod ------------------------------> PID 1: /bin/sh waits for
//	  wait Running (fail fast: unschedulable,      /.sandboxed/control.sock
//	    image missing, sandbox not made)
//	  exec (SPDY) /bin/sh -c 'head -c N > /.sandboxed/init;
//	      exec /.sandboxed/init __sandboxed-init --bridge=/.sandboxed/control.sock'
//	  the init binary (N bytes) --------------> written into a memory emptyDir;
//	                                            the bridge listens, PID 1 execs the
//	                                            init with --connect and dials it
//	  stream protocol (sbinit.StreamClient) <--> bridge <-> init (PID 1, the
//	    config, put (write grants in), exec,       ordinary control protocol)
//	    stdio, signal, egress channels,
//	    stats, get (write grants out)
//	  Close: copy back, end the stream (the init kills everything), delete
//	    pod, ConfigMap and NetworkPolicy, wait until the pod is gone
//
// The stream rides an exec session rather than the container's attach:
// under gVisor's containerd shim an attach carries no stdin.
//
// What the pod gets: the plan's image and RuntimeClass (Plan.Runtime), a
// non-root uid (the plan's; root's runs take 65534; the pod's sandbox
// container runs as 65535, apart from it), a read-only root
// filesystem, every capability dropped, no privilege escalation, the
// container tier's seccomp profile where the nodes have it (a Localhost
// profile the cluster facts advertise, or Settings.SeccompProfile), else
// RuntimeDefault, no service account token, no service links,
// requests equal to limits from the plan's memory and cpus,
// activeDeadlineSeconds as a backstop behind our own timeout, and the
// run id and tool as labels on every object (gc reaps by them). Under a
// gVisor RuntimeClass, a kernel of the pod's own, the init bounds the
// commands' tasks by the plan's pids limit (sbinit.Config.NprocLimit).
//
// Files: read grants travel in the run's ConfigMap (at most MaxReadBytes in
// all, read-only mounts, symlinks and special files left out); write grants
// are emptyDir volumes filled through the init's protocol before the first
// command and copied back after the last (MaxWriteBytes each way; written
// back with openat2 beneath the grant, never through a symlink). Nested
// protected paths and masks are volumes of their own inside the grant, or
// files left out of a read grant.
//
// Network: the pod must have no direct route out. The per-run NetworkPolicy
// denies everything, but only a network plugin that enforces NetworkPolicy
// makes that true, so a run is refused unless its RuntimeClass is annotated
// as having no network (NoNetworkAnnotation) or the operator says the
// cluster enforces NetworkPolicy (Settings.NetworkPolicyEnforced). Egress
// goes through the run's proxy on the host: the init's relay dials the
// egress socket in the pod, the bridge carries each connection over the
// exec stream, and the host dials the proxy's socket.
//
// It makes no policy decision and never falls back: what a pod cannot
// honour (an elevated run, a write grant of a single file, a write grant
// inside a read grant, read grants over the cap) is refused with
// isolation.ErrUnsupported and the fix.
package kubernetes
