// Package none is the `isolation: none` tier: commands run on the host, as
// the invoking user, with the scrubbed environment the plan gives them,
// each in its own session and process group. A small init (package
// sbinit, re-executed without namespaces) starts them, reaps them and, as
// a child subreaper, their orphans; the run's cgroup enforces the plan's
// memory and pids limits where the host has one this process may use, and
// Kill and Close kill the whole cgroup. Where it has none (a container's
// read-only cgroupfs, a user with no delegated cgroup) each command gets
// the limits as rlimits (per process for memory, per uid for processes:
// approximations, which the plan's notes state), and the init kills every
// process descending from it, daemons included, at the end.
//
// It confines nothing else: no filesystem, network or syscall limits. It
// must not pretend otherwise, and it must not decide when this tier is
// allowed (that is the policy's job).
package none
