package sandbox

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/policy"
)

func TestProtectedBy(t *testing.T) {
	d := &policy.Decision{
		Masks: []policy.PathMask{
			{Path: "/w/out/**/.git/hooks", Under: "/w/out", Rule: "hooks"},
			{Path: "/w/out/**/.env", Under: "/w/out", Rule: "env", Secret: true, Hide: true},
			{Path: "/w/out/conf/locked", Under: "/w/out", Rule: "locked"},
			{Path: "/w/other/**/.env", Under: "/w/other", Rule: "elsewhere", Secret: true},
		},
		SecretExcept: []string{"/host/out/keep/.env"},
	}
	ch := &isolation.Changes{Review: true, Grants: []isolation.ChangesGrant{{Host: "/host/out", Target: "/w/out", Work: "/s/work/0"}}}
	protectGrants(ch, d)
	if n := len(ch.Grants[0].Protected); n != 3 {
		t.Fatalf("protected patterns: %d, want 3 (the mask of another grant is not one): %+v", n, ch.Grants[0].Protected)
	}
	for _, tt := range []struct{ rel, want string }{
		{"new/.git/hooks", "hooks"},
		{"new/.git/hooks/pre-commit", "hooks"},
		{".git/hooks", "hooks"},
		{"new/.git", ""},
		{"new/.git/HEAD", ""},
		{".env", "env"},
		{"a/b/.env", "env"},
		{".env.local", ""},
		{"keep/.env", ""}, // lifted by secrets.except
		{"conf/locked", "locked"},
		{"conf/locked/x", "locked"},
		{"conf/lockedx", ""},
		{"x/conf/locked", ""},
		{"plain.txt", ""},
	} {
		if got := newGrantProtection(ch.Grants[0], ch.SecretExcept).protectedBy(tt.rel); got != tt.want {
			t.Errorf("protectedBy(%q) = %q, want %q", tt.rel, got, tt.want)
		}
	}
	// A grant of a protected directory itself.
	g := isolation.ChangesGrant{Host: "/repo/.git/hooks", Protected: []isolation.ProtectedPattern{{Pattern: "**/.git/hooks", Rule: "hooks"}}}
	if got := newGrantProtection(g, nil).protectedBy("pre-commit"); got != "hooks" {
		t.Errorf("a change in a granted .git/hooks: %q", got)
	}
	// Not a review: nothing is listed.
	plain := &isolation.Changes{Grants: []isolation.ChangesGrant{{Host: "/host/out", Target: "/w/out"}}}
	protectGrants(plain, d)
	if len(plain.Grants[0].Protected) != 0 {
		t.Errorf("a recorded run lists protected patterns: %+v", plain.Grants[0].Protected)
	}
}

func TestReviewSource(t *testing.T) {
	ch := &isolation.Changes{Review: true, Grants: []isolation.ChangesGrant{{Host: "/h/out", Work: "/s/w0"}}}
	for _, tt := range []struct{ in, want string }{
		{"/h/out", "/s/w0"},
		{"/h/out/.git", "/s/w0/.git"},
		{"/h/outside", "/h/outside"},
		{"/h/other", "/h/other"},
	} {
		if got := reviewSource(tt.in, ch); got != tt.want {
			t.Errorf("reviewSource(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// A grant of one file covers that file, not its directory.
	fch := &isolation.Changes{Review: true, Grants: []isolation.ChangesGrant{{Host: "/h", File: "notes.txt", Work: "/s/w0"}, {Host: "/h/sub", Work: "/s/w1"}}}
	for _, tt := range []struct{ in, want string }{
		{"/h/notes.txt", "/s/w0/notes.txt"},
		{"/h/sub/x", "/s/w1/x"},
		{"/h/other", "/h/other"},
	} {
		if got := reviewSource(tt.in, fch); got != tt.want {
			t.Errorf("reviewSource(%q) of a file grant = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := reviewSource("/h/out/x", &isolation.Changes{Grants: ch.Grants}); got != "/h/out/x" {
		t.Errorf("outside a review: %q", got)
	}
}

func TestOwnDirsUnder(t *testing.T) {
	own := []string{"/home/u/.local/state/sandboxed", "/run/user/1000/sandboxed", "/home/u/.cache/sandboxed"}
	for _, tt := range []struct {
		host string
		want []string
	}{
		{"/home/u", []string{".local/state/sandboxed", ".cache/sandboxed"}},
		{"/home/u/.local", []string{"state/sandboxed"}},
		{"/home/u/project", nil},
		{"/home/u/.local/state/sandboxed", nil}, // the grant itself: denied, not skipped
		{"/run/user", []string{"1000/sandboxed"}},
		{"/home/uu", nil},
	} {
		if got := ownDirsUnder(tt.host, own); !slices.Equal(got, tt.want) {
			t.Errorf("ownDirsUnder(%s) = %q, want %q", tt.host, got, tt.want)
		}
	}
}

func TestPlanChangesSkipsOwnDirs(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, ".local", "state", "sandboxed")
	mounts := []*permissions.Mount{{Write: true, Resolved: home, Target: "/home/u"}}
	in := PlanInput{RunID: "r1", Decision: &policy.Decision{}, Facts: &HostFacts{OwnDirs: []string{state}, Files: map[string]FileFact{}}}
	in.Changes = ChangesInput{StateDir: state, Bounds: policy.UndoBounds{Record: true}}
	ch := planChanges(in, mounts)
	if ch == nil || len(ch.Grants) != 1 || !slices.Equal(ch.Grants[0].Skip, []string{".local/state/sandboxed"}) {
		t.Fatalf("undo of a grant holding the state directory: %+v", ch)
	}
	if lim := grantLimits(ch, ch.Grants[0]); !slices.Equal(lim.Skip, ch.Grants[0].Skip) {
		t.Errorf("the scan's limits skip %q", lim.Skip)
	}
	in.Changes.Review = true
	if ch := planChanges(in, mounts); ch == nil || len(ch.Grants[0].Skip) != 0 {
		t.Errorf("a review skips what its working copy must hold: %+v", ch)
	}
}

// A run on Kubernetes is recorded for undo: its write grants are this
// host's directories, copied into the pod and back before the result. A
// review of one is not planned (reviewRefusal refuses it).
func TestPlanChangesOnKubernetes(t *testing.T) {
	dir := t.TempDir()
	mounts := []*permissions.Mount{{Write: true, Resolved: dir, Target: "/w/out"}}
	in := PlanInput{RunID: "r1", Decision: &policy.Decision{}, Facts: &HostFacts{Files: map[string]FileFact{}},
		Cluster: Cluster{Backend: isolation.BackendKubernetes}}
	in.Changes = ChangesInput{StateDir: t.TempDir(), Bounds: policy.UndoBounds{Record: true}}
	if ch := planChanges(in, mounts); ch == nil || len(ch.Grants) != 1 || ch.Grants[0].Host != dir {
		t.Fatalf("a Kubernetes run's write grant is not recorded: %+v", ch)
	}
	in.Changes.Review = true
	if ch := planChanges(in, mounts); ch != nil {
		t.Errorf("a review on Kubernetes was planned: %+v", ch)
	}
}
