package egress

import (
	"errors"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
)

var (
	// ErrBadRule: a host pattern or port is not valid.
	ErrBadRule = netrule.ErrBadRule
	// ErrClosed: the proxy or relay was already closed.
	ErrClosed = errors.New("egress closed")
	// ErrBadHostsFile: a test hosts file line is not "NAME IP...".
	ErrBadHostsFile = errors.New("invalid hosts file")
)
