package main

import (
	"context"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// invocation is what one `sandboxed run` takes from the process that
// asked for it: its working directory, environment and stdin, and the
// controller that runs it. A cold run takes this process's own; a run
// served by `sandboxed serve` its caller's (serve.go).
type invocation struct {
	cwd string    // "": this process's
	env []string  // nil: this process's
	in  io.Reader // stdin (--params-json -)
	// stdinTerminal and canAsk say whether the caller's stdin is a
	// terminal, and whether it can be asked for approval.
	stdinTerminal, canAsk bool
	// ctl is the resident controller (with its pool) of a server; nil
	// makes a controller for the run.
	ctl *sandbox.Controller
	// served: the run is a server's. Signals are the server's own, and a
	// run that needs the caller's terminal is declined (the caller runs
	// it cold).
	served bool
	// start is when a server accepted the call (served runs' traces).
	start time.Time
	// taken, when set, is called once the run is past every point where
	// a server may still decline it: from there on its outcome is the
	// caller's, never to be run again.
	taken func()
}

type invocationKey struct{}

// withInvocation makes inv the invocation of the commands run under ctx.
func withInvocation(ctx context.Context, inv *invocation) context.Context {
	return context.WithValue(ctx, invocationKey{}, inv)
}

// invocationOf is the invocation of c: a served run's, else this
// process's.
func invocationOf(c *cli.Context) *invocation {
	if c != nil && c.Context != nil {
		if inv, ok := c.Context.Value(invocationKey{}).(*invocation); ok {
			return inv
		}
	}
	return &invocation{in: os.Stdin, stdinTerminal: isTerminal(os.Stdin), canAsk: isTerminal(os.Stdin) && isTerminal(os.Stderr)}
}

// getenv is os.Getenv in the invocation's environment.
func (inv *invocation) getenv(name string) string {
	if inv.env == nil {
		return os.Getenv(name)
	}
	v := ""
	for _, kv := range inv.env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
			break // the first of a name, as os.Getenv
		}
	}
	return v
}

// workDir is the invocation's working directory.
func (inv *invocation) workDir() string {
	if inv.cwd != "" {
		return inv.cwd
	}
	wd, _ := os.Getwd()
	return wd
}
