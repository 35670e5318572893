// Command sandboxed runs the shell-command tools LLM agents call inside a
// sandbox chosen from each tool's security fields and the operator's policy.
//
// This package is the CLI only: each command group lives in its own file
// (run.go, tool*.go, permissions.go, policy.go, audit.go, images.go,
// ops.go, discover.go, mcp.go, testing.go), parses its flags, calls one
// package and renders the result — data to the app's Writer, diagnostics
// to its ErrWriter. Exit codes are chosen in one place, exitCode (exit.go).
// It must hold no sandboxing logic of its own.
//
// The same binary is also the sandbox's init: main hands over to
// sbinit.Main before any CLI parsing when it was started as one.
package main
