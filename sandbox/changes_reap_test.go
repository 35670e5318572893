package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/policy"
)

// A run killed before its record was written (no record.json) leaves
// pre-images or working copies no undo can use: gc reaps them once they
// are a day old, unless a controller still holds the run live, whatever
// times the tool gave its working copy.
func TestReapChangesOfDeadRuns(t *testing.T) {
	now := time.Now()
	old, future := now.Add(-48*time.Hour), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		age      time.Time // of what sandboxed wrote
		record   bool
		workTime time.Time // of the working copy's file; zero: none
		held     bool
		reaped   bool
	}{
		{name: "killed-undo", age: old, reaped: true},
		{name: "killed-review", age: old, workTime: old, reaped: true},
		{name: "killed-review-future-mtime", age: old, workTime: future, reaped: true},
		{name: "review-waiting-for-answer", age: old, workTime: old, held: true},
		{name: "in-progress", age: now, workTime: now},
		{name: "recorded", age: old, record: true},
	}
	state := t.TempDir()
	for _, tt := range tests {
		dir := filepath.Join(ChangesDir(state), tt.name)
		if err := os.MkdirAll(filepath.Join(dir, "blobs"), 0o700); err != nil {
			t.Fatal(err)
		}
		paths := []string{filepath.Join(dir, "blobs")}
		if tt.record {
			paths = append(paths, filepath.Join(dir, "record.json"))
			if err := os.WriteFile(paths[1], []byte(`{"run_id":"`+tt.name+`"}`), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if !tt.workTime.IsZero() {
			f := filepath.Join(dir, "work", "0", "file")
			if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{f, filepath.Dir(f), filepath.Join(dir, "work")} {
				if err := os.Chtimes(p, tt.workTime, tt.workTime); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, p := range append(paths, dir) {
			if err := os.Chtimes(p, tt.age, tt.age); err != nil {
				t.Fatal(err)
			}
		}
	}
	held := func(id string) bool { return id == "review-waiting-for-answer" }
	removed, err := ReapChanges(state, policy.UndoBounds{Keep: 7 * 24 * time.Hour, MaxTotal: 1 << 30}, now, held)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		gone := slices.ContainsFunc(removed, func(s string) bool { return strings.Contains(s, "run "+tt.name+" ") })
		_, serr := os.Stat(filepath.Join(ChangesDir(state), tt.name))
		if gone != tt.reaped || os.IsNotExist(serr) != tt.reaped {
			t.Errorf("%s: reaped %v (listed %v), want %v", tt.name, os.IsNotExist(serr), gone, tt.reaped)
		}
	}
}
