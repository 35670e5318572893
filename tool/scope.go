package tool

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// ScopeAny searches every scope: local, then user, then global.
const ScopeAny Scope = "any"

// scopeOrder is the search order for ScopeAny.
var scopeOrder = []Scope{ScopeLocal, ScopeUser, ScopeGlobal}

// ParseScope parses a --scope value: local, user, global, or any ("" is any).
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case "", ScopeAny:
		return ScopeAny, nil
	case ScopeLocal, ScopeUser, ScopeGlobal:
		return Scope(s), nil
	}
	return "", fmt.Errorf("parse scope %q: scopes are local, user, global and any", s)
}

// Scopes says which directories hold the definitions of each scope, in
// search order within the scope. Our own directory comes first, then the
// CYCOD one, read for compatibility.
type Scopes struct {
	Dirs map[Scope][]string
	// Index, when set, lets Find parse only the files that declare the
	// name it looks for (see NameIndex); nil: Find parses every file of
	// the scopes it searches.
	Index *NameIndex
}

// DefaultScopes is the standard layout: local ./.sandboxed/tools and
// ./.cycod/tools under cwd, user ~/.sandboxed/tools and ~/.cycod/tools under
// home, global /etc/sandboxed/tools and /etc/cycod/tools.
func DefaultScopes(cwd, home string) Scopes {
	return ScopesAt(cwd, home, "/etc")
}

// ScopesAt is DefaultScopes with the global scope under etc instead of
// /etc (tests and packagers use it). An empty home leaves the user scope
// without directories.
func ScopesAt(cwd, home, etc string) Scopes {
	s := Scopes{Dirs: map[Scope][]string{
		ScopeLocal:  {filepath.Join(cwd, ".sandboxed", "tools"), filepath.Join(cwd, ".cycod", "tools")},
		ScopeGlobal: {filepath.Join(etc, "sandboxed", "tools"), filepath.Join(etc, "cycod", "tools")},
	}}
	if home != "" {
		s.Dirs[ScopeUser] = []string{filepath.Join(home, ".sandboxed", "tools"), filepath.Join(home, ".cycod", "tools")}
	}
	return s
}

// WriteDir is the directory new definitions of scope go to (add, import):
// the scope's first directory.
func (s Scopes) WriteDir(scope Scope) (string, error) {
	if scope == "" || scope == ScopeAny {
		scope = ScopeLocal
	}
	dirs := s.Dirs[scope]
	if len(dirs) == 0 {
		return "", fmt.Errorf("find directory for scope %s: none configured", scope)
	}
	return dirs[0], nil
}

// Entry is one definition file found in a scope. Exactly one of Def and Err
// is set: a file that fails to load is reported, never dropped.
type Entry struct {
	Name  string // the definition's name; for a file that fails to load, its name: line or file name
	Path  string
	Scope Scope
	Def   *Definition
	Err   error
	// Shadowed is set when a scope searched earlier has a tool of the same
	// name, so Find never returns this one.
	Shadowed bool
}

func (s Scopes) scopes(scope Scope) ([]Scope, error) {
	switch scope {
	case "", ScopeAny:
		return scopeOrder, nil
	case ScopeLocal, ScopeUser, ScopeGlobal:
		return []Scope{scope}, nil
	}
	return nil, fmt.Errorf("list tools: unknown scope %q (scopes are local, user, global and any)", scope)
}

// List returns every definition file (*.yaml, *.yml) of scope ("" or
// ScopeAny: all scopes, in search order), sorted by name within a scope.
// Two files of one scope that claim the same name both get an Err wrapping
// ErrConflict. Directories that do not exist are skipped; any other
// failure to read a directory is an error.
func (s Scopes) List(scope Scope) ([]Entry, error) {
	scs, err := s.scopes(scope)
	if err != nil {
		return nil, err
	}
	var all []Entry
	seen := map[string]bool{}
	for _, sc := range scs {
		entries, err := s.listScope(sc)
		if err != nil {
			return nil, err
		}
		for i := range entries {
			if seen[entries[i].Name] {
				entries[i].Shadowed = true
			}
		}
		for _, e := range entries {
			seen[e.Name] = true
		}
		all = append(all, entries...)
	}
	return all, nil
}

func (s Scopes) listScope(sc Scope) ([]Entry, error) {
	var out []Entry
	err := s.eachFile(sc, func(path string, _ fs.FileInfo) {
		e := Entry{Path: path, Scope: sc}
		e.Def, e.Name, e.Err = loadEntry(path, sc)
		out = append(out, e)
	})
	if err != nil {
		return nil, err
	}
	// Conflicts within the scope.
	byName := map[string][]int{}
	for i, e := range out {
		byName[e.Name] = append(byName[e.Name], i)
	}
	for name, idx := range byName {
		if len(idx) < 2 {
			continue
		}
		var paths []string
		for _, i := range idx {
			paths = append(paths, out[i].Path)
		}
		for _, i := range idx {
			out[i].Def = nil
			out[i].Err = conflictError(name, sc, paths)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// eachFile calls f for each definition file of scope sc (a regular file,
// or a link to one, named *.yaml or *.yml, not hidden), directory by
// directory in the scope's order, each in name order.
func (s Scopes) eachFile(sc Scope, f func(path string, fi fs.FileInfo)) error {
	for _, dir := range s.Dirs[sc] {
		des, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return fmt.Errorf("list %s tools in %s: %w", sc, dir, err)
		}
		for _, de := range des {
			name := de.Name()
			lower := strings.ToLower(name)
			if strings.HasPrefix(name, ".") || !(strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml")) {
				continue
			}
			path := filepath.Join(dir, name)
			fi, err := os.Stat(path)
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			f(path, fi)
		}
	}
	return nil
}

// loadEntry loads the definition at path (Load) and returns the name its
// entry goes by: the definition's, or for a file that fails to load its
// name: line or file name, read from the same bytes.
func loadEntry(path string, sc Scope) (*Definition, string, error) {
	data, abs, err := readDefinition(path)
	if err != nil {
		return nil, sniffName(path), err
	}
	def, err := build(data, path, abs, sc)
	return def, entryNameOf(def, data, path), err
}

// entryNameOf is the name an entry parsed from data goes by (loadEntry).
func entryNameOf(def *Definition, data []byte, path string) string {
	if def != nil {
		return def.Name
	}
	return sniffData(data, path)
}

func conflictError(name string, sc Scope, paths []string) error {
	return fmt.Errorf("tool %s in %s scope: %w: defined by %s (hint: rename or remove all but one)",
		name, sc, ErrConflict, strings.Join(paths, " and "))
}

// findIndexed is Find's search of one scope with s.Index: every file is
// read, but only those that declare name, or that the index does not
// know, are parsed (and indexed). found is false when no file of sc
// declares name. A file that turns out not to declare the name the index
// said sends the search back to parsing the whole scope.
func (s Scopes) findIndexed(name string, sc Scope) (def *Definition, found bool, err error) {
	x := s.Index
	type match struct {
		path string
		def  *Definition
		err  error
	}
	var matches []match
	wrong := false
	err = s.eachFile(sc, func(path string, _ fs.FileInfo) {
		data, abs, rerr := readDefinition(path)
		if rerr != nil {
			// Not indexed (the reason may be this process's): as
			// without an index.
			if sniffName(path) == name {
				matches = append(matches, match{path, nil, rerr})
			}
			return
		}
		key := indexKey(path, data)
		n, known := x.name(key)
		if known && n != name {
			return
		}
		d, lerr := build(data, path, abs, sc)
		got := entryNameOf(d, data, path)
		if got != n {
			x.put(key, got) // new, or wrong
		}
		switch {
		case got == name:
			matches = append(matches, match{path, d, lerr})
		case known:
			wrong = true
		}
	})
	if err != nil {
		return nil, false, err
	}
	if wrong {
		return s.findListed(name, sc)
	}
	switch len(matches) {
	case 0:
		return nil, false, nil
	case 1:
		return matches[0].def, true, matches[0].err
	}
	var paths []string
	for _, m := range matches {
		paths = append(paths, m.path)
	}
	return nil, true, conflictError(name, sc, paths)
}

// findListed is Find's search of one scope without an index.
func (s Scopes) findListed(name string, sc Scope) (*Definition, bool, error) {
	entries, err := s.listScope(sc)
	if err != nil {
		return nil, false, err
	}
	for _, e := range entries {
		if e.Name == name {
			return e.Def, true, e.Err
		}
	}
	return nil, false, nil
}

// sniffName is the name a file that failed to load claims: its top-level
// name: if that can be read at all, else the file name.
func sniffName(path string) string {
	data, err := os.ReadFile(path)
	if err != nil || len(data) > MaxFileSize {
		return nameFromFile(path)
	}
	return sniffData(data, path)
}

// sniffData is sniffName for the bytes data read from path. It follows
// Parse's rule for a valid definition's name (the last top-level name:
// scalar of the first document, else the file name), so that a file's
// name does not depend on whether the rest of it is valid: the name index
// relies on that.
func sniffData(data []byte, path string) (name string) {
	defer func() {
		if recover() != nil {
			name = nameFromFile(path)
		}
	}()
	var doc yaml.Node
	if yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc) != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nameFromFile(path)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nameFromFile(path)
	}
	var v *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "name" {
			v = root.Content[i+1]
		}
	}
	if v == nil || nodeIsNull(v) || v.Kind != yaml.ScalarNode || !isToolName(v.Value) {
		return nameFromFile(path)
	}
	return v.Value
}

// Find returns the definition called name in scope; with ScopeAny it
// searches local, then user, then global and returns the first found. A
// definition that exists but fails to load returns its load error; two
// definitions of the name in one scope return ErrConflict; none returns
// ErrNotFound with the directories searched.
func (s Scopes) Find(name string, scope Scope) (*Definition, error) {
	scs, err := s.scopes(scope)
	if err != nil {
		return nil, err
	}
	if s.Index != nil {
		defer s.Index.save()
	}
	var searched []string
	for _, sc := range scs {
		find := s.findListed
		if s.Index != nil {
			find = s.findIndexed
		}
		def, found, err := find(name, sc)
		if found || err != nil {
			if err != nil {
				return nil, err
			}
			return def, nil
		}
		searched = append(searched, fmt.Sprintf("%s: %s", sc, strings.Join(s.Dirs[sc], ", ")))
	}
	return nil, fmt.Errorf("find tool %s: %w (searched %s) (hint: add it with `sandboxed tool add`, import a file with `sandboxed tool import FILE`, or give a path to a .yaml file)",
		name, ErrNotFound, strings.Join(searched, "; "))
}

// WithBase returns def merged with its base tool (found in any scope of
// s) when def is an alias, and def itself otherwise.
func (s Scopes) WithBase(def *Definition) (*Definition, error) {
	if def.Type != "alias" {
		return def, nil
	}
	base, err := s.Find(def.BaseTool, ScopeAny)
	if err != nil {
		return nil, fmt.Errorf("alias %s: base tool %s: %w", def.Name, def.BaseTool, err)
	}
	return MergeAlias(def, base), nil
}

// Resolve finds the tool a command-line argument names: a path when arg
// contains a slash or ends in .yaml/.yml and the file exists (loaded with
// ScopePath), otherwise a name looked up with Find.
func (s Scopes) Resolve(arg string, scope Scope) (*Definition, error) {
	lower := strings.ToLower(arg)
	looksPath := strings.ContainsRune(arg, os.PathSeparator) || strings.ContainsRune(arg, '/')
	if looksPath || strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml") {
		if fi, err := os.Stat(arg); err == nil && !fi.IsDir() {
			return Load(arg, ScopePath)
		}
		if looksPath {
			return nil, fmt.Errorf("load tool %s: %w: no such file (hint: check the path, or give a tool name)", arg, ErrNotFound)
		}
	}
	return s.Find(arg, scope)
}
