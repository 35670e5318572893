package tool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// indexed is s with a name index kept at path ("": in memory).
func indexed(s Scopes, path string) Scopes {
	s.Index = &NameIndex{Path: path}
	return s
}

// outcome is what a Find returned, comparable between two searches.
func outcome(d *Definition, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return d.Name + " " + d.Description + " " + string(d.Source.Scope) + " " + d.Source.Path + " " + d.Source.SHA256
}

// layout writes definitions that exercise every outcome of Find: found,
// shadowed, in conflict (also a broken file with a good one), broken,
// named apart from its file, named by its file alone.
func layout(t *testing.T, root string) {
	t.Helper()
	writeFile(t, filepath.Join(root, "etc/sandboxed/tools/hello.yaml"), "description: global\nbash: echo\n")
	writeFile(t, filepath.Join(root, "home/.cycod/tools/hello.yaml"), "description: user\nbash: echo\n")
	writeFile(t, filepath.Join(root, "etc/cycod/tools/only-global.yml"), okTool)
	local := filepath.Join(root, "cwd/.sandboxed/tools")
	writeFile(t, filepath.Join(local, "good.yaml"), okTool)
	writeFile(t, filepath.Join(local, "broken.yaml"), "name: broken\ndescription: d\n")
	writeFile(t, filepath.Join(local, "a.yaml"), "name: twin\n"+okTool)
	writeFile(t, filepath.Join(root, "cwd/.cycod/tools/b.yml"), "name: twin\n"+okTool)
	writeFile(t, filepath.Join(local, "half.yaml"), "name: half\ndescription: d\n")
	writeFile(t, filepath.Join(root, "cwd/.cycod/tools/half.yaml"), "name: half\n"+okTool)
	writeFile(t, filepath.Join(local, "file-name.yaml"), "name: other-name\n"+okTool)
	writeFile(t, filepath.Join(local, "bad-name.yaml"), "name: 'not a name'\n"+okTool)
	writeFile(t, filepath.Join(root, "home/.sandboxed/tools/good.yaml"), "description: shadowed\nbash: echo\n")
}

var layoutNames = []string{"hello", "only-global", "good", "broken", "twin", "half", "other-name", "file-name", "bad-name", "missing"}

// With an index, Find returns exactly what it returns without one: on
// the first search (which parses and indexes), on the next (which uses
// the index), and from an index another process kept.
func TestFindIndexedAgreesWithFindListed(t *testing.T) {
	s, root := testScopes(t)
	layout(t, root)
	path := filepath.Join(root, "cache/tool-names.json")
	si := indexed(s, path)
	check := func(label string, si Scopes) {
		t.Helper()
		for _, n := range layoutNames {
			for _, sc := range []Scope{ScopeAny, ScopeLocal, ScopeUser, ScopeGlobal} {
				want := outcome(s.Find(n, sc))
				if got := outcome(si.Find(n, sc)); got != want {
					t.Errorf("%s: Find(%s, %s) with an index:\n%s\nwithout:\n%s", label, n, sc, got, want)
				}
			}
		}
	}
	check("first search", si)
	if n := len(si.Index.names); n != 12 {
		t.Errorf("the index holds %d definitions, want 12: %v", n, si.Index.names)
	}
	check("second search", si)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the index was not kept: %v", err)
	}
	next := indexed(s, path)
	check("kept index", next)
	if len(next.Index.names) != 12 {
		t.Errorf("the kept index holds %d definitions, want 12", len(next.Index.names))
	}
}

// A file edited in place, even to the same size within one timestamp
// tick, is another entry: the index follows content, not times.
func TestNameIndexFollowsChanges(t *testing.T) {
	s, root := testScopes(t)
	s = indexed(s, "")
	f := filepath.Join(root, "cwd/.sandboxed/tools/a.yaml")
	writeFile(t, f, "name: alpha\n"+okTool)
	if d, err := s.Find("alpha", ScopeAny); err != nil || d.Name != "alpha" {
		t.Fatalf("Find(alpha) = %v, %v", d, err)
	}
	writeFile(t, f, "name: gamma\n"+okTool) // the same size
	if d, err := s.Find("gamma", ScopeAny); err != nil || d.Name != "gamma" {
		t.Fatalf("Find(gamma) after the change = %v, %v", d, err)
	}
	if _, err := s.Find("alpha", ScopeAny); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Find(alpha) after the change = %v, want ErrNotFound", err)
	}
	// The same bytes under another file name may name another tool.
	g := filepath.Join(root, "cwd/.sandboxed/tools/unnamed.yaml")
	writeFile(t, g, okTool)
	if d, err := s.Find("unnamed", ScopeAny); err != nil || d.Name != "unnamed" {
		t.Fatalf("Find(unnamed) = %v, %v", d, err)
	}
	if err := os.Rename(g, filepath.Join(root, "cwd/.sandboxed/tools/renamed.yaml")); err != nil {
		t.Fatal(err)
	}
	if d, err := s.Find("renamed", ScopeAny); err != nil || d.Name != "renamed" {
		t.Fatalf("Find(renamed) = %v, %v", d, err)
	}
}

// An entry that claims a file declares the name looked for when it does
// not sends the search back to parsing the scope. (An entry can be wrong
// only if the index was edited.)
func TestNameIndexWrongEntry(t *testing.T) {
	s, root := testScopes(t)
	s = indexed(s, "")
	dir := filepath.Join(root, "cwd/.sandboxed/tools")
	x := filepath.Join(dir, "x.yaml")
	writeFile(t, x, "name: bar\n"+okTool)
	writeFile(t, filepath.Join(dir, "y.yaml"), "name: foo\ndescription: the real foo\nbash: echo\n")
	data, err := os.ReadFile(x)
	if err != nil {
		t.Fatal(err)
	}
	y := filepath.Join(dir, "y.yaml")
	ydata, err := os.ReadFile(y)
	if err != nil {
		t.Fatal(err)
	}
	// Both wrong: x said to be foo, y said to be something else. Only the
	// parse of the whole scope finds y.
	s.Index.put(indexKey(x, data), "foo")
	s.Index.put(indexKey(y, ydata), "zzz")
	d, err := s.Find("foo", ScopeLocal)
	if err != nil || d.Description != "the real foo" {
		t.Fatalf("Find(foo) with wrong entries = %v, %v; want y.yaml's, and no conflict", d, err)
	}
	if n, _ := s.Index.name(indexKey(x, data)); n != "bar" {
		t.Errorf("the wrong entry for x.yaml was not corrected: %q", n)
	}
}

// An entry that names a file otherwise hides it: the index is trusted,
// which is why it is kept only where no one else can change it.
func TestNameIndexIsTrusted(t *testing.T) {
	s, root := testScopes(t)
	s = indexed(s, "")
	y := filepath.Join(root, "cwd/.sandboxed/tools/y.yaml")
	writeFile(t, y, "name: foo\n"+okTool)
	data, err := os.ReadFile(y)
	if err != nil {
		t.Fatal(err)
	}
	s.Index.put(indexKey(y, data), "bar")
	if _, err := s.Find("foo", ScopeAny); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Find(foo) with y.yaml indexed as bar = %v; want it unread, so not found", err)
	}
}

// The index is neither read nor written where someone else could change
// it, and a damaged one is rebuilt.
func TestNameIndexTrust(t *testing.T) {
	s, root := testScopes(t)
	writeFile(t, filepath.Join(root, "cwd/.sandboxed/tools/a.yaml"), "name: alpha\n"+okTool)

	open := filepath.Join(root, "open")
	if err := os.MkdirAll(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(root, "cwd/.sandboxed/tools/a.yaml")
	adata, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	forged := []byte(`{"rules":"` + nameRules + `","names":{"` + indexKey(a, adata) + `":"zzz"}}`)
	planted := filepath.Join(open, "tool-names.json")
	if err := os.WriteFile(planted, forged, 0o600); err != nil {
		t.Fatal(err)
	}
	si := indexed(s, planted)
	if d, err := si.Find("alpha", ScopeAny); err != nil || d.Name != "alpha" {
		t.Fatalf("Find(alpha) = %v, %v", d, err)
	}
	if data, _ := os.ReadFile(planted); strings.Contains(string(data), "alpha") {
		t.Errorf("the index was written in a directory others can write: %s", data)
	}

	// A forged index in a directory of this user's, in a file of
	// someone else's (root can make one), is not read either.
	path := filepath.Join(root, "cache/tool-names.json")
	if os.Geteuid() == 0 {
		writeFile(t, path, string(forged))
		if err := os.Chown(path, 12345, 12345); err != nil {
			t.Fatal(err)
		}
		if d, err := indexed(s, path).Find("alpha", ScopeAny); err != nil || d.Name != "alpha" {
			t.Fatalf("Find(alpha) with a forged index of another uid = %v, %v", d, err)
		}
		os.Remove(path)
	}
	writeFile(t, path, "{not json")
	damaged := indexed(s, path)
	if d, err := damaged.Find("alpha", ScopeAny); err != nil || d.Name != "alpha" {
		t.Fatalf("Find with a damaged index = %v, %v", d, err)
	}
	if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), `"alpha"`) {
		t.Errorf("the damaged index was not rebuilt: %s, %v", data, err)
	}
}

// Past its bound, the index keeps only the entries this process used.
func TestNameIndexPrune(t *testing.T) {
	defer func(n int) { maxIndexEntries = n }(maxIndexEntries)
	maxIndexEntries = 2
	s, root := testScopes(t)
	writeFile(t, filepath.Join(root, "cwd/.sandboxed/tools/a.yaml"), "name: alpha\n"+okTool)
	path := filepath.Join(root, "cache/tool-names.json")
	old := &NameIndex{Path: path}
	for _, k := range []string{"k1", "k2", "k3"} {
		old.put(k, "old-"+k)
	}
	old.save()
	si := indexed(s, path)
	if _, err := si.Find("alpha", ScopeAny); err != nil {
		t.Fatal(err)
	}
	if len(si.Index.names) != 1 {
		t.Fatalf("after pruning: %v, want alpha's entry only", si.Index.names)
	}
}

// A file's name does not depend on whether the rest of it is valid: for
// every definition Parse accepts, sniffData (the rule for files it does
// not) gives the same name, and a file made invalid keeps it.
func TestSniffDataAgreesWithParse(t *testing.T) {
	var files []string
	for _, root := range []string{"testdata", "../examples"} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				files = append(files, p)
			}
			return nil
		})
	}
	cases := map[string]string{
		"number.yaml":   "name: 123\n" + okTool,
		"quoted.yaml":   "name: 'q-1'\n" + okTool,
		"empty.yaml":    "name: ''\n" + okTool,
		"null.yaml":     "name: ~\n" + okTool,
		"nameless.yaml": okTool,
	}
	valid := 0
	check := func(file string, data []byte) {
		def, err := Parse(data, file)
		if err != nil {
			return
		}
		valid++
		if n := sniffData(data, file); n != def.Name {
			t.Errorf("%s: sniffData says %q, Parse %q", file, n, def.Name)
		}
		// The same file made invalid by an unknown key keeps its name.
		broken := append(append([]byte(nil), data...), "\nno-such-key-here: 1\n"...)
		if _, err := Parse(broken, file); err == nil {
			t.Errorf("%s: still valid with an unknown key", file)
		} else if n := sniffData(broken, file); n != def.Name {
			t.Errorf("%s made invalid: sniffData says %q, Parse said %q when it was valid", file, n, def.Name)
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		check(f, data)
	}
	for name, data := range cases {
		check(filepath.Join(t.TempDir(), name), []byte(data))
	}
	if valid < 20 {
		t.Errorf("only %d valid definitions checked", valid)
	}
}
