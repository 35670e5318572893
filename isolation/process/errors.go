package process

import "errors"

// ErrBadPlan: the plan is incomplete or not for this tier.
var ErrBadPlan = errors.New("invalid plan for the process tier")
