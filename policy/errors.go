package policy

import (
	"errors"
	"fmt"
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
