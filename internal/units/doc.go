// Package units owns the one grammar of sizes and durations that every
// file sandboxed reads uses: tool definitions, the operator's policy and
// the command line. A cap in a policy and a request in a tool are
// written the same way and mean the same number, so comparing them is
// comparing like with like.
//
// Sizes are binary multiples whatever the spelling (1K = 1KB = 1KiB =
// 1024 bytes, 1MB = 1MiB = 1048576 bytes). Durations are milliseconds
// when written as a bare integer, otherwise number+unit pairs (30s, 5m,
// 1h30m, 30d, 2w).
//
// The package is pure: it parses and formats, makes no syscalls and
// imports nothing of sandboxed, so tool, permissions and policy can all
// use it.
package units
