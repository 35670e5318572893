package container

import (
	"context"
	"fmt"
	"net"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// handshake hands the plan to the init on conn and returns its client.
func handshake(ctx context.Context, conn *net.UnixConn, p *isolation.Plan) (initConn, error) {
	return nil, fmt.Errorf("hand the plan to the init: %w: the init protocol is not wired in", isolation.ErrUnsupported)
}
