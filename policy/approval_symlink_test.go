package policy

import (
	"testing"

	"github.com/sandboxed-dev/sandboxed/permissions"
)

// An approval of a path covers what lies under it only when the grant's
// resolved path lies under it too: a symlink planted under an approved
// directory must not carry the approval elsewhere.
func TestApprovalCoversResolvedPathOnly(t *testing.T) {
	approved, err := permissions.Resolve([]string{"filesystem:write:/home/u/out"}, "/home/u", "/home/u")
	if err != nil {
		t.Fatal(err)
	}
	a := &approvalGiven{value: "filesystem:write:/home/u/out", perm: &approved[0]}
	for _, tc := range []struct {
		declared, resolved string
		want               bool
	}{
		{"/home/u/out", "/home/u/out", true},
		{"/home/u/out/x", "/home/u/out/x", true},
		{"/home/u/out/x", "", true}, // not resolved yet (explain): declared path decides
		{"/home/u/out/x", "/home/u/bin", false},
		{"/home/u/out", "/etc/cron.d", false},
		{"/home/u/other", "/home/u/out/y", false},
	} {
		g := permissions.Grant{Kind: permissions.KindMount, Permission: "filesystem:write:" + tc.declared,
			Mount: &permissions.Mount{HostPath: tc.declared, Resolved: tc.resolved, Target: tc.declared, Write: true}}
		it := &Item{Grant: &g, ApproveFlag: g.String()}
		if got := a.covers(it); got != tc.want {
			t.Errorf("approval %s covers %s -> %q: %v, want %v", a.value, tc.declared, tc.resolved, got, tc.want)
		}
	}
}
