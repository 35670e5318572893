package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

func TestCreatedProtected(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/.git/hooks", "b/c"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws := []protectedWatch{
		{root: root, target: "/work/out", pattern: "**/.git/hooks", rule: "paths.deny-write[0] **/.git/hooks", before: map[string]bool{"a/.git/hooks": true}},
		{root: root, target: "/work/out", pattern: "**/.git/config", rule: "paths.deny-write[1] **/.git/config", before: map[string]bool{}},
	}
	if w := createdProtected(ws); len(w) != 0 {
		t.Fatalf("nothing new, warnings %q", w)
	}
	os.MkdirAll(filepath.Join(root, "b/c/.git/hooks"), 0o755)
	os.WriteFile(filepath.Join(root, "b/c/.git/config"), nil, 0o644)
	w := createdProtected(ws)
	if len(w) != 2 || !strings.Contains(w[0], "/work/out/b/c/.git/hooks") || !strings.Contains(w[0], "paths.deny-write[0]") ||
		!strings.Contains(w[1], "/work/out/b/c/.git/config") {
		t.Errorf("warnings %q", w)
	}
}

// Root reads every directory, so the walk runs as a user (as root too,
// on a thread of its own).
func TestCreatedProtectedSaysWhatItCouldNotRead(t *testing.T) {
	testenv.Unprivileged(t, func() {
		root := t.TempDir()
		hidden := filepath.Join(root, "x")
		os.MkdirAll(filepath.Join(hidden, ".git/hooks"), 0o755)
		os.Chmod(hidden, 0)
		defer os.Chmod(hidden, 0o755)
		w := createdProtected([]protectedWatch{{root: root, target: "/work/out", pattern: "**/.git/hooks", rule: "r", before: map[string]bool{}}})
		if len(w) != 1 || !strings.Contains(w[0], `could not look inside "/work/out/x"`) {
			t.Errorf("warnings %q", w)
		}
	})
}

// One walk for several patterns finds what a walk per pattern finds, also
// when a match of one holds matches of another.
func TestExpandMasksOneWalkPerPattern(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/.git/hooks", "b/c/.git/hooks", "d"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "a/.git/config"), nil, 0o644)
	patterns := []string{"**/.git", "**/.git/hooks", "**/.git/config", "*/c"}
	got, err := expandMasks(root, patterns)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range patterns {
		alone, err := expandMasks(root, []string{p})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[i], alone[0]) {
			t.Errorf("%s: together %v, alone %v", p, got[i], alone[0])
		}
	}
	if len(got[1]) != 2 || len(got[0]) != 2 {
		t.Errorf("matches %v", got)
	}
}

// A mask names what the policy's rule names: '[' is literal, as in the
// decision (internal/pathglob), so a directory "[draft]" is found and a
// directory "d" is not.
func TestExpandMaskBracketIsLiteral(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"[draft]/x", "d", "r", "a/[draft]"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for pattern, want := range map[string][]string{
		"[draft]":    {"[draft]"},
		"[draft]/*":  {"[draft]/x"},
		"*/[draft]":  {"a/[draft]"},
		"[dr]":       nil,
		"**/[draft]": {"[draft]", "a/[draft]"},
	} {
		got, err := expandMask(root, pattern)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("expandMask(%q) = %q, want %q", pattern, got, want)
		}
	}
}
