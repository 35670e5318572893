package policy

import (
	"fmt"
	"time"
)

// UndoRules bound the change records that let `sandboxed undo` put a
// run's write grants back, and that `run --review` shows.
type UndoRules struct {
	// Disable turns the records off: no run can be undone, and --review
	// still works (its working copies are not records).
	Disable bool `yaml:"disable"`
	// MaxFiles and MaxSize bound one grant of one run: a grant with more
	// entries or bytes of files is not recorded (0: the default).
	MaxFiles int  `yaml:"max-files"`
	MaxSize  Size `yaml:"max-size"`
	// Keep is how long gc keeps a record; MaxTotal how much all records
	// may hold before gc removes the oldest (0: the defaults).
	Keep     Duration `yaml:"keep"`
	MaxTotal Size     `yaml:"max-total"`
}

// The bounds of UndoRules left unset.
const (
	DefaultUndoMaxFiles = 20000
	DefaultUndoMaxSize  = 256 << 20
	DefaultUndoKeep     = 7 * 24 * time.Hour
	DefaultUndoMaxTotal = 2 << 30
)

// UndoBounds are UndoRules with the defaults filled in, and the rule they
// come from (for explain).
type UndoBounds struct {
	Record   bool
	MaxFiles int
	MaxBytes int64
	Keep     time.Duration
	MaxTotal int64
	// Rule names where the bounds come from: the policy file's undo
	// section, or the built-in defaults.
	Rule string
}

// UndoBounds returns the policy's undo bounds.
func (p *Policy) UndoBounds() UndoBounds {
	u := p.Undo
	b := UndoBounds{Record: !u.Disable, MaxFiles: u.MaxFiles, MaxBytes: int64(u.MaxSize),
		Keep: time.Duration(u.Keep), MaxTotal: int64(u.MaxTotal), Rule: "undo (built-in default)"}
	if p.File != "" {
		b.Rule = "undo (" + p.File + ")"
	}
	if b.MaxFiles == 0 {
		b.MaxFiles = DefaultUndoMaxFiles
	}
	if b.MaxBytes == 0 {
		b.MaxBytes = DefaultUndoMaxSize
	}
	if b.Keep == 0 {
		b.Keep = DefaultUndoKeep
	}
	if b.MaxTotal == 0 {
		b.MaxTotal = DefaultUndoMaxTotal
	}
	return b
}

// checkUndo refuses negative bounds.
func (p *Policy) checkUndo() error {
	u := p.Undo
	switch {
	case u.MaxFiles < 0:
		return fmt.Errorf("undo.max-files: %d is below zero; write a count, or leave it out for %d", u.MaxFiles, DefaultUndoMaxFiles)
	case u.MaxSize < 0, u.MaxTotal < 0:
		return fmt.Errorf("undo.max-size and undo.max-total: write a size above zero, or leave them out")
	case u.Keep < 0:
		return fmt.Errorf("undo.keep: write a duration above zero, or leave it out")
	}
	return nil
}
