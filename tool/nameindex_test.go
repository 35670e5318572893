package tool

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// indexed is s with a name index kept at path, which indexes files
// however recently they changed.
func indexed(s Scopes, path string) Scopes {
	s.Index = &NameIndex{Path: path, Settle: time.Nanosecond}
	return s
}

// outcome is what a Find returned, comparable between two searches.
func outcome(d *Definition, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return d.Name + " " + d.Description + " " + string(d.Source.Scope) + " " + d.Source.Path
}

// With an index, Find returns exactly what it returns without one, on
// the first search (which parses and indexes) and on the next (which uses
// the index): found, shadowed, in conflict, broken, named apart from its
// file, missing.
func TestFindIndexedAgreesWithFindListed(t *testing.T) {
	s, root := testScopes(t)
	writeFile(t, filepath.Join(root, "etc/sandboxed/tools/hello.yaml"), "description: global\nbash: echo\n")
	writeFile(t, filepath.Join(root, "home/.cycod/tools/hello.yaml"), "description: user\nbash: echo\n")
	writeFile(t, filepath.Join(root, "etc/cycod/tools/only-global.yml"), okTool)
	local := filepath.Join(root, "cwd/.sandboxed/tools")
	writeFile(t, filepath.Join(local, "good.yaml"), okTool)
	writeFile(t, filepath.Join(local, "broken.yaml"), "name: broken\ndescription: d\n")
	writeFile(t, filepath.Join(local, "a.yaml"), "name: twin\n"+okTool)
	writeFile(t, filepath.Join(root, "cwd/.cycod/tools/b.yml"), "name: twin\n"+okTool)
	writeFile(t, filepath.Join(local, "file-name.yaml"), "name: other-name\n"+okTool)
	writeFile(t, filepath.Join(root, "home/.sandboxed/tools/good.yaml"), "description: shadowed\nbash: echo\n")

	si := indexed(s, filepath.Join(root, "cache/tool-names.json"))
	names := []string{"hello", "only-global", "good", "broken", "twin", "other-name", "file-name", "missing"}
	for pass := 1; pass <= 2; pass++ {
		for _, n := range names {
			for _, sc := range []Scope{ScopeAny, ScopeLocal, ScopeUser, ScopeGlobal} {
				want := outcome(s.Find(n, sc))
				if got := outcome(si.Find(n, sc)); got != want {
					t.Errorf("pass %d: Find(%s, %s) with an index:\n%s\nwithout:\n%s", pass, n, sc, got, want)
				}
			}
		}
	}
	if n := len(si.Index.entries); n != 9 {
		t.Errorf("the index holds %d files, want all 9: %v", n, si.Index.entries)
	}
	if _, err := os.Stat(si.Index.Path); err != nil {
		t.Errorf("the index was not kept: %v", err)
	}
}

// A changed file is parsed again; a removed one is forgotten.
func TestNameIndexFollowsChanges(t *testing.T) {
	s, root := testScopes(t)
	s = indexed(s, "")
	f := filepath.Join(root, "cwd/.sandboxed/tools/a.yaml")
	writeFile(t, f, "name: alpha\n"+okTool)
	if d, err := s.Find("alpha", ScopeAny); err != nil || d.Name != "alpha" {
		t.Fatalf("Find(alpha) = %v, %v", d, err)
	}
	writeFile(t, f, "name: beta-renamed\n"+okTool) // another size, another change time
	if d, err := s.Find("beta-renamed", ScopeAny); err != nil || d.Name != "beta-renamed" {
		t.Fatalf("Find(beta-renamed) after the change = %v, %v", d, err)
	}
	if _, err := s.Find("alpha", ScopeAny); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Find(alpha) after the change = %v, want ErrNotFound", err)
	}
	if err := os.Remove(f); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Find("beta-renamed", ScopeAny); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Find after the removal = %v, want ErrNotFound", err)
	}
	if len(s.Index.entries) != 0 {
		t.Errorf("the removed file is still indexed: %v", s.Index.entries)
	}
}

// An entry that is wrong about a file's name (it cannot be, short of
// editing the index) sends the search back to parsing the scope.
func TestNameIndexWrongEntry(t *testing.T) {
	s, root := testScopes(t)
	s = indexed(s, "")
	dir := filepath.Join(root, "cwd/.sandboxed/tools")
	writeFile(t, filepath.Join(dir, "x.yaml"), "name: bar\n"+okTool)
	writeFile(t, filepath.Join(dir, "y.yaml"), "name: foo\ndescription: the real foo\nbash: echo\n")
	fi, err := os.Stat(filepath.Join(dir, "x.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	id, ok := identify(fi)
	if !ok {
		t.Skip("no file identity on this platform: the index is not used")
	}
	s.Index.put(filepath.Join(dir, "x.yaml"), id, "foo")
	d, err := s.Find("foo", ScopeLocal)
	if err != nil || d.Description != "the real foo" {
		t.Fatalf("Find(foo) with a wrong entry = %v, %v; want y.yaml's, and no conflict", d, err)
	}
}

// A file changed less than Settle ago is not indexed, and an index
// another process kept is read.
func TestNameIndexSettleAndPersist(t *testing.T) {
	s, root := testScopes(t)
	path := filepath.Join(root, "cache/tool-names.json")
	f := filepath.Join(root, "cwd/.sandboxed/tools/a.yaml")
	writeFile(t, f, "name: alpha\n"+okTool)

	fresh := s
	fresh.Index = &NameIndex{Path: path} // the default second
	if _, err := fresh.Find("alpha", ScopeAny); err != nil {
		t.Fatal(err)
	}
	if len(fresh.Index.entries) != 0 {
		t.Errorf("a file changed just now was indexed: %v", fresh.Index.entries)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("an empty index was written: %v", err)
	}

	if _, err := indexed(s, path).Find("alpha", ScopeAny); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), f) {
		t.Fatalf("index file: %s, %v", data, err)
	}
	next := &NameIndex{Path: path}
	fi, _ := os.Stat(f)
	id, _ := identify(fi)
	if n, ok := next.name(f, id); !ok || n != "alpha" {
		t.Errorf("another process's index: %q, %v", n, ok)
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	damaged := s
	damaged.Index = &NameIndex{Path: path}
	if d, err := damaged.Find("alpha", ScopeAny); err != nil || d.Name != "alpha" {
		t.Errorf("Find with a damaged index = %v, %v", d, err)
	}
}

// Past its bound, the index drops the entries of files that are gone,
// then those this process did not use.
func TestNameIndexPrune(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "live.yaml")
	writeFile(t, live, okTool)
	fi, err := os.Stat(live)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := identify(fi)
	x := &NameIndex{Path: filepath.Join(dir, "idx.json"), Settle: time.Nanosecond}
	x.mu.Lock()
	x.load()
	for i := range maxIndexEntries + 10 {
		x.entries[filepath.Join(dir, "gone", strconv.Itoa(i)+".yaml")] = indexEntry{Name: "t"}
	}
	x.dirty = true
	x.mu.Unlock()
	x.put(live, id, "live")
	x.save()
	if len(x.entries) != 1 || x.entries[live].Name != "live" {
		t.Fatalf("after pruning gone files: %d entries, live %+v", len(x.entries), x.entries[live])
	}

	// Files that are there and unchanged, but that this process never
	// used: the local scopes of projects left behind.
	defer func(n int) { maxIndexEntries = n }(maxIndexEntries)
	maxIndexEntries = 2
	x.mu.Lock()
	for _, n := range []string{"a", "b", "c"} {
		p := filepath.Join(dir, "old", n+".yaml")
		writeFile(t, p, okTool)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		oid, _ := identify(fi)
		x.entries[p] = indexEntry{ID: oid, Name: n}
	}
	x.dirty = true
	x.mu.Unlock()
	x.save()
	if len(x.entries) != 1 || x.entries[live].Name != "live" {
		t.Fatalf("after pruning unused entries: %v, want the used one only", x.entries)
	}
}
