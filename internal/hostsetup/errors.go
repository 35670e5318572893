package hostsetup

import "errors"

var (
	// ErrNotRoot: setup changes files only root may change.
	ErrNotRoot = errors.New("must run as root")
	// ErrNoUser: the named user does not exist on this host.
	ErrNoUser = errors.New("no such user")
	// ErrMalformed: a host file (/etc/subuid, a manifest) cannot be read
	// safely; setup changes nothing rather than guess.
	ErrMalformed = errors.New("malformed host file")
	// ErrNoRange: no free subordinate id range is left between the
	// login.defs bounds.
	ErrNoRange = errors.New("no free subordinate id range")
)
