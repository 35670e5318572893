package reown

import (
	"errors"
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Owner is a uid and gid on the host.
type Owner struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// Reowned is what Reown did under one root.
type Reowned struct {
	// Changed counts the entries given to the new owner.
	Changed int `json:"changed"`
	// Skipped are the entries of the old owner left alone, each with why:
	// a file with more than one link (another link may be outside the
	// grant), or a mount point of another filesystem.
	Skipped []string `json:"skipped,omitempty"`
}

// Folder is what a write grant's own folder (or file) was before a run:
// its mode and its ACLs, which the tool, owning it for the run, could
// change. Restore puts them back once it is the user's again.
type Folder struct {
	Path string `json:"path"`
	// Dev and Ino name the inode saved: Restore changes that one alone.
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
	Mode uint32 `json:"mode"` // permission bits, set-id and sticky bits
	// ACL and DefaultACL are the system.posix_acl_access and
	// system.posix_acl_default attributes; nil when absent.
	ACL        []byte `json:"acl,omitempty"`
	DefaultACL []byte `json:"default_acl,omitempty"`
}

// Grant is a write grant handed over, as a hold records it before the
// hand-over: what handing it back needs once no run holds it (every run
// that did was killed). Back hands it back.
type Grant struct {
	// Path is the grant; Folder its own mode and ACLs before the first
	// run of those holding it together was handed it.
	Path   string `json:"path"`
	Folder Folder `json:"folder"`
	// Origin, when set, is the grant's own path, where Path is a bind of
	// it that goes with the run.
	Origin string `json:"origin,omitempty"`
	// From is the owner the grant was handed from, To the one it was
	// handed to: ids of the user namespace of UIDs and GIDs, when set
	// (a helper hands it over there), else the host's.
	From Owner                  `json:"from"`
	To   Owner                  `json:"to"`
	UIDs []specs.LinuxIDMapping `json:"uid_map,omitempty"`
	GIDs []specs.LinuxIDMapping `json:"gid_map,omitempty"`
}

// Job is one hand-over for a helper process to run (the sandbox init's
// reown mode, started in a user namespace where from and to are mapped):
// Reown of each path from From to To.
type Job struct {
	Paths []string `json:"paths"`
	From  Owner    `json:"from"`
	To    Owner    `json:"to"`
}

// JobResult is what the helper answers: one entry per path of the job.
type JobResult struct {
	Reowned []Reowned `json:"reowned"`
	// Error is the first failure, "" when none.
	Error string `json:"error,omitempty"`
}

// ReownError is a failure of Reown on one path.
type ReownError struct {
	Path, Op string
	Err      error
}

func (e *ReownError) Error() string { return fmt.Sprintf("hand over %s: %s: %v", e.Path, e.Op, e.Err) }
func (e *ReownError) Unwrap() error { return e.Err }

// HoldsDir names the folder of the runtime directory where runs hold the
// grants they were handed (Hold).
const HoldsDir = "grants"

// ErrGrantGone is Grant.Back's answer when the grant's path no longer
// names the folder handed over (removed, or replaced): nothing there is
// handed back.
var ErrGrantGone = errors.New("it is no longer the folder that was handed over")
