package tool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const okTool = "description: d\nbash: echo hi\n"

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testScopes builds a layout under a temp dir: cwd, home and etc.
func testScopes(t *testing.T) (Scopes, string) {
	root := t.TempDir()
	return ScopesAt(filepath.Join(root, "cwd"), filepath.Join(root, "home"), filepath.Join(root, "etc")), root
}

func TestDefaultScopes(t *testing.T) {
	s := DefaultScopes("/w", "/h")
	want := map[Scope][]string{
		ScopeLocal:  {"/w/.sandboxed/tools", "/w/.cycod/tools"},
		ScopeUser:   {"/h/.sandboxed/tools", "/h/.cycod/tools"},
		ScopeGlobal: {"/etc/sandboxed/tools", "/etc/cycod/tools"},
	}
	for sc, dirs := range want {
		if strings.Join(s.Dirs[sc], ",") != strings.Join(dirs, ",") {
			t.Errorf("%s: %v, want %v", sc, s.Dirs[sc], dirs)
		}
	}
	if d, _ := s.WriteDir(ScopeUser); d != "/h/.sandboxed/tools" {
		t.Errorf("WriteDir(user) = %s", d)
	}
}

func TestFindOrder(t *testing.T) {
	s, root := testScopes(t)
	writeFile(t, filepath.Join(root, "etc/sandboxed/tools/hello.yaml"), "description: global\nbash: echo\n")
	writeFile(t, filepath.Join(root, "home/.cycod/tools/hello.yaml"), "description: user\nbash: echo\n")
	writeFile(t, filepath.Join(root, "etc/cycod/tools/only-global.yml"), okTool)

	d, err := s.Find("hello", ScopeAny)
	if err != nil || d.Description != "user" || d.Source.Scope != ScopeUser {
		t.Fatalf("Find(any) = %+v, %v; want the user one", d, err)
	}
	d, err = s.Find("hello", ScopeGlobal)
	if err != nil || d.Description != "global" {
		t.Fatalf("Find(global) = %+v, %v", d, err)
	}
	writeFile(t, filepath.Join(root, "cwd/.sandboxed/tools/hello.yaml"), "description: local\nbash: echo\n")
	if d, err = s.Find("hello", ""); err != nil || d.Description != "local" {
		t.Fatalf("Find(\"\") = %+v, %v; want the local one", d, err)
	}
	if d, err = s.Find("only-global", ScopeAny); err != nil || d.Source.Scope != ScopeGlobal || d.Source.SHA256 == "" {
		t.Fatalf("Find(only-global) = %+v, %v", d, err)
	}

	_, err = s.Find("missing", ScopeAny)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Find(missing) = %v, want ErrNotFound", err)
	}
	for _, want := range []string{"local: ", "user: ", "global: ", ".cycod/tools", "hint:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("not-found error %q lacks %q", err, want)
		}
	}
	if _, err := s.Find("x", "team"); err == nil {
		t.Error("unknown scope accepted")
	}
}

func TestListReportsBrokenAndConflicts(t *testing.T) {
	s, root := testScopes(t)
	local := filepath.Join(root, "cwd/.sandboxed/tools")
	writeFile(t, filepath.Join(local, "good.yaml"), okTool)
	writeFile(t, filepath.Join(local, "broken.yaml"), "name: broken\ndescription: d\n")
	writeFile(t, filepath.Join(local, "notes.txt"), "not a tool")
	writeFile(t, filepath.Join(local, "a.yaml"), "name: twin\n"+okTool)
	writeFile(t, filepath.Join(root, "cwd/.cycod/tools/b.yml"), "name: twin\n"+okTool)
	writeFile(t, filepath.Join(root, "home/.sandboxed/tools/good.yaml"), okTool)

	entries, err := s.List(ScopeAny)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]Entry{}
	for _, e := range entries {
		if (e.Def == nil) == (e.Err == nil) {
			t.Errorf("%s: exactly one of Def and Err must be set: %+v", e.Path, e)
		}
		byKey[string(e.Scope)+"/"+e.Name+"/"+filepath.Base(e.Path)] = e
	}
	if len(entries) != 5 {
		t.Fatalf("got %d entries, want 5: %+v", len(entries), entries)
	}
	b := byKey["local/broken/broken.yaml"]
	if !errors.Is(b.Err, ErrInvalid) || !strings.Contains(b.Err.Error(), "no command to run") {
		t.Errorf("broken entry = %+v", b)
	}
	for _, f := range []string{"a.yaml", "b.yml"} {
		if e := byKey["local/twin/"+f]; !errors.Is(e.Err, ErrConflict) {
			t.Errorf("twin %s = %+v, want ErrConflict", f, e)
		}
	}
	if e := byKey["user/good/good.yaml"]; !e.Shadowed || e.Def == nil {
		t.Errorf("user good = %+v, want loaded and shadowed", e)
	}
	if e := byKey["local/good/good.yaml"]; e.Shadowed {
		t.Errorf("local good is shadowed")
	}
	if _, err := s.Find("twin", ScopeLocal); !errors.Is(err, ErrConflict) {
		t.Errorf("Find(twin) = %v, want ErrConflict", err)
	}
	if _, err := s.Find("broken", ScopeAny); !errors.Is(err, ErrInvalid) {
		t.Errorf("Find(broken) = %v, want ErrInvalid", err)
	}
	only, err := s.List(ScopeUser)
	if err != nil || len(only) != 1 || only[0].Shadowed {
		t.Errorf("List(user) = %+v, %v", only, err)
	}
}

func TestResolve(t *testing.T) {
	s, root := testScopes(t)
	writeFile(t, filepath.Join(root, "cwd/.sandboxed/tools/hello.yaml"), okTool)
	file := filepath.Join(root, "elsewhere/greet.yaml")
	writeFile(t, file, okTool)

	d, err := s.Resolve(file, ScopeAny)
	if err != nil || d.Name != "greet" || d.Source.Scope != ScopePath || d.Source.Path != file {
		t.Fatalf("Resolve(path) = %+v, %v", d, err)
	}
	if d, err = s.Resolve("hello", ScopeAny); err != nil || d.Source.Scope != ScopeLocal {
		t.Fatalf("Resolve(name) = %+v, %v", d, err)
	}
	if _, err = s.Resolve("./nope/x.yaml", ScopeAny); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve(missing path) = %v", err)
	}
	if _, err = s.Resolve("nope.yaml", ScopeAny); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve(missing name.yaml) = %v", err)
	}
}

func TestParseScope(t *testing.T) {
	for in, want := range map[string]Scope{"": ScopeAny, "any": ScopeAny, "local": ScopeLocal, "user": ScopeUser, "global": ScopeGlobal} {
		if got, err := ParseScope(in); err != nil || got != want {
			t.Errorf("ParseScope(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseScope("path"); err == nil {
		t.Error("ParseScope(path) accepted")
	}
}

func TestLoadSource(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.yaml")
	writeFile(t, p, okTool)
	d, err := Load(p, ScopeUser)
	if err != nil {
		t.Fatal(err)
	}
	// sha256("description: d\nbash: echo hi\n")
	if d.Source.Path != p || d.Source.Scope != ScopeUser || len(d.Source.SHA256) != 64 || string(d.Source.Raw) != okTool {
		t.Errorf("source = %+v", d.Source)
	}
	if _, err := Load(filepath.Join(dir, "none.yaml"), ScopeUser); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load(missing) = %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	writeFile(t, big, strings.Repeat("#", MaxFileSize+1))
	if _, err := Load(big, ScopeUser); !errors.Is(err, ErrInvalid) {
		t.Errorf("Load(big) = %v", err)
	}
}

func TestLoadRefusesNonRegularFiles(t *testing.T) {
	if _, err := Load(t.TempDir(), ScopePath); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Load(dir) = %v", err)
	}
	// A FIFO with no writer: refused at once, not waited on.
	fifo := filepath.Join(t.TempDir(), "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Load(fifo, ScopePath)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Load(fifo) = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Load(fifo) blocked")
	}
}
