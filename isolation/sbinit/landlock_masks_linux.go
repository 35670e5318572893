package sbinit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// maskedWalk adds the rules of one read path with Except (LandlockPath's
// comment says which): it lists Path and each directory holding an
// Except, through descriptors opened beneath Path without following a
// symlink, and adds one rule per entry.
type maskedWalk struct {
	rs     int
	path   string
	except map[string]bool // relative to path
	chain  map[string]bool // directories holding an Except, relative
	// masked are the inodes of the masked regular files: a hard link to
	// one in a listed directory gets no rule either.
	masked   map[[2]uint64]bool
	listOnly uint64 // READ_DIR, as handled
	dirAcc   uint64 // the path's access on a directory, as handled
	fileAcc  uint64 // the same on any other file
	budget   int
}

// addMaskedRules adds to ruleset rs the rules of p, a read path with
// Except (see LandlockPath). Preconditions: the root is /; p.Write is
// false.
func addMaskedRules(rs int, handledFS uint64, p LandlockPath) error {
	w := &maskedWalk{rs: rs, path: p.Path, except: map[string]bool{}, chain: map[string]bool{}, masked: map[[2]uint64]bool{},
		listOnly: ll.AccessFSReadDir & handledFS, dirAcc: p.access() & handledFS, fileAcc: p.access() & llFile & handledFS,
		budget: MaskedRuleLimit}
	for _, e := range p.Except {
		rel, err := filepath.Rel(p.Path, e)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("landlock: %s is not beneath %s: %w", e, p.Path, ErrSetup)
		}
		w.except[rel] = true
		for d := filepath.Dir(rel); d != "."; d = filepath.Dir(d) {
			w.chain[d] = true
		}
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, p.Path, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return fmt.Errorf("landlock: open %s: %w", p.Path, err)
	}
	defer unix.Close(fd)
	for rel := range w.except {
		var st unix.Stat_t
		if unix.Fstatat(fd, rel, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			w.masked[[2]uint64{st.Dev, st.Ino}] = true
		}
	}
	return w.dir(fd, "")
}

// rule adds the rule of access on fd, counting it against the budget.
func (w *maskedWalk) rule(fd int, access uint64, rel string) error {
	if w.budget--; w.budget < 0 {
		return fmt.Errorf("landlock: the read grant of %s holds masked paths among more than %d entries (one Landlock rule each): grant a narrower path, or run the tool where namespaces can be made (the process tier): %w", w.path, MaskedRuleLimit, ErrSetup)
	}
	if access == 0 {
		return nil
	}
	if err := ll.LandlockAddPathBeneathRule(w.rs, &ll.PathBeneathAttr{AllowedAccess: access, ParentFd: fd}, 0); err != nil {
		return fmt.Errorf("landlock: add rule for %s: %w", filepath.Join(w.path, rel), err)
	}
	return nil
}

// dir lets the directory fd (rel beneath the path) be listed, and gives
// each of its entries its rule: none for an Except or a link to a masked
// file, the same walk for a directory holding an Except, the path's
// access for the rest. A symlink gets none (what it leads to has its own
// rules); an entry gone since the listing is skipped.
func (w *maskedWalk) dir(fd int, rel string) error {
	if err := w.rule(fd, w.listOnly, rel); err != nil {
		return err
	}
	names, err := listNames(fd)
	if err != nil {
		return fmt.Errorf("landlock: list %s: %w", filepath.Join(w.path, rel), err)
	}
	for _, name := range names {
		crel := filepath.Join(rel, name)
		if w.except[crel] {
			continue
		}
		flags := uint64(unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC)
		if w.chain[crel] {
			flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		}
		cfd, err := unix.Openat2(fd, name, &unix.OpenHow{Flags: flags, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		switch {
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
			continue // gone, or a symlink or file where a directory held a mask: no rule
		case err != nil:
			return fmt.Errorf("landlock: open %s: %w", filepath.Join(w.path, crel), err)
		}
		err = w.entry(cfd, crel)
		unix.Close(cfd)
		if err != nil {
			return err
		}
	}
	return nil
}

// entry gives the entry fd (crel beneath the path) its rule.
func (w *maskedWalk) entry(fd int, crel string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock: stat %s: %w", filepath.Join(w.path, crel), err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return nil
	case unix.S_IFDIR:
		if w.chain[crel] {
			return w.dir(fd, crel)
		}
		return w.rule(fd, w.dirAcc, crel)
	case unix.S_IFREG:
		if w.masked[[2]uint64{st.Dev, st.Ino}] {
			return nil
		}
	}
	return w.rule(fd, w.fileAcc, crel)
}

// listNames lists the names in the directory fd, without moving fd's own
// offset.
func listNames(fd int) ([]string, error) {
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), ".")
	defer f.Close()
	return f.Readdirnames(-1)
}
