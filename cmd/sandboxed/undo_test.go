package main

import (
	"strings"
	"testing"
)

// A run id undo cannot use says what is wrong and how to find one: a
// malformed id is a usage error (exit 2), an unknown one names the list.
func TestUndoBadRunID(t *testing.T) {
	isolate(t)
	tests := []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"undo", "../../etc"}, 2, []string{`"../../etc" is not a run id`, "sandboxed undo --list"}},
		{[]string{"undo", "a/b"}, 2, []string{`"a/b" is not a run id`}},
		{[]string{"undo", "20261128T130000-0123456789ab"}, 1, []string{"run 20261128T130000-0123456789ab: no change record", "sandboxed undo --list lists"}},
		{[]string{"undo"}, 2, []string{"which run?"}},
		{[]string{"undo", "--list", "extra"}, 2, []string{"--list takes no run id"}},
	}
	for _, tt := range tests {
		_, errOut, code := runApp(t, tt.args...)
		if code != tt.code {
			t.Errorf("%v: exit %d, want %d (%s)", tt.args, code, tt.code, errOut)
		}
		for _, w := range tt.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: %q does not say %q", tt.args, errOut, w)
			}
		}
	}
	out, _, code := runApp(t, "undo", "--list", "--json")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("undo --list --json with no records: %q, exit %d", out, code)
	}
}
