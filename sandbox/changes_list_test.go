package sandbox

import (
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation/changeset"
)

func TestListChangesSaysWhatUndoWouldDo(t *testing.T) {
	state := t.TempDir()
	store := changeset.Store{Dir: ChangesDir(state)}
	now := time.Now()
	for _, rec := range []*changeset.Record{
		{RunID: "20261128T100000-aaaaaaaaaaaa", Tool: "a", Grants: []changeset.Grant{{Root: "/g", Changes: []changeset.Change{{Op: changeset.OpCreated, Path: "x"}}}}},
		{RunID: "20261128T100001-bbbbbbbbbbbb", Tool: "b", Review: true},
		{RunID: "20261128T100002-cccccccccccc", Tool: "c", Review: true, Applying: true},
		{RunID: "20261128T100003-dddddddddddd", Tool: "d", Undoing: true},
		{RunID: "20261128T100004-eeeeeeeeeeee", Tool: "e", UndoneAt: &now},
	} {
		if err := store.Begin(rec.RunID); err != nil {
			t.Fatal(err)
		}
		if err := store.Save(rec); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := ListChanges(state)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"recorded", "review not applied", "apply stopped midway", "undo stopped midway", "undone"}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(want), recs)
	}
	for i, r := range recs {
		if r.State != want[i] {
			t.Errorf("%s: state %q, want %q", r.RunID, r.State, want[i])
		}
	}
	if recs[0].Counts.Created != 1 || len(recs[0].Grants) != 1 || recs[0].Grants[0] != "/g" {
		t.Errorf("first record: %+v", recs[0])
	}
}
