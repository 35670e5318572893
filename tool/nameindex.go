package tool

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// NameIndex remembers the tool name each definition file declares, by the
// file's identity (device, inode, size, modification and change times), so
// that finding a tool by name (Scopes.Find) parses only the files that
// declare that name, not every file of every scope searched: with many
// tools installed, that parse was most of a run's start.
//
// A file changed since it was indexed has another change time, which no
// unprivileged program can set back, and is parsed again. A file changed
// less than Settle before it would be indexed is not kept: two changes
// within the file system's timestamp granularity could leave the same
// times. The index only chooses which files to parse: the file Find
// returns is always parsed in full, and a name that does not match what
// the index said makes Find parse the whole scope, as without an index.
//
// It is kept at Path between processes (a cache: written best-effort,
// rebuilt when missing or unreadable) and is safe for concurrent use.
type NameIndex struct {
	// Path is the file the index is kept in; "" keeps it in memory only.
	Path string
	// Settle is how long a file must have been unchanged to be indexed;
	// zero is DefaultSettle.
	Settle time.Duration

	mu      sync.Mutex
	loaded  bool
	dirty   bool
	entries map[string]indexEntry
	used    map[string]bool // entries this process looked up or made
}

// maxIndexEntries bounds the index: past it, a save drops the entries of
// files that are gone or changed, then, if that is not enough, all that
// this process did not use (the local scopes of projects left behind).
var maxIndexEntries = 4096

// DefaultSettle is NameIndex.Settle's default.
const DefaultSettle = time.Second

// indexEntry is what the index knows of one file.
type indexEntry struct {
	ID   fileID `json:"id"`
	Name string `json:"name"`
}

// fileID is what tells one version of a file from another.
type fileID struct {
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime"` // ns
	Ctime int64  `json:"ctime"` // ns
}

// indexFile is the index's format on disk.
type indexFile struct {
	Version int                   `json:"version"`
	Files   map[string]indexEntry `json:"files"`
}

const indexVersion = 1

var (
	sharedMu      sync.Mutex
	sharedIndexes = map[string]*NameIndex{}
)

// SharedNameIndex is this process's index kept at path: every Scopes of
// the process that uses it shares its entries (a server's calls do).
func SharedNameIndex(path string) *NameIndex {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	x := sharedIndexes[path]
	if x == nil {
		x = &NameIndex{Path: path}
		sharedIndexes[path] = x
	}
	return x
}

// load reads the index from Path once. Preconditions: x.mu is held.
func (x *NameIndex) load() {
	if x.loaded {
		return
	}
	x.loaded = true
	x.entries = map[string]indexEntry{}
	x.used = map[string]bool{}
	if x.Path == "" {
		return
	}
	data, err := os.ReadFile(x.Path)
	if err != nil {
		return
	}
	var f indexFile
	if json.Unmarshal(data, &f) != nil || f.Version != indexVersion {
		return // another version's, or damaged: rebuilt as files are read
	}
	for p, e := range f.Files {
		x.entries[p] = e
	}
}

// name is the name the index holds for path at id.
func (x *NameIndex) name(path string, id fileID) (string, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.load()
	e, ok := x.entries[path]
	if !ok || e.ID != id {
		return "", false
	}
	x.used[path] = true
	return e.Name, true
}

// put records that path at id declares name, unless the file changed too
// recently to be told apart from its next change.
func (x *NameIndex) put(path string, id fileID, name string) {
	settle := x.Settle
	if settle == 0 {
		settle = DefaultSettle
	}
	if time.Since(time.Unix(0, max(id.Ctime, id.Mtime))) < settle {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.load()
	if e, ok := x.entries[path]; ok && e.ID == id && e.Name == name {
		return
	}
	x.entries[path] = indexEntry{ID: id, Name: name}
	x.used[path] = true
	x.dirty = true
}

// prune keeps the index within maxIndexEntries. Preconditions: x.mu is
// held.
func (x *NameIndex) prune() {
	if len(x.entries) <= maxIndexEntries {
		return
	}
	for p, e := range x.entries {
		fi, err := os.Stat(p)
		if err != nil {
			delete(x.entries, p)
			continue
		}
		if id, ok := identify(fi); !ok || id != e.ID {
			delete(x.entries, p)
		}
	}
	if len(x.entries) <= maxIndexEntries {
		return
	}
	for p := range x.entries {
		if !x.used[p] {
			delete(x.entries, p)
		}
	}
}

// forget drops the entries of files in dir that are no longer there
// (seen lists those that are).
func (x *NameIndex) forget(dir string, seen map[string]bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.load()
	for p := range x.entries {
		if filepath.Dir(p) == dir && !seen[p] {
			delete(x.entries, p)
			x.dirty = true
		}
	}
}

// save writes the index to Path if it changed. A failure to write leaves
// the next process to parse the files again, nothing worse.
func (x *NameIndex) save() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.dirty || x.Path == "" {
		return
	}
	x.prune()
	data, err := json.Marshal(indexFile{Version: indexVersion, Files: x.entries})
	if err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(x.Path), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(x.Path), ".tool-names-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), x.Path) != nil {
		os.Remove(tmp.Name())
		return
	}
	x.dirty = false
}
