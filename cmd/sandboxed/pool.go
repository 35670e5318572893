package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// poolFlags are the warm pool settings of a resident controller (serve,
// mcp).
func poolFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "pool-size", Value: sandbox.DefaultPoolSize, EnvVars: []string{"SANDBOXED_POOL_SIZE"},
			Usage: "warm sandboxes kept ready per kind (tier, privilege, user namespace); 0 turns the pool off"},
		&cli.DurationFlag{Name: "pool-idle", Value: sandbox.DefaultPoolIdle, EnvVars: []string{"SANDBOXED_POOL_IDLE"},
			Usage: "give a kind's warm sandboxes back after this long without a run of that kind (0: never)"},
	}
}

// poolSettings reads the pool flags.
func poolSettings(c *cli.Context) (sandbox.PoolSettings, error) {
	s := sandbox.PoolSettings{Size: c.Int("pool-size"), Idle: c.Duration("pool-idle")}
	if s.Size < 0 || s.Size > 64 {
		return s, usageError(fmt.Errorf("--pool-size %d: use 0 (no pool) to 64", s.Size))
	}
	if s.Idle < 0 {
		return s, usageError(fmt.Errorf("--pool-idle %s: use a positive duration, or 0 to keep the pool whatever the idle time", s.Idle))
	}
	return s, nil
}
