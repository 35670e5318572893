package tool

import "errors"

// Sentinel errors of binding, substitution, transforms and schema export.
// Every error these return wraps exactly one of them; test with errors.Is.
var (
	// ErrUnknownParam: an argument names no declared parameter.
	ErrUnknownParam = errors.New("unknown parameter")
	// ErrMissingParam: required parameters were not given and have no default.
	ErrMissingParam = errors.New("missing required parameter")
	// ErrInvalidParam: a value has the wrong type or breaks a validation rule.
	ErrInvalidParam = errors.New("invalid parameter value")
	// ErrBadArgs: a command-line argument or --params-json document is malformed.
	ErrBadArgs = errors.New("malformed arguments")
	// ErrDefaultCycle: parameter defaults reference each other in a cycle.
	ErrDefaultCycle = errors.New("parameter defaults form a cycle")
	// ErrTransform: a transform failed, ran too long or used too much memory.
	ErrTransform = errors.New("transform failed")
	// ErrUnsafeValue: a value cannot be placed literally where it is used
	// (a NUL byte, a line break in a here-document, a non-integer in $(( ))).
	ErrUnsafeValue = errors.New("value cannot be substituted safely")
	// ErrUnsafeContext: a reference sits where no quoting can make a value
	// literal (inside backticks, ${...}, a PowerShell here-string).
	ErrUnsafeContext = errors.New("reference in a context that cannot be quoted")
	// ErrUnsupportedExec: the command cannot run on this platform as written
	// (cmd: on Linux, no command for the platform, an interpreter whose
	// quoting we cannot do).
	ErrUnsupportedExec = errors.New("unsupported execution")
	// ErrSchema: a function schema cannot be generated.
	ErrSchema = errors.New("cannot generate function schema")
)
