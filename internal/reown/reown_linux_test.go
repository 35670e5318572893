package reown

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

func ownerOf(t *testing.T, p string) Owner {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return Owner{int(st.Uid), int(st.Gid)}
}

// TestReown: a grant is handed over and back entry by entry; nothing
// outside it changes owner — not a symlink's target, not a file with a
// second link — and entries of other owners are left as they are.
func TestReown(t *testing.T) {
	testenv.NeedRoot(t)
	base := t.TempDir()
	grant := filepath.Join(base, "grant")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{grant, filepath.Join(grant, "sub", "deeper")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(outside)
	write(filepath.Join(grant, "a"))
	write(filepath.Join(grant, "sub", "deeper", "b"))
	write(filepath.Join(grant, "others"))
	write(filepath.Join(base, "secret"))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chown(filepath.Join(grant, "others"), 4321, 4321))
	must(os.Symlink(outside, filepath.Join(grant, "sub", "link")))
	must(os.Link(filepath.Join(base, "secret"), filepath.Join(grant, "hardlink")))

	user, sandbox := Owner{0, 0}, Owner{0x70000000, 0x70000000}
	r, err := Reown(grant, user, sandbox)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", "a", "sub", "sub/deeper", "sub/deeper/b", "sub/link"} {
		if got := ownerOf(t, filepath.Join(grant, p)); got != sandbox {
			t.Errorf("%s: owner %v, want %v", p, got, sandbox)
		}
	}
	if r.Changed != 6 {
		t.Errorf("changed %d, want 6", r.Changed)
	}
	for p, want := range map[string]Owner{outside: user, filepath.Join(base, "secret"): user, filepath.Join(grant, "others"): {4321, 4321}} {
		if got := ownerOf(t, p); got != want {
			t.Errorf("%s: owner %v, want %v (left alone)", p, got, want)
		}
	}
	if len(r.Skipped) != 1 || !strings.Contains(r.Skipped[0], "hardlink: 2 links") {
		t.Errorf("skipped %v, want the hard link", r.Skipped)
	}

	// What the sandbox made, and what it was given, goes back.
	write(filepath.Join(grant, "new"))
	must(os.Chown(filepath.Join(grant, "new"), sandbox.UID, sandbox.GID))
	if _, err := Reown(grant, sandbox, user); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", "a", "new", "sub", "sub/deeper/b", "sub/link"} {
		if got := ownerOf(t, filepath.Join(grant, p)); got != user {
			t.Errorf("%s: owner %v after the hand-back, want %v", p, got, user)
		}
	}
	// A file grant.
	f := filepath.Join(base, "single")
	write(f)
	if r, err := Reown(f, user, sandbox); err != nil || r.Changed != 1 || ownerOf(t, f) != sandbox {
		t.Errorf("a file: %+v %v, owner %v", r, err, ownerOf(t, f))
	}
}

// TestReownSwappedName: a name swapped between the walk's stat and the
// hand-over for a second link to a file outside the grant (what a tool of
// a run that shares the grant, still running, could do) leaves that file
// as it is: the entry is judged through a descriptor of what is there now.
func TestReownSwappedName(t *testing.T) {
	testenv.NeedRoot(t)
	base := t.TempDir()
	grant := filepath.Join(base, "grant")
	if err := os.Mkdir(grant, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(base, "secret")
	for _, p := range []string{secret, filepath.Join(grant, "a")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	beforeEntry = func(dirfd int, name string) {
		if name != "a" {
			return
		}
		a := filepath.Join(grant, "a")
		if err := os.Remove(a); err != nil {
			t.Error(err)
		}
		if err := os.Link(secret, a); err != nil {
			t.Error(err)
		}
	}
	defer func() { beforeEntry = nil }()
	user, sandbox := Owner{0, 0}, Owner{0x70000000, 0x70000000}
	r, err := Reown(grant, user, sandbox)
	if err != nil {
		t.Fatal(err)
	}
	if got := ownerOf(t, secret); got != user {
		t.Errorf("the file outside the grant, linked in during the walk, was handed over: %+v", got)
	}
	if len(r.Skipped) != 1 || !strings.Contains(r.Skipped[0], "2 links") {
		t.Errorf("skipped: %q, want the swapped name with its 2 links", r.Skipped)
	}
	if got := ownerOf(t, grant); got != sandbox {
		t.Errorf("the grant itself: %+v", got)
	}
}
