package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/policy"
)

func TestProtectOwnDirs(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	p := policy.Default()
	before := len(p.Paths.Deny)
	got := ProtectOwnDirs(p, []string{link + "/state", "", "relative/dir"})
	if len(p.Paths.Deny) != before {
		t.Fatal("ProtectOwnDirs changed the policy it was given")
	}
	for _, want := range []policy.PathPattern{policy.PathPattern(link + "/state"), policy.PathPattern(real + "/state")} {
		if !slices.Contains(got.Paths.Deny, want) {
			t.Errorf("deny lacks %s: %v", want, got.Paths.Deny[before:])
		}
	}
	cwd, _ := os.Getwd()
	if !slices.Contains(got.Paths.Deny, policy.PathPattern(filepath.Join(cwd, "relative/dir"))) {
		t.Errorf("a relative dir is not protected where it is used: %v", got.Paths.Deny[before:])
	}
	if n := len(got.Paths.Deny) - before; n != 3 {
		t.Errorf("added %d patterns, want 3 (an empty dir is skipped): %v", n, got.Paths.Deny[before:])
	}
	again := ProtectOwnDirs(got, []string{link + "/state"})
	if len(again.Paths.Deny) != len(got.Paths.Deny) {
		t.Errorf("a second call added patterns again")
	}
	if dirs := OwnDirs("/s", ""); !slices.Contains(dirs, "/s") || slices.Contains(dirs, "") {
		t.Errorf("OwnDirs = %v", dirs)
	}
}

func TestOwnDirInGrant(t *testing.T) {
	own := []string{"/home/u/.cache/sandboxed", "/home/u/.local/state/sandboxed", ""}
	for _, c := range []struct {
		grant, wantGrant, wantDir string
	}{
		{"/home/u", "/home/u", "/home/u/.cache/sandboxed"},
		{"/home/u/.local", "/home/u/.local", "/home/u/.local/state/sandboxed"},
		{"/home/u/.cache/sandboxed", "/home/u/.cache/sandboxed", "/home/u/.cache/sandboxed"},
		{"/home/u/work", "", ""},
		{"/home/u/.cache/sandboxed-other", "", ""},
		{"/", "/", "/home/u/.cache/sandboxed"},
	} {
		g, d := ownDirInGrant([]*permissions.Mount{{HostPath: c.grant, Resolved: c.grant, Target: c.grant, Write: true}}, own)
		if g != c.wantGrant || d != c.wantDir {
			t.Errorf("grant %s: got (%q, %q), want (%q, %q)", c.grant, g, d, c.wantGrant, c.wantDir)
		}
	}
}
