// Package isolation defines the Backend interface every isolation tier
// implements and the Plan each backend consumes. Subpackages hold the
// tiers: process (Linux namespaces, cgroups, seccomp and the in-sandbox
// init), container (Docker Engine API), none (host processes with a
// scrubbed environment), and egress (the per-run proxy and its bridge).
//
// This package owns no policy: it enforces a Plan and refuses, with
// ErrUnsupported, what the host cannot enforce. It must not import tool,
// permissions, policy or sandbox.
package isolation
