package permissions

import (
	"errors"
	"fmt"

	"github.com/sandboxed-dev/sandboxed/tool"
)

// ErrInvalid: a permission string does not fit the grammar, or holds a
// value that cannot be resolved (an unsubstituted parameter, a relative
// working directory, another user's home directory).
var ErrInvalid = errors.New("invalid permission")

// PermissionError names the permission that failed, its position in
// required-permissions, and why. errors.Is(err, ErrInvalid) holds.
type PermissionError struct {
	Index      int    // position in required-permissions
	Permission string // as given, after parameter substitution
	Reason     string // why it failed, when the grammar check passed
	Err        error  // the syntax error from tool.ParsePermission, if any
}

func (e *PermissionError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("required-permissions[%d]: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("required-permissions[%d]: permission %q: %s (grammar: %s)",
		e.Index, e.Permission, e.Reason, tool.PermissionGrammar)
}

// Unwrap makes errors.Is(err, ErrInvalid) hold and exposes the syntax error.
func (e *PermissionError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalid, e.Err}
	}
	return []error{ErrInvalid}
}
