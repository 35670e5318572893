package cgroup

import "errors"

var (
	// ErrNotFound: no cgroup for this run.
	ErrNotFound = errors.New("cgroup not found")
	// ErrBadRunID: a run id that cannot name a cgroup.
	ErrBadRunID = errors.New("invalid run id for a cgroup name")
)
