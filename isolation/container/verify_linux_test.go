package container

import (
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// The staged binds gc may detach are named by a run id only: a host mount
// under some other directory called like the staging one is never ours.
func TestRunIDPatternMatchesRunIDs(t *testing.T) {
	now := time.Date(2026, 11, 23, 20, 59, 0, 0, time.UTC)
	id := now.Format("20060102T150405") + "-0123456789ab"
	if !isolation.RunIDPattern.MatchString(id) {
		t.Errorf("run id %q does not match", id)
	}
	for _, bad := range []string{"srv", "", "20261123T205900", "20261123T205900-0123456789AB", "x20261123T205900-0123456789ab"} {
		if isolation.RunIDPattern.MatchString(bad) {
			t.Errorf("%q matches", bad)
		}
	}
}

// TestStagedRun: gc knows staged binds and warm staging directories by
// their place under a run's host directory.
func TestStagedRun(t *testing.T) {
	const id = "20261123T220000-0123456789ab"
	for _, c := range []struct {
		mp       string
		run      string
		root, ok bool
	}{
		{"/run/sandboxed/" + id + "/.sandboxed-binds/3", id, false, true},
		{"/run/sandboxed/" + id + "/.sandboxed-binds", id, true, true},
		{"/run/sandboxed/" + id + "/.sandboxed-binds/3/sub", "", false, false},
		{"/run/sandboxed/not-a-run/.sandboxed-binds/3", "", false, false},
		{"/home/u/.sandboxed-binds", "", false, false},
		{"/", "", false, false},
	} {
		run, root, ok := stagedRun(c.mp)
		if run != c.run || root != c.root || ok != c.ok {
			t.Errorf("stagedRun(%q) = %q, %v, %v; want %q, %v, %v", c.mp, run, root, ok, c.run, c.root, c.ok)
		}
	}
}
