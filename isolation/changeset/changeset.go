package changeset

import (
	"slices"
	"strings"
)

// Kind is the type of an entry.
type Kind string

// Kinds of entries. Other (devices, sockets, FIFOs) is recorded so that a
// change to one is seen, but is never recreated.
const (
	KindFile  Kind = "file"
	KindDir   Kind = "dir"
	KindLink  Kind = "symlink"
	KindOther Kind = "other"
)

// Entry is one file, directory or link of a scanned tree.
type Entry struct {
	Kind Kind `json:"kind"`
	// Mode is the permission bits (setuid, setgid and sticky included, as
	// found; they are dropped when an entry is written).
	Mode   uint32 `json:"mode"`
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"` // files: the content's hash
	Target string `json:"target,omitempty"` // links: what they point to
	UID    int    `json:"uid"`
	GID    int    `json:"gid"`

	// What tells an unchanged file without reading it again (see Scan's
	// prev): a file whose inode, size, mtime and ctime are the same has
	// the same content. Not stored.
	ino, mtime, ctime int64
	dev               uint64
}

// Tree is a scanned directory: its entries by path relative to its root,
// slash-separated ("a/b.txt"); the root itself is not in it.
type Tree map[string]Entry

// Op is what happened to a path.
type Op string

// Ops, in the order a reviewer reads them: deletions first.
const (
	OpDeleted  Op = "deleted"
	OpModified Op = "modified"
	OpCreated  Op = "created"
)

// Change is one path whose entry differs between two trees. Before is nil
// for a created path, After for a deleted one.
type Change struct {
	Path   string `json:"path"`
	Op     Op     `json:"op"`
	Before *Entry `json:"before,omitempty"`
	After  *Entry `json:"after,omitempty"`
}

// Diff is what changed from before to after, sorted by path (a directory
// before what it holds).
func Diff(before, after Tree) []Change {
	var out []Change
	for p, b := range before {
		b := b
		a, ok := after[p]
		switch {
		case !ok:
			out = append(out, Change{Path: p, Op: OpDeleted, Before: &b})
		case !same(b, a):
			out = append(out, Change{Path: p, Op: OpModified, Before: &b, After: &a})
		}
	}
	for p, a := range after {
		a := a
		if _, ok := before[p]; !ok {
			out = append(out, Change{Path: p, Op: OpCreated, After: &a})
		}
	}
	slices.SortFunc(out, func(x, y Change) int { return comparePaths(x.Path, y.Path) })
	return out
}

// comparePaths orders paths element by element, so that a directory
// comes right before what it holds ("a", "a/b", "a-b"; plain string order
// would put "a-b" between them).
func comparePaths(x, y string) int {
	return slices.Compare(strings.Split(x, "/"), strings.Split(y, "/"))
}

// same reports whether two entries of one path hold the same thing: kind,
// permission bits, content or target. Owners and times do not count.
func same(a, b Entry) bool {
	if a.Kind != b.Kind || a.Mode != b.Mode {
		return false
	}
	switch a.Kind {
	case KindFile:
		return a.SHA256 == b.SHA256 && a.Size == b.Size
	case KindLink:
		return a.Target == b.Target
	}
	return true
}

// Counts are how many paths each op touched.
type Counts struct {
	Created  int `json:"created"`
	Modified int `json:"modified"`
	Deleted  int `json:"deleted"`
}

// Count counts changes by op.
func Count(cs []Change) Counts {
	var n Counts
	for _, c := range cs {
		switch c.Op {
		case OpCreated:
			n.Created++
		case OpModified:
			n.Modified++
		case OpDeleted:
			n.Deleted++
		}
	}
	return n
}

// Total is the number of changed paths.
func (n Counts) Total() int { return n.Created + n.Modified + n.Deleted }

// ReviewOrder is cs as a reviewer reads it: deletions first, then
// modifications, then creations, each by path.
func ReviewOrder(cs []Change) []Change {
	out := slices.Clone(cs)
	rank := map[Op]int{OpDeleted: 0, OpModified: 1, OpCreated: 2}
	slices.SortStableFunc(out, func(x, y Change) int {
		if d := rank[x.Op] - rank[y.Op]; d != 0 {
			return d
		}
		return comparePaths(x.Path, y.Path)
	})
	return out
}

// Limits bound a scan; zero is no bound.
type Limits struct {
	MaxFiles int   // entries (files, directories, links)
	MaxBytes int64 // bytes of regular files
	// Name, when set, narrows a scan (and a Copy) to that one entry of the
	// root: a write grant of a single file is recorded through its
	// directory, which holds what the grant does not.
	Name string
	// Skip are paths under the root (slash-separated, relative) left out
	// of a scan, with all they hold: sandboxed's own directories inside a
	// grant, which change during a run (its pre-images among them) but
	// not by the tool's hand, and must not be put back by an undo.
	Skip []string
}

// KeepFunc keeps a regular file as a pre-image: it is given the file
// open read-only (fd, at offset 0 or not: read it with pread) and returns
// the sha256 and size of what it kept. The hash is of the kept bytes, not
// of the file as some earlier read found it: a file changed in between
// is kept under its new hash, so a pre-image always holds what its name
// says.
type KeepFunc func(rel string, fd int) (sha string, size int64, err error)
