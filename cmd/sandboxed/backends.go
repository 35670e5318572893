package main

import (
	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// backends are the isolation tiers of this build.
func backends() map[isolation.Tier]isolation.Backend {
	return map[isolation.Tier]isolation.Backend{
		isolation.TierProcess: process.New(),
	}
}

func newController() *sandbox.Controller {
	return &sandbox.Controller{
		StateDir:   sandbox.StateDir(),
		RuntimeDir: sandbox.RuntimeDir(),
		Backends:   backends(),
	}
}

// containerChecks reports the container tier; filled in by the container
// backend.
func containerChecks(c *cli.Context) []check { return nil }
