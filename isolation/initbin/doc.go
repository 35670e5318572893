// Package initbin carries the small init binary (cmd/sandboxed-init)
// inside the sandboxed binary and hands it out as a sealed memory file.
//
// A sandbox's init is a fresh process, and a Go binary pays for every
// package it links each time it starts: the whole CLI (Docker client,
// JavaScript engine, MCP) takes about 4 ms to reach main, the init alone
// about 1. `make build` builds cmd/sandboxed-init first and then the CLI
// with the build tag embedinit, which embeds it here. Without the tag
// (plain `go build`, `go test`) Embedded is false and the backends run
// their own executable as the init, which works the same, only slower to
// start.
//
// The init runs from a memfd sealed against writes, growing and
// shrinking: nothing is written to disk, nothing is left behind, and
// nothing — not even a process that could open /proc/PID/exe of the init
// — can change the binary between its start and the next.
package initbin
