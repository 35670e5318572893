package changeset

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func file(h string) Entry { return Entry{Kind: KindFile, Mode: 0o644, SHA256: h, Size: 1} }

func TestDiff(t *testing.T) {
	dir := Entry{Kind: KindDir, Mode: 0o755}
	tests := []struct {
		name          string
		before, after Tree
		want          []string // "op path"
	}{
		{"nothing", Tree{"a": file("1")}, Tree{"a": file("1")}, nil},
		{"content", Tree{"a": file("1")}, Tree{"a": file("2")}, []string{"modified a"}},
		{"mode", Tree{"a": file("1")}, Tree{"a": {Kind: KindFile, Mode: 0o600, SHA256: "1", Size: 1}}, []string{"modified a"}},
		{"owner and times do not count", Tree{"a": file("1")}, Tree{"a": {Kind: KindFile, Mode: 0o644, SHA256: "1", Size: 1, UID: 7, mtime: 9}}, nil},
		{"file to link", Tree{"a": file("1")}, Tree{"a": {Kind: KindLink, Mode: 0o777, Target: "/etc/passwd"}}, []string{"modified a"}},
		{"link target", Tree{"l": {Kind: KindLink, Target: "x"}}, Tree{"l": {Kind: KindLink, Target: "y"}}, []string{"modified l"}},
		{"created and deleted, a directory before what it holds",
			Tree{"d": dir, "d/x": file("1"), "d-e": file("3")},
			Tree{"n": dir, "n/y": file("2"), "d-e": file("3")},
			[]string{"deleted d", "deleted d/x", "created n", "created n/y"}},
		{"element order", Tree{}, Tree{"a-b": file("1"), "a": dir, "a/b": file("2")}, []string{"created a", "created a/b", "created a-b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range Diff(tt.before, tt.after) {
				got = append(got, string(c.Op)+" "+c.Path)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("Diff = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReviewOrderDeletionsFirst(t *testing.T) {
	cs := Diff(Tree{"z": file("1"), "m": file("1")}, Tree{"a": file("1"), "m": file("2")})
	var got []string
	for _, c := range ReviewOrder(cs) {
		got = append(got, string(c.Op)+" "+c.Path)
	}
	if want := "deleted z,modified m,created a"; strings.Join(got, ",") != want {
		t.Errorf("ReviewOrder = %q, want %q", got, want)
	}
	if n := Count(cs); n != (Counts{Created: 1, Modified: 1, Deleted: 1}) || n.Total() != 3 {
		t.Errorf("Count = %+v", n)
	}
}

func TestToReap(t *testing.T) {
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	st := []Stored{
		{RunID: "r1", Modified: now.Add(-10 * 24 * time.Hour), Bytes: 10},
		{RunID: "r2", Modified: now.Add(-2 * time.Hour), Bytes: 50},
		{RunID: "r3", Modified: now.Add(-time.Hour), Bytes: 50},
		{RunID: "r4", Modified: now, Bytes: 50},
	}
	tests := []struct {
		name string
		keep time.Duration
		max  int64
		live string
		want string
	}{
		{"no bounds", 0, 0, "", ""},
		{"age", 7 * 24 * time.Hour, 0, "", "r1"},
		{"size after age", 7 * 24 * time.Hour, 100, "", "r1,r2"},
		{"size alone", 0, 60, "", "r1,r2,r3"},
		{"a live run is never reaped", 7 * 24 * time.Hour, 60, "r2", "r1,r3,r4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range ToReap(st, now, tt.keep, tt.max, func(id string) bool { return id == tt.live }) {
				got = append(got, s.RunID)
			}
			if strings.Join(got, ",") != tt.want {
				t.Errorf("ToReap = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidRunID(t *testing.T) {
	for id, want := range map[string]bool{
		"20261128T074000-0a1b2c3d4e5f": true, "": false, "..": false, "../x": false, "a/b": false, ".hidden": false, "a b": false,
	} {
		if got := ValidRunID(id); got != want {
			t.Errorf("ValidRunID(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestRenderStripsControlsAndListsDeletionsFirst(t *testing.T) {
	r := &Record{Grants: []Grant{{Root: "/g", Target: "/w", Changes: Diff(
		Tree{"gone.txt": file("1"), "a.txt": file("2")},
		Tree{"a.txt": file("3"), "evil\x1b[2J.txt": file("4")},
	)}}}
	content := map[string]string{
		"a.txt-false": "one\ntwo\nthree\n", "a.txt-true": "one\nTWO\x1b]0;pwned\x07\nthree\n",
		"gone.txt-false": "bye\n", "evil\x1b[2J.txt-true": "hi\n",
	}
	var buf bytes.Buffer
	Render(&buf, r, func(_ int, c Change, after bool) ([]byte, error) {
		return []byte(content[c.Path+"-"+map[bool]string{false: "false", true: "true"}[after]]), nil
	})
	out := buf.String()
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Fatalf("control characters reached the output:\n%q", out)
	}
	for _, want := range []string{"1 deleted, 1 modified, 1 created", `evil\x1b[2J.txt`, "-|two", `+|TWO\x1b]0;pwned\x07`, " |one"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "deleted   gone.txt") > strings.Index(out, "modified  a.txt") {
		t.Errorf("deletions are not first:\n%s", out)
	}
}

func TestLineDiffHunks(t *testing.T) {
	var a, b []string
	for i := 0; i < 20; i++ {
		a = append(a, string(rune('a'+i))+"\n")
	}
	b = append(append(append([]string{}, a[:10]...), "X\n"), a[11:]...)
	got := strings.Join(hunks(lineDiff(a, b)), "/")
	if want := "@@/ |h/ |i/ |j/-|k/+|X/ |l/ |m/ |n"; got != want {
		t.Errorf("hunks = %q, want %q", got, want)
	}
}

// A file whose lines look like a diff's headers cannot forge one: a
// content line always has the op and then '|'; headers, hunk marks and
// the summary never do.
func TestRenderContentCannotForgeHeaders(t *testing.T) {
	r := &Record{Grants: []Grant{{Root: "/g", Target: "/w", Changes: Diff(
		Tree{"a.txt": file("1")}, Tree{"a.txt": file("2")},
	)}}}
	forged := "real\n++ b/other.txt\n@@\n-- a/other.txt\n deleted   secret.txt\n"
	var buf bytes.Buffer
	Render(&buf, r, func(_ int, c Change, after bool) ([]byte, error) {
		if after {
			return []byte(forged), nil
		}
		return []byte("real\n"), nil
	})
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		switch {
		case strings.HasPrefix(l, "/g "), strings.HasPrefix(l, "  modified"), l == "--- a.txt", l == "+++ a.txt", l == "@@":
		case len(l) > 1 && strings.ContainsRune("+- ", rune(l[0])) && l[1] == '|':
		default:
			t.Errorf("line %q is neither a header nor a content line", l)
		}
	}
	for _, bad := range []string{"\n+++ b/other.txt", "\n--- a/other.txt", "\n@@\n+"} {
		if strings.Contains(buf.String(), bad) {
			t.Errorf("the tool's text forged %q:\n%s", bad, buf.String())
		}
	}
	if !strings.Contains(buf.String(), "+|++ b/other.txt") {
		t.Errorf("positive control: the forged line is not shown as content:\n%s", buf.String())
	}
}
