// Package specconv owns how each tier honours the OCI runtime spec of a
// plan: for every field of specs.Spec, a tier either enforces it,
// approximates it (and says how), or refuses a plan that sets it. The
// rules are data (Rules); Review walks a spec by reflection, so a field a
// tier does not list is refused, never silently dropped, and a field a
// future version of the spec adds is refused until a tier lists it.
//
// Each backend's converter (process.ConvertSpec, container's translate,
// landlock.ConvertSpec, none, the Kubernetes backend's pod) reads the spec
// after Review and nothing else for what the spec has a field for; the
// planner writes what a tier's run gets into the spec, and records what
// Review approximates in the plan (Plan.Approximations), which explain
// and the run's result show.
//
// The package is pure: no system call, no host state.
package specconv
