package changeset

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"path"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/internal/reown"
)

// Scan reads the tree under root without following a link: directories
// are walked by descriptors opened O_NOFOLLOW beneath the last, another
// filesystem mounted inside is not entered (it is one KindOther entry).
// A file whose inode, size and times are as in prev keeps prev's hash
// and is not read again; keep, when set, gets every file read. Over lim
// it stops with a *LimitError.
func Scan(root string, lim Limits, prev Tree, keep KeepFunc) (Tree, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &PathError{Op: "stat", Path: root, Err: err}
	}
	s := &scanner{root: root, lim: lim, prev: prev, keep: keep, dev: st.Dev, tree: Tree{}, skip: map[string]bool{}}
	for _, p := range lim.Skip {
		s.skip[path.Clean(p)] = true
	}
	if err := s.dir(fd, ""); err != nil {
		return nil, err
	}
	return s.tree, nil
}

type scanner struct {
	root  string
	lim   Limits
	prev  Tree
	keep  KeepFunc
	dev   uint64
	tree  Tree
	bytes int64
	skip  map[string]bool // Limits.Skip
}

func (s *scanner) dir(dirfd int, rel string) error {
	names, err := reown.ReadDirNames(dirfd)
	if err != nil {
		return &PathError{Op: "read directory", Path: path.Join(s.root, rel), Err: err}
	}
	for _, name := range names {
		if rel == "" && s.lim.Name != "" && name != s.lim.Name {
			continue
		}
		p := path.Join(rel, name)
		if s.skip[p] {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return &PathError{Op: "stat", Path: path.Join(s.root, p), Err: err}
		}
		if s.lim.MaxFiles > 0 && len(s.tree) >= s.lim.MaxFiles {
			return &LimitError{Root: s.root, What: "files", Limit: int64(s.lim.MaxFiles)}
		}
		e := entryOf(&st)
		if st.Dev != s.dev {
			e.Kind = KindOther // a mount inside the grant: not ours to walk
		}
		switch e.Kind {
		case KindDir:
			s.tree[p] = e
			if err := s.subdir(dirfd, name, p, &st); err != nil {
				return err
			}
			continue
		case KindLink:
			t, err := readlinkat(dirfd, name)
			if err != nil {
				return &PathError{Op: "read link", Path: path.Join(s.root, p), Err: err}
			}
			e.Target = t
		case KindFile:
			s.bytes += e.Size
			if s.lim.MaxBytes > 0 && s.bytes > s.lim.MaxBytes {
				return &LimitError{Root: s.root, What: "bytes", Limit: s.lim.MaxBytes}
			}
			if err := s.file(dirfd, name, p, &e); err != nil {
				return err
			}
		}
		s.tree[p] = e
	}
	return nil
}

func (s *scanner) subdir(dirfd int, name, p string, st *unix.Stat_t) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &PathError{Op: "open", Path: path.Join(s.root, p), Err: err}
	}
	defer unix.Close(fd)
	var dst unix.Stat_t
	if err := unix.Fstat(fd, &dst); err != nil || dst.Ino != st.Ino || dst.Dev != st.Dev {
		return &PathError{Op: "open", Path: path.Join(s.root, p), Err: errors.New("it changed during the scan")}
	}
	return s.dir(fd, p)
}

// file hashes the file name (p under the root) into e, or takes the hash
// from prev when it is the same file unchanged, and hands it to keep.
func (s *scanner) file(dirfd int, name, p string, e *Entry) error {
	if old, ok := s.prev[p]; ok && old.Kind == KindFile && old.ino == e.ino && old.dev == e.dev &&
		old.Size == e.Size && old.mtime == e.mtime && old.ctime == e.ctime && s.keep == nil {
		e.SHA256 = old.SHA256
		return nil
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return &PathError{Op: "open", Path: path.Join(s.root, p), Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Ino != uint64(e.ino) || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return &PathError{Op: "open", Path: path.Join(s.root, p), Err: errors.New("it changed during the scan")}
	}
	if s.keep != nil {
		// The pre-image kept is what the entry describes, read once.
		sum, n, err := s.keep(p, fd)
		if err != nil {
			return err
		}
		e.SHA256, e.Size = sum, n
		return nil
	}
	h := sha256.New()
	n, err := io.Copy(h, io.NewSectionReader(fdReaderAt(fd), 0, 1<<62))
	if err != nil {
		return &PathError{Op: "read", Path: path.Join(s.root, p), Err: err}
	}
	e.Size = n // what was read is what the hash is of
	e.SHA256 = hex.EncodeToString(h.Sum(nil))
	return nil
}

// fdReaderAt reads a descriptor with pread.
type fdReaderAt int

func (f fdReaderAt) ReadAt(b []byte, off int64) (int, error) {
	for {
		n, err := unix.Pread(int(f), b, off)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 && len(b) > 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

func entryOf(st *unix.Stat_t) Entry {
	e := Entry{Mode: st.Mode & 0o7777, UID: int(st.Uid), GID: int(st.Gid),
		ino: int64(st.Ino), dev: st.Dev, mtime: unixNano(st.Mtim), ctime: unixNano(st.Ctim)}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		e.Kind, e.Size = KindFile, st.Size
	case unix.S_IFDIR:
		e.Kind = KindDir
	case unix.S_IFLNK:
		e.Kind = KindLink
	default:
		e.Kind = KindOther
	}
	return e
}

func unixNano(t unix.Timespec) int64 { return t.Sec*1e9 + t.Nsec }

func readlinkat(dirfd int, name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
