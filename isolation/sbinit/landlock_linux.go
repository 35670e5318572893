package sbinit

import (
	"errors"
	"fmt"
	"path/filepath"

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
// the privileges to open every path of l.
func applyLandlock(l *Landlock) (int, error) {
	abi := LandlockABI()
	if abi < l.MinABI {
		return 0, fmt.Errorf("landlock: the kernel enforces ABI %d, the run requires %d (files, TCP and IPC scopes): use Linux 6.12 or later with CONFIG_SECURITY_LANDLOCK=y and landlock in the lsm= boot parameter: %w", abi, l.MinABI, ErrSetup)
	}
	if abi == 0 {
		return 0, nil
	}
	handledFS := uint64(landlockPresets[abi-1].HandledAccessFS)
	cfg := landlock.Config{HandledAccessFS: landlock.AccessFSSet(handledFS)}
	if abi >= 4 {
		// TCP only: the sandbox's UDP never leaves its network namespace.
		cfg.HandledAccessNet = landlock.AccessNetSet(ll.AccessNetBindTCP | ll.AccessNetConnectTCP)
	}
	if abi >= 6 {
		cfg.Scoped = landlock.ScopedSet(ll.ScopeAbstractUnixSocket | ll.ScopeSignal)
	}
	var rules []landlock.Rule
	for _, p := range l.Paths {
		// Not following a symlink: a grant's mountpoint is reached the
		// way its mount was made.
		how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		fd, err := unix.Openat2(unix.AT_FDCWD, p.Path, how)
		if errors.Is(err, unix.ENOENT) && p.Optional {
			continue
		}
		if errors.Is(err, unix.ELOOP) && p.Optional {
			continue // a system symlink such as /bin -> usr/bin: its target has its own rule
		}
		if err != nil {
			return 0, fmt.Errorf("landlock: open %s: %w", p.Path, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err != nil {
			return 0, fmt.Errorf("landlock: stat %s: %w", p.Path, err)
		}
		dir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		a := p.access()
		if !dir {
			a &= llFile
		}
		if a &= handledFS; a != 0 {
			rules = append(rules, landlock.PathAccess(landlock.AccessFSSet(a), p.Path))
		}
		if p.Unix && handledFS&llUnix != 0 {
			// On the directory: connecting is decided where the socket
			// lies, and a socket's own file takes file rights only.
			at := p.Path
			if !dir {
				at = filepath.Dir(p.Path)
			}
			rules = append(rules, landlock.PathAccess(landlock.AccessFSSet(llUnix), at))
		}
	}
	if abi >= 4 {
		for _, port := range l.ConnectTCP {
			if port > 0 && port <= 65535 {
				rules = append(rules, landlock.ConnectTCP(uint16(port)))
			}
		}
	}
	if err := cfg.Restrict(rules...); err != nil {
		return 0, fmt.Errorf("landlock: %w", err)
	}
	return abi, nil
}
