package landlock

import "errors"

// ErrBadPlan: the plan is not for this tier, or asks what it cannot be.
var ErrBadPlan = errors.New("invalid plan for the landlock tier")
