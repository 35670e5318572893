package none

import "errors"

// ErrBadPlan: the plan is not for this tier.
var ErrBadPlan = errors.New("invalid plan for the none tier")
