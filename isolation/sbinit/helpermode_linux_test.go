package sbinit

import "testing"

// TestHelperMode checks which arguments run a helper of the init binary
// and which the init of a sandbox.
func TestHelperMode(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		helper bool
	}{
		{nil, false},
		{[]string{connectFlag + "/run/x.sock"}, false},
		{[]string{streamArg}, false},
		{[]string{nprocFlag + "5", "--", "/bin/true"}, true},
		{[]string{confineFlag, "3"}, true},
		{[]string{spareFlag}, true},
		{[]string{spawnerFlag}, true},
		{[]string{ReownFlag}, true},
		{[]string{"-v", bridgeFlag + "/run/b.sock"}, true},
		// A helper's flag counts only first.
		{[]string{connectFlag + "/run/x.sock", spawnerFlag}, false},
	} {
		if got := helperMode(tc.args) != nil; got != tc.helper {
			t.Errorf("helperMode(%q) is a helper: %v, want %v", tc.args, got, tc.helper)
		}
	}
}
