package main

import (
	"errors"
	"fmt"

	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// Exit codes of sandboxed itself. A run exits with the tool's own code
// otherwise.
// The codes a run can end with are sandbox's (sandbox.ExitCodeFor); these
// names are the same constants.
const (
	exitOK      = 0
	exitFailure = 1                   // a command of ours failed for a reason below none of these
	exitUsage   = sandbox.ExitUsage   // usage error or invalid definition
	exitTimeout = sandbox.ExitTimeout // the tool hit its time limit
	exitSandbox = sandbox.ExitSandbox // the sandbox could not be built or failed
	exitDenied  = sandbox.ExitDenied  // refused by policy
)

// codeError carries an exit code chosen where the outcome is known (a run's
// result); silent ones have already printed what the user needs.
type codeError struct {
	code   int
	err    error
	silent bool
}

func (e *codeError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *codeError) Unwrap() error { return e.err }

func usageError(err error) error { return &codeError{code: exitUsage, err: err} }

// exitWith returns an error that makes sandboxed exit with code, printing
// nothing more.
func exitWith(code int) error { return &codeError{code: code, silent: true} }

func isSilent(err error) bool {
	var ce *codeError
	return errors.As(err, &ce) && ce.silent
}

// exitCode is the one place that maps an error to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ce *codeError
	if errors.As(err, &ce) {
		return ce.code
	}
	if code, ok := classify(err); ok {
		return code
	}
	return exitFailure
}
