package isolation

import "errors"

var (
	// ErrUnsupported: the host cannot enforce something the plan asks for.
	// The run is refused; it never falls back to weaker isolation.
	ErrUnsupported = errors.New("unsupported")
	// ErrClosed: the sandbox was already closed.
	ErrClosed = errors.New("sandbox closed")
)

// UnsupportedError names what is missing and how to fix it.
type UnsupportedError struct {
	What string // e.g. "memory cgroup controller"
	Fix  string // e.g. "mount the memory controller or boot with cgroup_enable=memory"
}

func (e *UnsupportedError) Error() string {
	if e.Fix == "" {
		return "host cannot enforce " + e.What
	}
	return "host cannot enforce " + e.What + ": " + e.Fix
}

// Unwrap makes errors.Is(err, ErrUnsupported) hold.
func (e *UnsupportedError) Unwrap() error { return ErrUnsupported }
