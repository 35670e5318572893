// Package cgroup makes, limits, measures, kills and removes the cgroup of
// one run, on cgroup v1 (legacy and hybrid hosts, controllers on v1) and v2
// (unified), through github.com/containerd/cgroups/v3.
//
// Every run's cgroup is "<base>/<run-id>" under each hierarchy's root, so
// GC finds the cgroups of crashed runs by name. The base is "sandboxed" as
// root; without root it is what was delegated to the user: on v1
// "sandboxed/user-UID" (made by `sandboxed setup --user`), on v2 a
// transient systemd scope with Delegate=yes asked of the user's own
// manager over D-Bus (scope_linux.go). A resident process that systemd
// started in a unit with Delegate=yes (`sandboxed serve` from the units in
// contrib/systemd) uses its unit's cgroup instead, as root too
// (AdoptUnitCgroup, unit_linux.go). A user with no delegated cgroup
// gets Host.NoDelegation, and every run that needs a limit is refused. A limit that cannot be
// set is an error wrapping isolation.ErrUnsupported with the fix: the
// caller never runs without it.
//
// It must not know about namespaces, inits or plans.
package cgroup
