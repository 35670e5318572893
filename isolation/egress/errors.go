package egress

import "errors"

var (
	// ErrBadRule: a host pattern or port is not valid.
	ErrBadRule = errors.New("invalid egress rule")
	// ErrClosed: the proxy or relay was already closed.
	ErrClosed = errors.New("egress closed")
	// ErrBadHostsFile: a test hosts file line is not "NAME IP...".
	ErrBadHostsFile = errors.New("invalid hosts file")
)
