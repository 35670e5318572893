package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// poolFlags are the warm pool settings of a resident controller (serve,
// mcp); the policy's pool section is their default.
func poolFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "pool-size", EnvVars: []string{"SANDBOXED_POOL_SIZE"},
			Usage: "warm sandboxes kept ready per kind (tier, privilege, user namespace); 0 turns the pool off (default: the policy's pool.size, 2)"},
		&cli.DurationFlag{Name: "pool-idle", EnvVars: []string{"SANDBOXED_POOL_IDLE"},
			Usage: "give a kind's warm sandboxes back after this long without a run of that kind; 0: never (default: the policy's pool.idle, 1m)"},
	}
}

// residentGCPercent is the garbage collector's target of a resident
// controller, whose live heap is small (a few MB) while each call
// allocates several hundred KB (the MCP SDK's decoders, plans, records):
// at Go's default of 100 it collected every few calls. GOGC in the
// environment wins.
const residentGCPercent = 400

// poolSettings are the pool settings of pol, overridden by the flags.
// Only the resident controllers (serve, mcp) have a pool: it also sets
// their garbage collector's target (residentGCPercent).
func poolSettings(c *cli.Context, pol *policy.Policy) (sandbox.PoolSettings, error) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(residentGCPercent)
	}
	s := sandbox.PoolSettings{Size: pol.Pool.Size, Idle: time.Duration(pol.Pool.Idle)}
	if c.IsSet("pool-size") {
		s.Size = c.Int("pool-size")
	}
	if c.IsSet("pool-idle") {
		s.Idle = c.Duration("pool-idle")
	}
	if s.Size < 0 || s.Size > policy.MaxPoolSize {
		return s, usageError(fmt.Errorf("--pool-size %d: use 0 (no pool) to %d", s.Size, policy.MaxPoolSize))
	}
	if s.Idle < 0 {
		return s, usageError(fmt.Errorf("--pool-idle %s: use a positive duration, or 0 to keep the pool whatever the idle time", s.Idle))
	}
	return s, nil
}
