// Package e2e tests the built sandboxed binary for real: as root, on a real
// kernel, against a real Docker engine. It runs when SANDBOXED_E2E=1. When
// it is asked to run and cannot (not root, no Docker engine, no runner
// image), it fails: it never passes by skipping.
//
// Every test goes through the CLI a user types and checks, when it ends,
// that no process, cgroup, container, mount, socket or temp dir of any run
// is left behind.
package e2e
