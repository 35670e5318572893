package changeset

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/internal/reown"
)

// resolveBeneath is how every path under a grant is resolved when it is
// restored or applied: never above the root, never through a link.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// Undo puts root back as it was before the run whose changes under it
// are cs (a Diff of before to after), reading pre-images from blobs (a
// Store's blob directory): PrepareUndo, then Do. When a path is not as
// the run left it, it changes nothing and returns a *ConflictError
// listing them. It returns the paths it could not put back (device
// files, sockets and FIFOs are never recreated).
func Undo(root string, cs []Change, blobs string) (skipped []string, err error) {
	p, err := PrepareUndo(root, cs, blobs, false)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Do()
}

// PrepareUndo checks everything an undo of cs under root needs before it
// changes anything: every changed path is as the run left it (or, when
// resume, already as it was before the run, or between the two as an
// interrupted apply or undo leaves it), and every pre-image it will write
// back is in blobs with the content its hash names. A path that is not
// is a *ConflictError, a pre-image missing or damaged an error; either
// way nothing was changed. The caller calls Close.
func PrepareUndo(root string, cs []Change, blobs string, resume bool) (*Pending, error) {
	steps := make([]step, len(cs))
	for i, c := range cs {
		steps[i] = step{path: c.Path, from: c.After, to: c.Before}
	}
	src := func(e *Entry, _ string) (io.ReadCloser, error) {
		if !validHash(e.SHA256) {
			return nil, fmt.Errorf("record names a bad pre-image %q", e.SHA256)
		}
		return os.Open(path.Join(blobs, e.SHA256))
	}
	return prepare(root, steps, src, nil, prepareHow{resume: resume, verify: true})
}

// Apply writes into root the changes cs found by a Diff of root's tree
// (before) to the working copy's (after): PrepareApply, then Do.
func Apply(root, work string, cs []Change, keep KeepFunc) (skipped []string, err error) {
	p, err := PrepareApply(root, work, cs, keep)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Do()
}

// PrepareApply checks everything an apply of cs to root needs before it
// changes anything: every path is still as before (else a
// *ConflictError), and every file to write is in the working copy work,
// read by descriptors beneath it, with the content the change says. keep
// gets each file about to be replaced or removed, open read-only: its
// pre-image, so that the applied change can be undone; one whose kept
// content is not what the check found (changed in between) is a
// conflict. Nothing under root is changed before Do. Where sandboxed
// runs as root, new entries get root's owner. The caller calls Close.
func PrepareApply(root, work string, cs []Change, keep KeepFunc) (*Pending, error) {
	wfd, err := unix.Open(work, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &PathError{Op: "open", Path: work, Err: err}
	}
	var rst unix.Stat_t
	if err := unix.Stat(root, &rst); err != nil {
		unix.Close(wfd)
		return nil, &PathError{Op: "stat", Path: root, Err: err}
	}
	steps := make([]step, len(cs))
	for i, c := range cs {
		s := step{path: c.Path, from: c.Before, to: c.After}
		if c.After != nil {
			to := *c.After
			to.UID, to.GID = int(rst.Uid), int(rst.Gid)
			if c.Before != nil {
				to.UID, to.GID = c.Before.UID, c.Before.GID
			}
			s.to = &to
		}
		steps[i] = s
	}
	p, err := prepare(root, steps, sourceBeneath(wfd), keep, prepareHow{verify: true})
	if err != nil {
		unix.Close(wfd)
		return nil, err
	}
	p.fds = append(p.fds, wfd)
	return p, nil
}

// sourceBeneath reads the content of an entry from the tree under the
// directory wfd, by descriptors beneath it.
func sourceBeneath(wfd int) func(e *Entry, rel string) (io.ReadCloser, error) {
	return func(e *Entry, rel string) (io.ReadCloser, error) {
		fd, err := openBeneath(wfd, rel, unix.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), rel), nil
	}
}

// Copy makes dst, which must not exist, a working copy of the tree under
// src: its directories, files (reflinked where the filesystem can) and
// links, with their owners (as root) and modes less setuid and setgid;
// device files, sockets and FIFOs are left out. It returns src's tree as
// scanned, within lim, with those modes: what a Diff against the working
// copy after the run starts from.
func Copy(src, dst string, lim Limits) (Tree, error) {
	tree, err := Scan(src, lim, nil, nil)
	if err != nil {
		return nil, err
	}
	sfd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &PathError{Op: "open", Path: src, Err: err}
	}
	defer unix.Close(sfd)
	var st unix.Stat_t
	if err := unix.Fstat(sfd, &st); err != nil {
		return nil, &PathError{Op: "stat", Path: src, Err: err}
	}
	if err := unix.Mkdir(dst, 0o700); err != nil {
		return nil, &PathError{Op: "create", Path: dst, Err: err}
	}
	rootEntry := entryOf(&st)
	if err := chmodOwn(dst, &rootEntry); err != nil {
		return nil, err
	}
	var steps []step
	for p, e := range tree {
		if e.Kind == KindOther {
			delete(tree, p)
			continue
		}
		e.Mode = safeMode(e.Mode)
		tree[p] = e
		e := e
		steps = append(steps, step{path: p, to: &e})
	}
	// Into a new directory: each file's hash is checked as it is written.
	p, err := prepare(dst, steps, sourceBeneath(sfd), nil, prepareHow{})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if _, err := p.Do(); err != nil {
		return nil, err
	}
	return tree, nil
}

// chmodOwn gives the directory dir e's mode (less setuid and setgid) and,
// as root, e's owner.
func chmodOwn(dir string, e *Entry) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	if err := setMeta(fd, e, safeMode(e.Mode)); err != nil {
		return &PathError{Op: "set mode", Path: dir, Err: err}
	}
	return nil
}

// step is one path to take from one entry (nil: absent) to another; at
// is where the check found it.
type step struct {
	path     string
	from, to *Entry
	at       state
}

// state is where a step's path was found by the check.
type state int

const (
	atFrom  state = iota // as the step starts from
	atTo                 // already as it is to be (resuming)
	between              // removed and not yet made again, or a directory not yet given its mode (resuming)
)

// prepareHow says what prepare accepts and checks.
type prepareHow struct {
	// resume accepts paths already at their step's end, or between its
	// start and end: an interrupted apply or undo, done again.
	resume bool
	// verify reads every file to write, before anything is changed, and
	// refuses when its content is not what its hash says.
	verify bool
}

// Pending is a restore or an apply checked and ready (PrepareUndo,
// PrepareApply): nothing is changed until Do.
type Pending struct {
	root   string
	rfd    int
	fds    []int // closed with rfd
	steps  []step
	src    func(e *Entry, rel string) (io.ReadCloser, error)
	resume bool
}

// Close releases p's descriptors.
func (p *Pending) Close() {
	for _, fd := range append(p.fds, p.rfd) {
		unix.Close(fd)
	}
	p.fds, p.rfd = nil, -1
}

// prepare checks every step (then, with how.verify, every file to write;
// then hands keep what is about to be replaced or removed) and returns
// them ready for Do. Nothing under root is changed.
func prepare(root string, steps []step, src func(e *Entry, rel string) (io.ReadCloser, error), keep KeepFunc, how prepareHow) (_ *Pending, err error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &PathError{Op: "open", Path: root, Err: err}
	}
	p := &Pending{root: root, rfd: rfd, steps: steps, src: src, resume: how.resume}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	slices.SortFunc(steps, func(x, y step) int { return comparePaths(x.path, y.path) })
	if bad := check(rfd, steps, how.resume); len(bad) > 0 {
		return nil, &ConflictError{Root: root, Paths: bad}
	}
	if how.verify {
		if bad := verifySources(steps, src); len(bad) > 0 {
			return nil, &SourceError{Root: root, Paths: bad}
		}
	}
	if keep != nil {
		if err := keepFrom(rfd, root, steps, keep); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Do makes the change: removals deepest first, then directories, files
// and links shallowest first; a path the check found already at its end
// is left as it is. Resuming, it first removes what an interrupted write
// left under a fresh name. It returns the paths not made (device files,
// sockets and FIFOs are never recreated). Stopped midway (an error, or
// the process killed), the same change prepared again with resume
// finishes it.
func (p *Pending) Do() ([]string, error) {
	if p.resume {
		removeLeftovers(p.rfd, p.steps)
	}
	for i := len(p.steps) - 1; i >= 0; i-- {
		s := p.steps[i]
		if s.at != atFrom || s.from == nil || !(s.to == nil || (s.from.Kind == KindDir) != (s.to.Kind == KindDir)) {
			continue
		}
		if err := removeBeneath(p.rfd, s.path, s.from.Kind == KindDir); err != nil {
			return nil, &PathError{Op: "remove", Path: path.Join(p.root, s.path), Err: err}
		}
	}
	var skipped []string
	for _, s := range p.steps {
		if s.to == nil || s.at == atTo {
			continue
		}
		if s.to.Kind == KindOther {
			skipped = append(skipped, s.path+" (not a file, directory or link: never recreated)")
			continue
		}
		if err := put(p.rfd, s, p.src); err != nil {
			return skipped, &PathError{Op: "write", Path: path.Join(p.root, s.path), Err: err}
		}
	}
	return skipped, nil
}

// check finds where each step's path is (step.at) and lists those that
// are not where a step may start (or, resuming, end or stand between),
// and the directories to remove that hold what no step removes.
func check(rfd int, steps []step, resume bool) []string {
	gone := map[string]bool{}
	for _, s := range steps {
		if s.from != nil && (s.to == nil || s.to.Kind != s.from.Kind) {
			gone[s.path] = true
		}
	}
	notDir := map[string]bool{} // paths that are no directory in the from state
	for _, s := range steps {
		if s.from == nil || s.from.Kind != KindDir {
			notDir[s.path] = true
		}
	}
	var bad []string
	for i := range steps {
		s := &steps[i]
		cur, err := lstatBeneath(rfd, s.path)
		if s.from == nil && underNotDir(s.path, notDir) && (err != nil || cur == nil) {
			s.at = atFrom // absent by its parent's step, which is checked
			continue
		}
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", s.path, err))
			continue
		}
		at, why := judge(rfd, s, cur, resume)
		if why != "" {
			bad = append(bad, s.path+": "+why)
			continue
		}
		s.at = at
		if at == atFrom && s.from != nil && s.from.Kind == KindDir && gone[s.path] {
			if extra := strangers(rfd, s.path, gone, resume); extra != "" {
				bad = append(bad, s.path+": it holds "+extra)
			}
		}
	}
	return bad
}

// judge says where the step's path, found as cur (nil: absent), is: at
// its start; resuming, also at its end or between the two. Anything else
// is a conflict, and why says what.
func judge(rfd int, s *step, cur *Entry, resume bool) (at state, why string) {
	switch {
	case s.from == nil && cur == nil:
		return atFrom, ""
	case s.from != nil && cur != nil && sameNow(rfd, s.path, *s.from, *cur):
		return atFrom, ""
	}
	if resume {
		switch {
		case s.to == nil && cur == nil:
			return atTo, ""
		case s.to != nil && cur != nil && sameNow(rfd, s.path, *s.to, *cur):
			return atTo, ""
		case cur == nil && s.from != nil && s.to != nil && (s.from.Kind == KindDir) != (s.to.Kind == KindDir):
			return between, "" // removed, not yet made again
		case cur != nil && cur.Kind == KindDir && s.to != nil && s.to.Kind == KindDir:
			return between, "" // made, its mode not yet set
		case cur != nil && cur.Kind == KindDir && s.from != nil && s.from.Kind == KindDir:
			return atFrom, "" // made by the interrupted apply, its mode not yet set
		}
	}
	switch {
	case s.from == nil:
		return atFrom, "it exists now"
	case cur == nil:
		return atFrom, "it is gone"
	}
	return atFrom, "it was changed"
}

// underNotDir reports whether a parent of p is in notDir.
func underNotDir(p string, notDir map[string]bool) bool {
	for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
		if notDir[d] {
			return true
		}
	}
	return false
}

// sameNow compares what is at rel now (cur, from lstat) with want,
// reading the file's content when it is one. A want without setuid and
// setgid bits may be what a working copy made of it (Copy drops them):
// cur's are not counted then, or every reviewed change to a setuid file
// or a setgid directory would be a conflict. (Bits the user added since
// an ordinary run are not a conflict either: what is put back never has
// them, as it never had.)
func sameNow(rfd int, rel string, want, cur Entry) bool {
	if want.Mode&0o6000 == 0 {
		cur.Mode &^= 0o6000
	}
	if want.Kind == KindLink && cur.Kind == KindLink {
		cur.Target, _ = readlinkBeneath(rfd, rel)
	}
	if want.Kind == KindFile && cur.Kind == KindFile && cur.Size == want.Size {
		fd, err := openBeneath(rfd, rel, unix.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			return false
		}
		defer unix.Close(fd)
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(fdReaderAt(fd), 0, 1<<62)); err != nil {
			return false
		}
		cur.SHA256 = hex.EncodeToString(h.Sum(nil))
	}
	return same(want, cur)
}

// strangers names an entry of the directory rel that no step removes
// (resuming, what an interrupted write left under a fresh name does not
// count: it is removed first).
func strangers(rfd int, rel string, gone map[string]bool, resume bool) string {
	fd, err := openBeneath(rfd, rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err.Error()
	}
	defer unix.Close(fd)
	names, err := reown.ReadDirNames(fd)
	if err != nil {
		return err.Error()
	}
	for _, n := range names {
		if !gone[path.Join(rel, n)] && !(resume && leftover(n)) {
			return n + ", which the run did not make"
		}
	}
	return ""
}

// verifySources reads every file the steps will write from src, and
// lists those whose content is not what their hash says (a pre-image
// damaged or gone, a working copy changed since its scan).
func verifySources(steps []step, src func(e *Entry, rel string) (io.ReadCloser, error)) []string {
	var bad []string
	for _, s := range steps {
		if s.to == nil || s.to.Kind != KindFile || s.at == atTo {
			continue
		}
		in, err := src(s.to, s.path)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", s.path, err))
			continue
		}
		h := sha256.New()
		_, err = io.Copy(h, in)
		in.Close()
		switch got := hex.EncodeToString(h.Sum(nil)); {
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s: %v", s.path, err))
		case got != s.to.SHA256:
			bad = append(bad, fmt.Sprintf("%s: its content is not the recorded one (sha256 %s, want %s)", s.path, got, s.to.SHA256))
		}
	}
	return bad
}

// keepFrom hands keep each file a step replaces or removes; one whose
// kept content is not what the check found is a conflict.
func keepFrom(rfd int, root string, steps []step, keep KeepFunc) error {
	var bad []string
	for _, s := range steps {
		if s.from == nil || s.from.Kind != KindFile {
			continue
		}
		fd, err := openBeneath(rfd, s.path, unix.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			return &PathError{Op: "keep", Path: path.Join(root, s.path), Err: err}
		}
		sum, _, err := keep(s.path, fd)
		unix.Close(fd)
		if err != nil {
			return err
		}
		if sum != s.from.SHA256 {
			bad = append(bad, s.path+": it was changed while its pre-image was kept")
		}
	}
	if len(bad) > 0 {
		return &ConflictError{Root: root, Paths: bad}
	}
	return nil
}

// leftoverPrefix begins the fresh name a file or link is written under
// before it is renamed into place (put).
const leftoverPrefix = ".sandboxed-"

// leftover reports whether name is one put writes under: the prefix, a
// process id, '-'.
func leftover(name string) bool {
	rest, ok := strings.CutPrefix(name, leftoverPrefix)
	if !ok {
		return false
	}
	pid, _, ok := strings.Cut(rest, "-")
	return ok && pid != "" && strings.Trim(pid, "0123456789") == ""
}

// removeLeftovers removes, from every directory the steps touch, the
// fresh names an interrupted put left (a file being written when the
// process was killed); a step's own path is never one.
func removeLeftovers(rfd int, steps []step) {
	own := map[string]bool{}
	dirs := map[string]bool{}
	for _, s := range steps {
		own[s.path] = true
		dirs[path.Dir(s.path)] = true
		if s.from != nil && s.from.Kind == KindDir || s.to != nil && s.to.Kind == KindDir {
			dirs[s.path] = true
		}
	}
	for d := range dirs {
		rel := d
		if rel == "." {
			rel = ""
		}
		fd, err := openBeneath(rfd, rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			continue // gone, or not a directory: nothing left there
		}
		names, _ := reown.ReadDirNames(fd)
		for _, n := range names {
			if leftover(n) && !own[path.Join(rel, n)] {
				_ = unix.Unlinkat(fd, n, 0)
			}
		}
		unix.Close(fd)
	}
}

// put makes s.to at s.path: a directory is made or has its mode set; a
// file or link is made under a fresh name and renamed over the entry,
// which replaces a link there rather than following it.
func put(rfd int, s step, src func(*Entry, string) (io.ReadCloser, error)) error {
	dir, base := path.Split(s.path)
	pfd, err := openBeneath(rfd, strings.TrimSuffix(dir, "/"), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	mode := safeMode(s.to.Mode)
	if s.to.Kind == KindDir {
		if err := unix.Mkdirat(pfd, base, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
		fd, err := openBeneath(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return setMeta(fd, s.to, mode)
	}
	tmp := fmt.Sprintf("%s%d-%s", leftoverPrefix, os.Getpid(), base)
	if len(tmp) > 250 {
		tmp = tmp[:250]
	}
	_ = unix.Unlinkat(pfd, tmp, 0) // a leftover of a failed attempt
	if s.to.Kind == KindLink {
		if err := unix.Symlinkat(s.to.Target, pfd, tmp); err != nil {
			return err
		}
		if os.Geteuid() == 0 {
			_ = unix.Fchownat(pfd, tmp, s.to.UID, s.to.GID, unix.AT_SYMLINK_NOFOLLOW)
		}
	} else if err := writeFile(pfd, tmp, s, mode, src); err != nil {
		_ = unix.Unlinkat(pfd, tmp, 0)
		return err
	}
	if err := unix.Renameat(pfd, tmp, pfd, base); err != nil {
		_ = unix.Unlinkat(pfd, tmp, 0)
		return err
	}
	return nil
}

// writeFile writes s.to's content, checked against its hash, to a new
// file tmp in the directory pfd.
func writeFile(pfd int, tmp string, s step, mode uint32, src func(*Entry, string) (io.ReadCloser, error)) error {
	in, err := src(s.to, s.path)
	if err != nil {
		return err
	}
	defer in.Close()
	fd, err := openBeneath(pfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(fd), tmp)
	defer out.Close()
	h := sha256.New()
	if f, ok := in.(*os.File); ok && unix.IoctlFileClone(fd, int(f.Fd())) == nil {
		// Reflinked: the blocks are shared copy-on-write; read back what
		// the new file holds for the check.
		_, err = io.Copy(h, io.NewSectionReader(fdReaderAt(fd), 0, 1<<62))
	} else {
		_, err = io.Copy(io.MultiWriter(out, h), in)
	}
	if err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != s.to.SHA256 {
		return fmt.Errorf("its content changed on the way (sha256 %s, want %s)", got, s.to.SHA256)
	}
	return setMeta(fd, s.to, mode)
}

// setMeta sets the mode (and, as root, the owner) of the open entry fd.
func setMeta(fd int, e *Entry, mode uint32) error {
	if os.Geteuid() == 0 {
		if err := unix.Fchown(fd, e.UID, e.GID); err != nil {
			return err
		}
	}
	return unix.Fchmod(fd, mode) // after the chown, which clears setuid bits anyway
}

// safeMode is a mode as sandboxed writes it: no setuid, no setgid.
func safeMode(m uint32) uint32 { return m & 0o1777 }

// openBeneath opens rel under dirfd, never through a link or above dirfd;
// "" is dirfd itself.
func openBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC | unix.O_NOFOLLOW), Mode: uint64(mode), Resolve: resolveBeneath}
	for {
		fd, err := unix.Openat2(dirfd, rel, &how)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		return fd, err
	}
}

// lstatBeneath is the entry at rel now, nil when there is none. A link
// on the way to it is an error.
func lstatBeneath(rfd int, rel string) (*Entry, error) {
	dir, base := path.Split(rel)
	pfd, err := openBeneath(rfd, strings.TrimSuffix(dir, "/"), unix.O_PATH|unix.O_DIRECTORY, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOTDIR) {
			return nil, errors.New("a link or a file stands where a directory was on its way")
		}
		return nil, err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, nil
		}
		return nil, err
	}
	e := entryOf(&st)
	return &e, nil
}

func readlinkBeneath(rfd int, rel string) (string, error) {
	dir, base := path.Split(rel)
	pfd, err := openBeneath(rfd, strings.TrimSuffix(dir, "/"), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(pfd)
	return readlinkat(pfd, base)
}

// removeBeneath removes rel (a directory when dir), never following a
// link: unlinkat removes the link itself.
func removeBeneath(rfd int, rel string, dir bool) error {
	d, base := path.Split(rel)
	pfd, err := openBeneath(rfd, strings.TrimSuffix(d, "/"), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	flags := 0
	if dir {
		flags = unix.AT_REMOVEDIR
	}
	err = unix.Unlinkat(pfd, base, flags)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// ReadFile reads the file rel under root, opened beneath it and never
// through a link; a file above max bytes is an error.
func ReadFile(root, rel string, max int64) ([]byte, error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(rfd)
	fd, err := openBeneath(rfd, rel, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &PathError{Op: "open", Path: path.Join(root, rel), Err: err}
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("larger than %d bytes", max)
	}
	return b, err
}
