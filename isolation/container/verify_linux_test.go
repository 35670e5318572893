package container

import (
	"testing"
	"time"
)

// The staged binds gc may detach are named by a run id only: a host mount
// under some other directory called like the staging one is never ours.
func TestRunIDPatternMatchesRunIDs(t *testing.T) {
	now := time.Date(2026, 11, 23, 20, 59, 0, 0, time.UTC)
	id := now.Format("20060102T150405") + "-0123456789ab"
	if !runIDPattern.MatchString(id) {
		t.Errorf("run id %q does not match", id)
	}
	for _, bad := range []string{"srv", "", "20261123T205900", "20261123T205900-0123456789AB", "x20261123T205900-0123456789ab"} {
		if runIDPattern.MatchString(bad) {
			t.Errorf("%q matches", bad)
		}
	}
}
