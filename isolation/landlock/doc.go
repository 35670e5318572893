// Package landlock is the landlock tier: a tool runs with no namespaces,
// no mounts and no cgroup of its own, confined by what an unprivileged
// process may always do to itself, so that it runs where a CI job runs —
// inside a container with Docker's or the kubelet's defaults, where user
// namespaces cannot be made and the cgroupfs is read-only.
//
// The init (package sbinit, re-executed without namespaces) stays outside
// the confinement: it is the commands' child subreaper, which they cannot
// signal, and it kills every process descending from it, daemons that
// left their session included, at a timeout and at the end of the run.
// Each command confines itself before it executes (sbinit.Confine):
//
//   - files: Landlock. Read and execute the system directories; read the
//     parts of /etc programs need and /proc; read the read grants; write
//     the write grants and the run's scratch directory (Plan.Scratch, its
//     TMPDIR and HOME). Nothing else of the host is readable. A read grant
//     holding the policy's masks gets a rule per entry instead of one
//     (sbinit.LandlockPath.Except): the masked paths get none, so their
//     names stay listed and their contents cannot be read.
//   - network: without egress none: socket() fails for every family
//     (seccomp), and on a kernel of Landlock ABI 4 no TCP connect or bind
//     is allowed either. With egress (network:external grants) the init
//     supervises every connect() of the commands (sbinit.Connect: seccomp
//     user notification): 127.0.0.1:ProxyPort gets a socket of the init's
//     own connected to the run's proxy, anything else ECONNREFUSED.
//     Landlock's TCP rules match a port, not an address, so the tool gets
//     none: its own connect never reaches the kernel. A network:localhost
//     port at 127.0.0.1 is answered the same way, through the proxy's
//     forwarding. Credentials and HTTP rules are refused (no trust bundle
//     can be mounted).
//   - system calls: the plan's profile, which the planner narrows for this
//     tier with SeccompRules (no sockets without egress, TCP ones only
//     with it; no bind or listen; Unix socket pairs of stream or seqpacket
//     only, no MSG_FASTOPEN, no System V or POSIX message IPC, no chown or
//     xattr changes, no path truncate).
//   - processes: no_new_privs, no capabilities; signals and abstract Unix
//     sockets scoped to the run on Landlock ABI 6. As root the command runs
//     as an unprivileged uid of its own, chosen per run.
//   - limits: the run's cgroup where this host has one this process may
//     write; otherwise rlimits (memory per process, processes per uid,
//     file size, no core) — approximations the plan's notes state.
//
// A resident controller keeps warm sandboxes of this tier (Prestart): the
// init, started ahead with no config, which holds nothing of any run, and
// the confining start of its first command (sbinit's spare), which waits;
// the claim does the rest of Start (the tool's uid, the scratch directory,
// the config).
//
// What a plan needs and the host's Landlock cannot give (a mask inside a
// write grant; signal scoping below ABI 6 for a tool that shares the user's uid)
// refuses the run, unless the plan accepts that gap by name
// (Plan.AcceptGaps, from the operator's policy). Nothing is weakened in
// silence. It must not decide when this tier is used: the policy does.
package landlock
