// Package reown hands a write grant to the uid a sandbox runs as and
// hands what is in it back to the invoking user afterwards: the one
// implementation behind the container tier's never-root hand-back and a
// reduced tool's write grants (the process tier without idmapped mounts,
// the container tier).
//
// It walks by descriptors and never follows a link out of the grant
// (Reown), keeps the grant folder's own mode and ACLs across the run
// (Folder), and describes one hand-over for a helper that runs it inside
// a user namespace (Job), where the invoking user has no root.
//
// It must stay small and import nothing of sandboxed: the sandbox init
// links it to run a Job.
package reown
