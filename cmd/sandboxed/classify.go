package main

import (
	"errors"

	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// classify maps package sentinels to exit codes.
func classify(err error) (int, bool) {
	switch {
	case errors.Is(err, tool.ErrInvalid), errors.Is(err, tool.ErrNotFound),
		errors.Is(err, tool.ErrConflict), errors.Is(err, tool.ErrBadArgs),
		errors.Is(err, tool.ErrUnknownParam), errors.Is(err, tool.ErrMissingParam),
		errors.Is(err, tool.ErrInvalidParam), errors.Is(err, policy.ErrInvalidPolicy):
		return exitUsage, true
	case errors.Is(err, policy.ErrDenied), errors.Is(err, policy.ErrApprovalRequired):
		return exitDenied, true
	}
	return 0, false
}
