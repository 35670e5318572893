// Package cgroup makes, limits, measures, kills and removes the cgroup of
// one run, on cgroup v1 (legacy and hybrid hosts, controllers on v1) and v2
// (unified), through github.com/containerd/cgroups/v3.
//
// Every run's cgroup is "sandboxed/<run-id>" under each hierarchy's root,
// so GC finds the cgroups of crashed runs by name. A limit that cannot be
// set is an error wrapping isolation.ErrUnsupported with the fix: the
// caller never runs without it.
//
// It must not know about namespaces, inits or plans.
package cgroup
