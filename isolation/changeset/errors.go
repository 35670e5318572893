package changeset

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels of the package.
var (
	// ErrTooLarge is a grant over the scan's limits: its run cannot be
	// undone or reviewed.
	ErrTooLarge = errors.New("too large to record")
	// ErrConflict is a path changed since the record was taken.
	ErrConflict = errors.New("changed since the run")
	// ErrNotFound is a run with no record.
	ErrNotFound = errors.New("no change record")
	// ErrBusy is a record another process is undoing or applying.
	ErrBusy = errors.New("in use by another undo or apply")
	// ErrUnsupported is an operation this platform cannot do safely.
	ErrUnsupported = errors.New("not supported on this platform")
)

// LimitError is a scan that went over a limit.
type LimitError struct {
	Root  string
	What  string // "files" or "bytes"
	Limit int64
}

func (e *LimitError) Error() string {
	if e.What == "bytes" {
		return fmt.Sprintf("%s holds more than %d bytes of files (undo.max-size)", e.Root, e.Limit)
	}
	return fmt.Sprintf("%s holds more than %d entries (undo.max-files)", e.Root, e.Limit)
}

func (e *LimitError) Unwrap() error { return ErrTooLarge }

// ConflictError lists the paths that are no longer as the record expects
// them: nothing was changed.
type ConflictError struct {
	Root  string
	Paths []string // relative to Root, each with what differs
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s: %d path(s) changed since the run, nothing was restored: %s", e.Root, len(e.Paths), strings.Join(e.Paths, "; "))
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// SourceError lists the files an undo or an apply would write whose
// content is not at hand as recorded (a pre-image gone or damaged, a
// working copy changed since its scan): nothing was changed.
type SourceError struct {
	Root  string
	Paths []string
}

func (e *SourceError) Error() string {
	return fmt.Sprintf("%s: %d file(s) cannot be written back as recorded, nothing was changed: %s", e.Root, len(e.Paths), strings.Join(e.Paths, "; "))
}

// PathError is a filesystem operation on one entry that failed.
type PathError struct {
	Op   string
	Path string
	Err  error
}

func (e *PathError) Error() string { return e.Op + " " + e.Path + ": " + e.Err.Error() }
func (e *PathError) Unwrap() error { return e.Err }
