// Package none is the `isolation: none` tier: commands run on the host, as
// the invoking user, with the scrubbed environment the plan gives them,
// each in its own session and process group. A small init (package
// sbinit, re-executed without namespaces) starts them, reaps them and, as
// a child subreaper, their orphans; the run's cgroup still enforces the
// plan's memory and pids limits (refused when it cannot), and Kill and
// Close kill the whole cgroup.
//
// It confines nothing else: no filesystem, network or syscall limits. It
// must not pretend otherwise, and it must not decide when this tier is
// allowed (that is the policy's job).
package none
