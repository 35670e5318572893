package sbinit

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// landlockPresets are go-landlock's configurations by ABI (index 0 is ABI
// 1); the handled file-system rights of an ABI come from here.
var landlockPresets = []landlock.Config{
	landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
	landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11,
}

// LandlockABI reports the Landlock ABI this kernel enforces, capped at the
// newest one known here; 0 means no Landlock. A kernel of ABI 6 or later
// whose signal scoping lacks its fix (erratum 2) counts as ABI 5, as
// go-landlock counts it.
func LandlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	if v >= 6 {
		errata, err := ll.LandlockGetErrata()
		if err != nil || errata&0x2 == 0 {
			v = 5
		}
	}
	return min(v, len(landlockPresets))
}

// Access rights, grouped as LandlockPath speaks of them.
const (
	llRead  = ll.AccessFSReadFile | ll.AccessFSReadDir
	llExec  = ll.AccessFSExecute
	llWrite = ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile |
		ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock |
		ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSRefer
	llWriteFiles = ll.AccessFSWriteFile | ll.AccessFSTruncate
	llDev        = ll.AccessFSIoctlDev
	llUnix       = ll.AccessFSResolveUnix
	// llFile are the rights that apply to a file that is not a directory.
	llFile = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// access is what p grants, without Unix (see applyLandlock).
func (p LandlockPath) access() uint64 {
	a := uint64(llRead)
	if p.Exec {
		a |= llExec
	}
	switch {
	case p.Write && p.FilesOnly:
		a |= llWriteFiles
	case p.Write:
		a |= llWrite
	}
	if p.Dev {
		a |= llDev
	}
	return a
}

// applyLandlock restricts every thread of the init, and so every command
// it forks, to l. It returns the ABI it enforced (0: none, on a kernel
// without Landlock and an l that accepts that). Preconditions: the root is
// built and pivoted into, the egress relay listens, and the init still has
// the privileges to open every path of l, CAP_SYS_ADMIN among them (so the
// ruleset needs no no_new_privs of its own: dropPrivileges sets it).
//
// base, when not nil, is the ruleset a warm init made with the rules of
// its skeleton (prepareLandlock): it is used, and only l's other paths are
// added, where l starts with the same rules and setup (the run's part of
// the root) mounts nothing over their paths; otherwise every rule is made
// here. applyLandlock closes base either way.
//
// The ruleset is made with the system calls themselves rather than
// go-landlock's Restrict, which would stop every thread twice (to set
// no_new_privs, then to restrict) where once, or on ABI 8 not at all
// (the kernel synchronises the threads), is enough.
func applyLandlock(l *Landlock, base *landlockBase, setup *Setup) (int, error) {
	defer base.close()
	abi := LandlockABI()
	if abi < l.MinABI {
		return 0, fmt.Errorf("landlock: the kernel enforces ABI %d, the run requires %d (files, TCP and IPC scopes): use Linux 6.12 or later with CONFIG_SECURITY_LANDLOCK=y and landlock in the lsm= boot parameter: %w", abi, l.MinABI, ErrSetup)
	}
	if abi == 0 {
		return 0, nil
	}
	paths := l.Paths
	rs, handledFS := -1, uint64(0)
	if base.fits(abi, l.Paths, setup) {
		rs, handledFS = base.take()
		paths = paths[len(base.paths):]
	} else {
		var err error
		if rs, handledFS, err = landlockRuleset(abi); err != nil {
			return 0, err
		}
	}
	defer unix.Close(rs)
	if err := addLandlockRules(rs, handledFS, -1, paths); err != nil {
		return 0, err
	}
	if abi >= 4 {
		for _, port := range l.ConnectTCP {
			if port > 0 && port <= 65535 {
				if err := ll.LandlockAddNetPortRule(rs, &ll.NetPortAttr{AllowedAccess: ll.AccessNetConnectTCP, Port: uint64(port)}, 0); err != nil {
					return 0, fmt.Errorf("landlock: add rule for TCP port %d: %w", port, err)
				}
			}
		}
	}
	var err error
	if abi >= 8 {
		err = ll.LandlockRestrictSelf(rs, ll.FlagRestrictSelfTSync)
	} else {
		err = ll.AllThreadsLandlockRestrictSelf(rs, 0)
	}
	if err != nil {
		return 0, fmt.Errorf("landlock: restrict the init: %w", err)
	}
	return abi, nil
}

// landlockRuleset creates a ruleset that handles what ABI abi covers, and
// returns it with its handled file-system rights.
func landlockRuleset(abi int) (int, uint64, error) {
	handledFS := uint64(landlockPresets[abi-1].HandledAccessFS)
	attr := ll.RulesetAttr{HandledAccessFS: handledFS}
	if abi >= 4 {
		// TCP only: the sandbox's UDP never leaves its network namespace.
		attr.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
	}
	if abi >= 6 {
		attr.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	rs, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return -1, 0, fmt.Errorf("landlock: create ruleset: %w", err)
	}
	return rs, handledFS, nil
}

// addLandlockRules adds to ruleset rs the rule of each of paths. root,
// when not -1, is the root's directory before pivot_root, which the
// paths are opened beneath; -1: the root is /.
func addLandlockRules(rs int, handledFS uint64, root int, paths []LandlockPath) error {
	addPath := func(fd int, access uint64, path string) error {
		if err := ll.LandlockAddPathBeneathRule(rs, &ll.PathBeneathAttr{AllowedAccess: access, ParentFd: fd}, 0); err != nil {
			return fmt.Errorf("landlock: add rule for %s: %w", path, err)
		}
		return nil
	}
	// Not following a symlink: a grant's mountpoint is reached the way
	// its mount was made.
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	open := func(path string) (int, error) {
		if root == -1 {
			return unix.Openat2(unix.AT_FDCWD, path, how)
		}
		// The same walk from the root's directory, which is / once
		// pivoted into.
		rel := strings.TrimPrefix(path, "/")
		if rel == "" {
			rel = "."
		}
		return unix.Openat2(root, rel, &unix.OpenHow{Flags: how.Flags, Resolve: how.Resolve | unix.RESOLVE_BENEATH})
	}
	for _, p := range paths {
		if len(p.Except) > 0 {
			if root != -1 || p.Write {
				return fmt.Errorf("landlock: %s: paths kept unreadable beneath a write grant, or before pivot_root: %w", p.Path, ErrSetup)
			}
			if err := addMaskedRules(rs, handledFS, p); err != nil {
				return err
			}
			continue
		}
		fd, err := open(p.Path)
		if errors.Is(err, unix.ENOENT) && p.Optional {
			continue
		}
		if errors.Is(err, unix.ELOOP) && p.Optional {
			continue // a system symlink such as /bin -> usr/bin: its target has its own rule
		}
		if err != nil {
			return fmt.Errorf("landlock: open %s: %w", p.Path, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("landlock: stat %s: %w", p.Path, err)
		}
		dir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		a := p.access()
		if !dir {
			a &= llFile
		}
		if a &= handledFS; a != 0 {
			err = addPath(fd, a, p.Path)
		}
		unix.Close(fd)
		if err != nil {
			return err
		}
		if p.Unix && handledFS&llUnix != 0 {
			// On the directory: connecting is decided where the socket
			// lies, and a socket's own file takes file rights only.
			at := p.Path
			if !dir {
				at = filepath.Dir(p.Path)
			}
			fd, err := open(at)
			if err != nil {
				return fmt.Errorf("landlock: open %s: %w", at, err)
			}
			err = addPath(fd, llUnix, at)
			unix.Close(fd)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// landlockBase is a ruleset made ahead of a claim with the rules of the
// skeleton's paths (skeletonLandlock), each opened beneath the root's
// directory before pivot_root: a rule holds the path's inode, which is the
// one the path names once the root is /, unless the run mounts something
// over it (coversAny).
type landlockBase struct {
	fd        int // -1 once taken or closed
	abi       int
	handledFS uint64
	paths     []LandlockPath
}

// prepareLandlock makes the skeleton's ruleset in the root whose directory
// is root. It returns nil where the kernel has no Landlock.
func prepareLandlock(root string) (*landlockBase, error) {
	abi := LandlockABI()
	if abi == 0 {
		return nil, nil
	}
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("landlock: open the root %s: %w", root, err)
	}
	defer unix.Close(dir)
	rs, handledFS, err := landlockRuleset(abi)
	if err != nil {
		return nil, err
	}
	b := &landlockBase{fd: rs, abi: abi, handledFS: handledFS, paths: skeletonLandlock()}
	if err := addLandlockRules(rs, handledFS, dir, b.paths); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// fits reports whether b serves a ruleset of ABI abi for paths, the run's
// part of the root being setup's.
func (b *landlockBase) fits(abi int, paths []LandlockPath, setup *Setup) bool {
	return b != nil && b.fd >= 0 && b.abi == abi && len(paths) >= len(b.paths) &&
		slices.EqualFunc(paths[:len(b.paths)], b.paths, LandlockPath.same) && !coversAny(setup, b.paths)
}

// take hands over the ruleset, which the caller closes.
func (b *landlockBase) take() (int, uint64) {
	fd := b.fd
	b.fd = -1
	return fd, b.handledFS
}

// close releases the ruleset, if it was not taken. b may be nil.
func (b *landlockBase) close() {
	if b != nil && b.fd >= 0 {
		unix.Close(b.fd)
		b.fd = -1
	}
}
