package sandbox

import (
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// Status is how a run ended. The values are stable: they appear in
// `run --json`, run records, audit lines and MCP results.
type Status string

const (
	StatusOK      Status = "ok"
	StatusFailed  Status = "failed"  // the tool ran and exited non-zero
	StatusTimeout Status = "timeout" // killed at its time limit; ExitTimeout
	StatusOOM     Status = "oom"     // killed by the memory limit; ExitKilled
	StatusDenied  Status = "denied"  // refused by policy before anything ran; ExitDenied
	StatusError   Status = "error"   // the sandbox itself failed; ExitSandbox (see ExitCodeFor)
)

// Error codes, after the standard tool error codes of spec 003.
const (
	CodeValidation      = "VALIDATION_ERROR"
	CodeInvalidParams   = "INVALID_PARAMETERS"
	CodeMissingParam    = "MISSING_REQUIRED_PARAM"
	CodePermission      = "PERMISSION_DENIED"
	CodeSecurity        = "SECURITY_VIOLATION"
	CodeUserCancelled   = "USER_CANCELLED"
	CodeResourceMissing = "RESOURCE_NOT_FOUND"
	CodeQuota           = "QUOTA_EXCEEDED"
	CodeTimeout         = "TIMEOUT"
	CodeInitFailed      = "TOOL_INITIALIZATION_FAILED"
	CodeExecFailed      = "TOOL_EXECUTION_FAILED"
	CodeUnexpected      = "UNEXPECTED_ERROR"
)

// Result is one run's outcome: the object `run --json` prints and the run
// record stores. Field names are documented in docs/ci.md; do not rename.
type Result struct {
	RunID           string        `json:"run_id"`
	Tool            string        `json:"tool"`
	Version         string        `json:"version,omitempty"`
	Isolation       string        `json:"isolation"`
	Status          Status        `json:"status"`
	ExitCode        int           `json:"exit_code"`
	Stdout          string        `json:"stdout"`
	Stderr          string        `json:"stderr"`
	StdoutTruncated bool          `json:"stdout_truncated"`
	StderrTruncated bool          `json:"stderr_truncated"`
	DurationMS      int64         `json:"duration_ms"`
	PeakMemoryBytes int64         `json:"peak_memory_bytes"`
	Steps           []StepResult  `json:"steps"`
	Egress          []EgressEntry `json:"egress"`
	Notes           []string      `json:"notes,omitempty"`
	// Warnings need the user's attention after the run, such as a
	// protected path the tool created where none existed to protect.
	Warnings []string   `json:"warnings,omitempty"`
	Error    *ErrorInfo `json:"error,omitempty"`
	// Changes is what the run changed under its write grants, and
	// whether `sandboxed undo` can put it back; absent from a run with no
	// write grant (or records off).
	Changes *ChangesInfo `json:"changes,omitempty"`
	// Observed is what an observed run (permissions learn) read, wrote
	// and executed; absent from every other run.
	Observed []isolation.Access `json:"observed,omitempty"`

	StartedAt time.Time `json:"started_at"`
}

// StepResult is one step of a run. Status is a run status, or
// StatusSkipped ("skipped") for a step that did not run.
type StepResult struct {
	Name       string `json:"name"`
	Status     Status `json:"status"`
	ExitCode   int    `json:"exit_code"`
	DurationMS int64  `json:"duration_ms"`
	Skipped    bool   `json:"skipped"`
	Attempts   int    `json:"attempts,omitempty"`
	// Reason says why a step was skipped or could not run.
	Reason string `json:"reason,omitempty"`
	// Fallback is set when every attempt failed and the result is the
	// fallback command's.
	Fallback bool `json:"fallback,omitempty"`
	// UseTool names the sub-tool of a use-tool step; its steps follow it
	// in Steps, named STEP/SUBSTEP.
	UseTool string `json:"use_tool,omitempty"`
	// Cleanup is set for a resources.cleanup command, which runs after
	// every other step, also after a failure, a timeout or an interrupt.
	Cleanup bool `json:"cleanup,omitempty"`
}

// EgressEntry is one connection attempt through the run's proxy.
type EgressEntry struct {
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	// Credentials name the credentials whose real values the proxy put
	// into requests of this connection.
	Credentials []string `json:"credentials,omitempty"`
	BytesUp     int64    `json:"bytes_up"`
	BytesDown   int64    `json:"bytes_down"`
}

// ErrorInfo explains a status other than ok/failed.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// Exit codes of a run or a step that did not end with the tool's own code.
// ExitCodeFor is the one mapping from a status to these.
const (
	// ExitUsage: the caller's input was wrong (a parameter, a path that is
	// not there, an invalid definition).
	ExitUsage = 2
	// ExitTimeout: killed at a time limit.
	ExitTimeout = 124
	// ExitSandbox: the sandbox could not be built, or failed.
	ExitSandbox = 125
	// ExitDenied: refused by the policy.
	ExitDenied = 126
	// ExitInterrupted: sandboxed was interrupted (SIGINT, 128+2).
	ExitInterrupted = 130
	// ExitKilled: killed with SIGKILL (128+9), by the memory limit or at
	// the end of the run.
	ExitKilled = 137
)

// ExitCodeFor maps a status to an exit code: own (the tool's code) for ok
// and failed, 124 timeout, 137 oom, 126 denied; for an error, 2 when
// errCode says the caller's input was wrong, 130 when interrupted, else
// 125. Results, step results and the process exit code of `sandboxed
// run` all take their codes from it.
func ExitCodeFor(status Status, own int, errCode string) int {
	switch status {
	case StatusOK, StatusFailed:
		return own
	case StatusTimeout:
		return ExitTimeout
	case StatusOOM:
		return ExitKilled
	case StatusDenied:
		return ExitDenied
	}
	switch errCode {
	case CodeValidation, CodeInvalidParams, CodeMissingParam, CodeResourceMissing:
		return ExitUsage
	case CodeUserCancelled:
		return ExitInterrupted
	}
	return ExitSandbox
}

// ProcessExitCode maps a result to the process exit code of `sandboxed
// run` (ExitCodeFor of its status, code and error).
func (r *Result) ProcessExitCode() int {
	code := ""
	if r.Error != nil {
		code = r.Error.Code
	}
	return ExitCodeFor(r.Status, r.ExitCode, code)
}
