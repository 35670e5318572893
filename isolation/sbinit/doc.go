// Package sbinit is the in-sandbox init and its host-side client. The same
// init runs as PID 1 of every process-tier sandbox (re-executed from the
// sandboxed binary) and of every container-tier sandbox (the container's
// entrypoint).
//
// It owns the control protocol between host and init, the init's
// request loop (exec, signal, reaping), and, for the process tier only,
// building the sandbox root and dropping privileges. It must not make policy
// decisions: it enforces the Config it is given and fails closed when it
// cannot.
//
// # Entry
//
// A binary that may be re-executed as init calls Main early in main (before
// flag parsing) when IsInit reports true:
//
//	func main() {
//		if sbinit.IsInit() {
//			sbinit.Main() // never returns
//		}
//		...
//	}
//
// The init is started with argv[1] == InitArg. Where its control channel
// comes from is a switch: by default the connected socket on fd 3
// (ControlFD, process tier: one end of a socketpair); with
// "--connect=PATH" (ConnectArgs) it dials the Unix socket PATH that the host
// listens on (container tier: PATH is inside a bind-mounted directory).
//
// # Protocol
//
// The control channel is a SOCK_STREAM Unix socket carrying frames: a 4-byte
// big-endian length, then one JSON Message. File descriptors (SCM_RIGHTS) are
// attached to the 4-byte header of the frame that announces them (Message.NFDs),
// so they work across mount namespaces and into containers.
//
//	host (Client)                                  init (PID 1)
//	    | ---- prepare{Skeleton} ------------------> | process tier: the root's
//	    | <---------------------------- prepared --- | skeleton (a warm init's
//	    |                                            | config waits for a claim)
//	    | ---- spare -------------------------------> | landlock tier, warm: start
//	    |                                            | the first command's
//	    |                                            | confining start ahead
//	    |                                            | (spare_linux.go)
//	    | ---- config{Config} ---------------------> | (process tier: written into
//	    |  start init, born in the run's cgroup;     |  the socketpair before the
//	    |  control socket on fd 3 (or accept its     |  init exists; container tier:
//	    |  connection)                               |  after accept)
//	    |                                            | build root, hostname, lo up,
//	    |                                            | egress relay listens,
//	    |                                            | Landlock (process tier),
//	    |                                            | rlimits, drop creds, caps,
//	    |                                            | no_new_privs, seccomp
//	    |                                            | supervised connect's relay
//	    |                                            | and filter (Config.Connect)
//	    |                                            | watch filter (Config.Watch)
//	    | <------------------ ready{pid,landlock} -- | (or error{msg}, then exit 1;
//	    |        [+ the watch filter's listener]     |  with Config.Watch)
//	    |                                            |
//	    | ---- exec{id,args,env,cwd} + 3 fds ------> | fork+exec in own process
//	    | <----------------------- started{id,pid} - | group (or exit{id,127}
//	    | <--------------------- exit{id,code,sig} - | after a message on stderr;
//	    |                                            | with Config.NprocLimit
//	    |                                            | through the init binary,
//	    |                                            | which sets RLIMIT_NPROC)
//	    | ---- signal{id | 0=all, sig} ------------> | kill(-pgid) / kill(-1)
//	    |                                            |
//	    | ---- close -------------------------------> | SIGKILL everything, exit
//
// The process tier's Config carries a Landlock ruleset (NewLandlock,
// computed on the host from the same Setup as the mounts). The init
// applies it to all its threads once the root is built and the relay's
// listeners are bound, while it can still open every path; every command
// it forks inherits it across exec. ready says which Landlock ABI was
// enforced (0: none). The container tier sends none: there the init is
// the container's PID 1 and the engine built the root.
//
// # Stream mode
//
// Where no descriptor can be passed (a Kubernetes pod, reached only
// through an API stream), the protocol rides one byte stream (stream.go):
// a bridge makes each command's pipes itself and multiplexes control,
// stdio, file transfers and egress connections as frames. The bridge
// runs in the init's process (--stdio) or in a process of its own that
// the init dials (BridgeArgs, ConnectArgs); the host side is StreamClient.
//
// Every exec carries three descriptors, stdin, stdout and stderr, made by the
// host (pipes or /dev/null). Exec requests may overlap: ids are chosen by the
// host and are unique per channel. Init reaps every process (orphans
// reparent to it) and forwards SIGTERM and SIGINT it receives to all of them.
package sbinit
