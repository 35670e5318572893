// Package process is the Linux process isolation tier: each run is one
// init (package sbinit) re-executed from this binary into new mount, pid,
// network, ipc, uts and cgroup namespaces (and a user namespace for the
// elevated privilege), inside the run's cgroup, with a read-only root built
// from the host's system directories and the plan's grants, no
// capabilities, no_new_privs and a seccomp filter.
//
// It owns starting, killing and cleaning up that init and its cgroup, and
// probing what the host can enforce. It must not decide policy: it enforces
// a Plan or refuses it with isolation.ErrUnsupported.
//
// A binary that uses this backend must call sbinit.Main when sbinit.IsInit
// reports true, first thing in main (tests: in TestMain).
package process
