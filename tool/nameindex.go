package tool

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/sandboxed-dev/sandboxed/internal/xdg"
)

// NameIndex remembers the tool name each definition declares, by a hash
// of what the name follows from (the file's bytes and its base name), so
// that finding a tool by name (Scopes.Find) reads every definition file
// but parses only those that declare the name, not every file of every
// scope searched: with many tools installed, that parse was most of a
// run's start. Reading and hashing a file is cheap; parsing it is not.
//
// An entry can be wrong only if the index file was edited, or written
// under other naming rules (nameRules): a file's name is a function of the
// hashed input (its name: scalar and base name, whether the rest of the
// file is valid or not: sniffData), a file that changes has another hash,
// and the file Find returns is parsed from the very bytes that were hashed
// (a parsed match whose name differs is corrected and sends the search
// back to parsing the whole scope). An entry that hides a file (names it
// otherwise) is trusted: hence the checks on where the index is kept. The index is kept, and read, only in a
// directory that root and this user alone can change (xdg.CheckOwned):
// under sudo with the user's HOME it is not used. The cache directory it
// is kept in is one no grant reaches (see sandbox.OwnDirs).
//
// It is a cache: written best-effort, rebuilt when missing or unreadable.
// It is safe for concurrent use.
type NameIndex struct {
	// Path is the file the index is kept in; "" keeps it in memory only.
	Path string

	mu      sync.Mutex
	loaded  bool
	dirty   bool
	names   map[string]string // hash -> name
	used    map[string]bool   // entries this process looked up or made
	refused bool              // Path is not in a directory of this user's
}

// maxIndexEntries bounds the index: past it, a save drops the entries
// this process did not use (definitions changed or removed, the local
// scopes of projects left behind).
var maxIndexEntries = 4096

// maxIndexSize is the largest index file read.
const maxIndexSize = 4 << 20

// nameRules names the rules that make a file's name (the name: scalar if
// it is a tool name, else the file name: Parse's finish, sniffData);
// entries made under other rules are not used. Change it when those
// rules change. Validity rules do not count: a file's name does not
// depend on them.
const nameRules = "1"

// indexFile is the index's format on disk.
type indexFile struct {
	Rules string            `json:"rules"`
	Names map[string]string `json:"names"`
}

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

// indexKey is the hash a file's name follows from.
func indexKey(path string, data []byte) string {
	h := sha256.New()
	io.WriteString(h, filepath.Base(path))
	h.Write([]byte{0})
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// load reads the index from Path once. Preconditions: x.mu is held.
func (x *NameIndex) load() {
	if x.loaded {
		return
	}
	x.loaded = true
	x.names = map[string]string{}
	x.used = map[string]bool{}
	if x.Path == "" {
		return
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(x.Path))
	if err == nil {
		err = xdg.CheckOwned(dir)
	}
	if err != nil {
		// Someone else's is neither read nor written; a missing one is
		// made by the first save.
		x.refused = !os.IsNotExist(err)
		return
	}
	f, err := os.OpenFile(filepath.Join(dir, filepath.Base(x.Path)), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Geteuid()) {
		return
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIndexSize+1))
	if err != nil || len(data) > maxIndexSize {
		return
	}
	var file indexFile
	if json.Unmarshal(data, &file) != nil || file.Rules != nameRules {
		return // other rules', or damaged: rebuilt as files are parsed
	}
	for k, n := range file.Names {
		x.names[k] = n
	}
}

// name is the name the index holds for key.
func (x *NameIndex) name(key string) (string, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.load()
	n, ok := x.names[key]
	if ok {
		x.used[key] = true
	}
	return n, ok
}

// put records that the file of key declares name.
func (x *NameIndex) put(key, name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.load()
	x.used[key] = true
	if n, ok := x.names[key]; ok && n == name {
		return
	}
	x.names[key] = name
	x.dirty = true
}

// snapshot is the index to write, pruned to maxIndexEntries, or nil when
// there is nothing to write. Preconditions: x.mu is held.
func (x *NameIndex) snapshot() []byte {
	if !x.dirty || x.Path == "" || x.refused {
		return nil
	}
	if len(x.names) > maxIndexEntries {
		for k := range x.names {
			if !x.used[k] {
				delete(x.names, k)
			}
		}
		// The next prune keeps what is used from now on: a server
		// that sees every version of its tools keeps only the last.
		x.used = map[string]bool{}
	}
	data, err := json.Marshal(indexFile{Rules: nameRules, Names: x.names})
	if err != nil {
		return nil
	}
	x.dirty = false
	return data
}

// save writes the index to Path if it changed, through a temporary file
// renamed over it. A failure to write leaves the next process to parse
// the files again, nothing worse.
func (x *NameIndex) save() {
	x.mu.Lock()
	data := x.snapshot()
	x.mu.Unlock()
	if data == nil {
		return
	}
	dir := filepath.Dir(x.Path)
	// Nothing is created where someone else could have prepared the way.
	if xdg.CheckOwned(xdg.ExistingPrefix(dir)) != nil || os.MkdirAll(dir, 0o700) != nil {
		return
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil || xdg.CheckOwned(real) != nil {
		return
	}
	tmp, err := os.CreateTemp(real, ".tool-names-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), filepath.Join(real, filepath.Base(x.Path))) != nil {
		os.Remove(tmp.Name())
	}
}
