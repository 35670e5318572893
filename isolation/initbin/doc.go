// Package initbin carries the small init binary (cmd/sandboxed-init)
// inside the sandboxed binary and hands it out to be executed: from the
// user's cache directory when that is safe, else as a sealed memory file.
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
// Cached writes it once to CACHE/init-HASH (mode 0555) and hands that out
// while the file and every directory above it can be changed only by root
// or this user, and the file system allows exec: executing from the page
// cache costs nothing per start. (No grant reaches the cache: sandboxed
// adds it to the policy's denied paths.) Otherwise Open copies it into a
// memfd sealed against writes, growing and shrinking — nothing on disk,
// and nothing can change it — at about a millisecond per start.
package initbin
