package cleanup

import (
	"slices"
	"testing"
)

func TestCleanup(t *testing.T) {
	var ran []string
	note := func(s string) func() { return func() { ran = append(ran, s) } }
	tests := []struct {
		name string
		use  func()
		want []string
	}{
		{"clean runs the last added first", func() {
			cu := Make(note("a"))
			cu.Add(note("b"))
			cu.Add(note("c"))
			cu.Clean()
		}, []string{"c", "b", "a"}},
		{"a second clean runs nothing", func() {
			cu := Make(note("a"))
			cu.Clean()
			cu.Clean()
		}, []string{"a"}},
		{"the zero value is empty", func() {
			var cu Cleanup
			cu.Clean()
			cu.Add(note("a"))
			cu.Clean()
		}, []string{"a"}},
		{"release leaves clean nothing to run", func() {
			cu := Make(note("a"))
			cu.Add(note("b"))
			cu.Release()
			cu.Clean()
		}, nil},
		{"release returns the stack, in clean's order", func() {
			cu := Make(note("a"))
			cu.Add(note("b"))
			undo := cu.Release()
			cu.Add(note("c"))
			cu.Clean()
			undo()
			undo()
		}, []string{"c", "b", "a"}},
		{"deferred clean after a failure", func() {
			func() {
				var cu Cleanup
				defer cu.Clean()
				cu.Add(note("made"))
				// fails here: no Release
			}()
		}, []string{"made"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ran = nil
			tc.use()
			if !slices.Equal(ran, tc.want) {
				t.Errorf("ran %q, want %q", ran, tc.want)
			}
		})
	}
}
