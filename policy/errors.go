package policy

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrInvalidPolicy: a policy file does not parse or breaks a rule of
	// the format. Errors carry file:line where the YAML gives one.
	ErrInvalidPolicy = errors.New("invalid policy")
	// ErrInvalidApproval: an --approve value is not one of the known words
	// or a permission string.
	ErrInvalidApproval = errors.New("invalid approval")
	// ErrAuditCorrupt: lines of the audit log other than the last could
	// not be parsed. The records that could be read are still returned.
	ErrAuditCorrupt = errors.New("audit log has unreadable lines")
)

// LoadError locates a problem in a policy file. errors.Is(err,
// ErrInvalidPolicy) holds.
type LoadError struct {
	File string // "" for the built-in policy or bytes given directly
	Line int    // 1-based; 0 when unknown
	Msg  string
}

func (e *LoadError) Error() string {
	file := e.File
	if file == "" {
		file = "policy"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", file, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", file, e.Msg)
}

// Unwrap makes errors.Is(err, ErrInvalidPolicy) hold.
func (e *LoadError) Unwrap() error { return ErrInvalidPolicy }

var (
	// ErrDenied: the policy denies the run.
	ErrDenied = errors.New("denied by policy")
	// ErrApprovalRequired: the run needs approvals that were not given.
	ErrApprovalRequired = errors.New("approval required")
)

// Error codes of results, after spec 003.
const (
	// CodePermissionDenied: the policy denied the run, or an approval it
	// needed was not given.
	CodePermissionDenied = "PERMISSION_DENIED"
	// CodeUserRejected: the user declined an approval prompt (the CLI sets
	// it; Decide never prompts).
	CodeUserRejected = "USER_REJECTED"
)

// DecisionError is the error of a decision that does not allow the run.
// errors.Is(err, ErrDenied) or errors.Is(err, ErrApprovalRequired) holds.
type DecisionError struct {
	Tool    string
	Verdict Verdict
	// Subjects are the denied items, or the items needing approval.
	Subjects []string
	// Code is the result error code (CodePermissionDenied).
	Code string
	// Hint is Decision.Hint(): what would let the run go ahead.
	Hint string
}

func (e *DecisionError) Error() string {
	what := "denied by policy"
	if e.Verdict == NeedsApproval {
		what = "needs approval"
	}
	return fmt.Sprintf("run %s: %s: %s", e.Tool, what, strings.Join(e.Subjects, ", "))
}

// Unwrap returns ErrDenied or ErrApprovalRequired.
func (e *DecisionError) Unwrap() error {
	if e.Verdict == NeedsApproval {
		return ErrApprovalRequired
	}
	return ErrDenied
}

// Err returns nil when the decision allows the run, else a *DecisionError
// naming what was denied or still needs approval.
func (d Decision) Err() error {
	if d.Verdict == Allow {
		return nil
	}
	e := &DecisionError{Tool: d.Tool, Verdict: d.Verdict, Code: CodePermissionDenied, Hint: d.Hint()}
	for _, it := range d.Items {
		if it.Verdict == d.Verdict {
			e.Subjects = append(e.Subjects, it.Subject)
		}
	}
	return e
}
