// Package process is the Linux process isolation tier: each run is one
// init (package sbinit) started into new mount, pid,
// network, ipc, uts and cgroup namespaces, inside the run's cgroup, with a
// read-only root built from the host's system directories and the plan's
// grants, no capabilities, no_new_privs, a seccomp filter, and Landlock as
// a second wall behind the mounts.
//
// # Root and rootless
//
// Without root the init starts in a new user namespace too, which owns
// all the others, and its cgroup is made in what was delegated to the
// user (package cgroup: sandboxed/user-UID on v1, a systemd scope on v2;
// none is a refusal with the fix). As root, a run whose tool would be
// host uid 0 (same-as-user with no invoking user) or root of any kind
// (elevated) gets a user namespace mapping 0 to the first id of the range
// reserved for sandboxed, with the grants idmapped to it for same-as-user
// (userns_linux.go has the table of every case). In every user namespace
// the init keeps its host identity across the exec, so it can run the
// cached init, holding every capability of its namespace as ambient
// capabilities; it opens the root's sources, takes its build identity
// (Config.BuildAs) where it started unmapped, builds the root, and drops
// all of them. Maps of the user's own ids are written by this process;
// subordinate ids (reduced without root) by newuidmap and newgidmap, and
// idmapped grants are prepared here, on the started init's namespace: the
// init then waits for its config until they are done.
//
// It owns starting, killing and cleaning up that init and its cgroup, and
// probing what the host can enforce. It must not decide policy: it enforces
// a Plan or refuses it with isolation.ErrUnsupported.
//
// # Using it
//
// The init is the small cmd/sandboxed-init that `make build` embeds
// (package initbin), run from the cache or a sealed memory file; elevated
// runs, and a build without it, re-execute the running binary, which must
// then hand control to the init first thing in main (in tests: TestMain):
//
//	if sbinit.IsInit() {
//		sbinit.Main() // never returns
//	}
//
// The controller then runs:
//
//	b := process.New()               // none.New() for isolation: none
//	b.Spawner = true                 // a long-lived controller (serve, mcp)
//	if err := b.Check(ctx, plan); err != nil { ... } // wraps ErrUnsupported
//	sb, err := b.Start(ctx, plan)    // nothing left behind on error
//	defer sb.Close(cleanupCtx)       // context.WithoutCancel + deadline
//	exit, err := sb.Exec(stepCtx, isolation.Command{Args: ..., Env: ..., Cwd: ...}, stdio)
//	stats, _ := sb.Stats(ctx)        // also valid after Close
//
// With Spawner set, the inits are started by a small process of the init
// binary (the spawner, started with the first, living as long as the
// controller) rather than forked from the controller: the init is born in
// a user namespace, for which Go cannot use vfork, and a large process's
// fork copies its page tables and makes every page it writes next fault
// and flush the TLB of each CPU it runs on. The spawner starts them as
// Start would (the same clone flags, maps, cgroup, groups dropped for the
// start), sends back each init's pidfd, and reaps them. Where no spawner
// can be started, the inits are started directly.
//
// What the plan must hold: Tier process, a RunID (names the cgroup
// sandboxed/<run-id>, or <delegated cgroup>/<run-id>), Privilege, Limits.MemoryBytes and Limits.Pids (both
// required), Limits.TmpfsBytes (size of /tmp), Limits.KillGrace, and a
// Spec from sandbox.NewSpec: WithUser(invoking uid, gid) for same-as-user,
// WithReadBind/WithWriteBind for grants (sources symlink-resolved; a source
// that became a symlink is refused at start), and the privilege's seccomp
// profile (DefaultSpec sets it). Spec.Process.User, capabilities, rlimits,
// no_new_privs, Mounts (bind and tmpfs), MaskedPaths, ReadonlyPaths,
// Seccomp and Hostname are enforced; Process.Env and Args are not used
// (Command carries them). With Plan.Egress the proxy socket is bound at
// isolation.SandboxSocket and the init relays 127.0.0.1:ProxyPort to it,
// and each LocalhostPorts port through a CONNECT to the proxy; the socket
// must be connectable by the command's uid (mode 0666 in the 0700 HostDir).
//
// Landlock (sbinit.NewLandlock, applied by the init to itself and so to
// every command): the sandbox's root is readable; only /tmp, /dev/shm,
// the writable grants and tmpfs mounts are writable (and the device nodes
// and /proc as files); execution only from the system directories, /tmp
// and grants without noexec; TCP bind is refused and TCP connect reaches
// only the relay's ports (ProxyPort, LocalhostPorts); abstract Unix
// sockets and signals cannot reach outside the sandbox. The kernel's ABI
// decides how much of that holds (files from 1, TCP from 4, scopes from
// 6; Features.LandlockABI, `doctor`); the sandbox's Landlock method and
// SANDBOXED_TRACE say what was enforced. Plan.RequireLandlock refuses
// a kernel below ABI 6. Landlock cannot take back within a writable tree:
// a read-only grant or mask nested in a writable grant is kept read-only
// by its mount alone. Multipath TCP, which Landlock's TCP rules do not
// cover, is refused by the seccomp profile, and the relay listens with
// plain TCP.
//
// An observed plan (Plan.Observe, for permissions learn) also gets the
// watch filter (seccomp.WatchProfile): the init loads it last and sends
// its user-notification listener with ready, and an observer here
// (observe_linux.go) answers every notification with CONTINUE after
// recording the path; Stats.Accesses returns what it saw. Its read-only
// grants of directories become scratch mounts (sbinit.Mount.Scratch): an
// overlay whose upper layer is a tmpfs, so the run's writes never reach
// the host.
//
// Exec's exit is 128+n for a signal n. A command that cannot start exits
// 127 (not found) or 126 with the reason on its stderr. When the OOM killer
// takes the whole sandbox (memory no process owns, like a full /tmp, makes
// the init the largest process), Exec reports 137/SIGKILL and Stats
// OOMKilled; later Execs fail with isolation.ErrClosed-wrapped errors.
//
// The init is born inside the run's cgroup: cloned into it on cgroup v2
// (CLONE_INTO_CGROUP); on v1 the starting thread moves itself into the
// cgroup and forks there (moving another process would cost an RCU grace
// period, ~10 ms). Every package init of the init binary runs again in
// each sandbox, which is why the init is built on its own: package sbinit
// and what it imports must stay light (check with GODEBUG=inittrace=1 on
// the built cmd/sandboxed-init).
//
// Warm sandboxes (isolation.Prestarter, warm_linux.go): Prestart does the
// first half of Start for a pool key (WarmKey: the init binary, the
// invoking ids, the privilege and the user namespace it maps, the masked
// and read-only paths below /proc, the bounding set, the host name and
// the size of /tmp) — the run's cgroup with no limit, the init cloned
// into it and its namespaces, the id maps written, and the skeleton of
// the root built (sbinit.Skeleton: the root tmpfs, system paths, /dev,
// /proc and its masks, the generated /etc files, /tmp, lo up, the
// bounding set cut; a cold start sends the same prepare frame ahead of
// its config) —
// and the init waits for its config on the control socket. Its mount
// namespace stays a slave of the host's until the claim, so a grant's
// source is what the host has then, while the root's own mounts are
// private. Claim does the second half for one plan: its key and checks
// again, the config sent (with the grants prepared here where the init
// built its root as another identity, idmapped with the namespace where
// the plan needs them), the cgroup's limits written while the init adds
// the run's part (grants, the other masks, pivot_root, hostname, egress
// relay, Landlock, credentials, seccomp),
// ready awaited: nothing of the run runs before Claim returns. A claimed
// or discarded sandbox is never handed out again.
//
// internal/bench/startbench measures Start+Exec(true)+Close against
// `bwrap --unshare-all true`, interleaved.
package process
