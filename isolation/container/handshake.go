package container

import (
	"context"
	"fmt"
	"net"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
)

// initArgs is the init's argv after the binary: dial the control socket.
var initArgs = sbinit.ConnectArgs

// handshake hands the init on conn its configuration and returns the
// client of its control channel. The engine already built the root,
// dropped privileges and applied seccomp and rlimits, so the init only
// serves commands (and relays egress when the plan has it).
func handshake(ctx context.Context, conn *net.UnixConn, p *isolation.Plan) (initConn, error) {
	cl := sbinit.NewClient(conn)
	cl.KillGrace = p.Limits.KillGrace
	if _, err := cl.Handshake(ctx, initConfig(p)); err != nil {
		_ = cl.Close()
		return nil, fmt.Errorf("hand the plan to the init: %w", err)
	}
	return cl, nil
}

// initConfig is the init's configuration for p, whichever channel carries
// it (a control socket, or the stream over a container's attached
// streams).
func initConfig(p *isolation.Plan) *sbinit.Config {
	cfg := &sbinit.Config{RunID: p.RunID, Spec: p.Spec, Egress: sbinit.NewEgressRelay(p.Egress)}
	if p.Runtime == "runsc" {
		// The engine's pids limit bounds gVisor's host tasks, not the
		// tool's processes (runscHostPids); gVisor's kernel is the
		// sandbox's own, so the uid's task count inside is the tool's,
		// which RLIMIT_NPROC bounds exactly: the spec's limit less the
		// init's spare threads, which run as another uid.
		cfg.NprocLimit = isolation.SpecPids(p.Spec) - isolation.InitSpareThreads
	}
	return cfg
}
