package sbinit

import (
	"path/filepath"
	"slices"
	"strings"
)

// Landlock is the second wall of the process tier, behind the mounts: a
// Landlock ruleset the init applies to itself, and so to every command it
// forks, after the root is built and the egress relay listens, before
// privileges are dropped. A mount made writable by mistake still cannot be
// written outside the plan's write grants; TCP bind is refused and connect
// allowed only to the relay's ports; abstract Unix sockets and signals are
// scoped to the sandbox.
//
// The rules are computed from the Config by NewLandlock (pure, on the
// host) and sent with it; the init enforces what the kernel's Landlock ABI
// covers (files from ABI 1, TCP from 4, IPC scopes from 6) and reports the
// ABI it enforced in its ready message. Below MinABI it refuses to start.
type Landlock struct {
	// Paths are the file hierarchies the sandbox may use, each with its
	// access; anything not beneath one of them is refused.
	Paths []LandlockPath `json:"paths"`
	// ConnectTCP are the only TCP ports a connect may reach. No TCP bind
	// is allowed.
	ConnectTCP []int `json:"connect_tcp,omitempty"`
	// MinABI is the lowest Landlock ABI the run accepts; 0 enforces what
	// the kernel has, or nothing on a kernel without Landlock.
	MinABI int `json:"min_abi,omitempty"`
}

// LandlockPath is one file hierarchy and what may be done beneath it.
// Reading is always allowed (everything of the root is readable by
// design; the mounts decide what exists).
type LandlockPath struct {
	Path string `json:"path"`
	// Write allows writing files; with FilesOnly nothing else (device
	// nodes, /proc), otherwise also creating, removing, renaming and
	// linking.
	Write     bool `json:"write,omitempty"`
	FilesOnly bool `json:"files_only,omitempty"`
	Exec      bool `json:"exec,omitempty"`
	// Dev allows ioctl on device files.
	Dev bool `json:"dev,omitempty"`
	// Unix allows connecting to pathname Unix sockets (Landlock ABI 9).
	Unix bool `json:"unix,omitempty"`
	// Optional paths may be absent (system directories of this host).
	Optional bool `json:"optional,omitempty"`
	// Except are paths beneath Path that stay unreadable (the policy's
	// masks inside a read grant, in the landlock tier, which mounts
	// nothing over them). Landlock rules hold for a whole hierarchy and
	// only add rights, so Path then gets no rule of its own over it:
	// Path and every directory between it and an Except may only be
	// listed (LANDLOCK_ACCESS_FS_READ_DIR), every other entry of those
	// directories gets Path's access, and an Except gets no rule. Each
	// rule holds the inode it was made on, as it is when the command
	// starts: a masked file renamed later stays unreadable, and an entry
	// created later in one of those directories is unreadable too. A
	// hard link to a masked file elsewhere beneath Path is readable
	// there (masks match names). Only for a read-only path: a write
	// grant's rule per entry would keep the tool from creating files.
	Except []string `json:"except,omitempty"`
}

// same reports whether p and q are the same rule.
func (p LandlockPath) same(q LandlockPath) bool {
	return p.Path == q.Path && p.Write == q.Write && p.FilesOnly == q.FilesOnly && p.Exec == q.Exec && p.Dev == q.Dev &&
		p.Unix == q.Unix && p.Optional == q.Optional && slices.Equal(p.Except, q.Except)
}

// MaskedRuleLimit bounds the rules a path with Except adds (one per entry
// of each directory listed): the walk that found the masks
// (sandbox.maskWalkLimit) refuses a larger tree first.
const MaskedRuleLimit = 50000

// LandlockFullABI is the Landlock ABI that enforces every wall of the
// sandbox: files, TCP and IPC scopes.
const LandlockFullABI = 6

// NewLandlock computes the Landlock rules of cfg (a process-tier Config
// with its Setup): the root readable; system directories executable;
// /tmp, /dev/shm and writable grants and tmpfs mounts writable; the
// device nodes and /proc writable as files; TCP connect to the egress
// relay's ports. minABI becomes MinABI. It makes no system call.
func NewLandlock(cfg *Config, minABI int) *Landlock {
	l := &Landlock{MinABI: minABI, Paths: skeletonLandlock()}
	if s := cfg.Setup; s != nil {
		for _, m := range s.Mounts {
			if m.ReadOnly && m.NoExec && m.Source == "" {
				continue // readable already, nothing more
			}
			l.Paths = append(l.Paths, LandlockPath{Path: m.Destination, Write: !m.ReadOnly, Exec: !m.NoExec, Unix: m.Source != ""})
		}
	}
	if e := cfg.Egress; e != nil {
		l.ConnectTCP = append(l.ConnectTCP, e.Port)
		l.ConnectTCP = append(l.ConnectTCP, e.LocalhostPorts...)
	}
	return l
}

// skeletonLandlock are the rules every root gets, first (NewLandlock):
// the root readable; system directories executable; /tmp and /dev/shm
// writable; the device nodes and /proc writable as files. Their paths
// are the skeleton's (Skeleton), so a warm init adds their rules to a
// ruleset before a run claims it.
func skeletonLandlock() []LandlockPath {
	paths := []LandlockPath{{Path: "/"}}
	for _, d := range systemDirs {
		paths = append(paths, LandlockPath{Path: d, Exec: true, Optional: true})
	}
	paths = append(paths,
		LandlockPath{Path: "/tmp", Write: true, Exec: true},
		LandlockPath{Path: "/dev/shm", Write: true},
		LandlockPath{Path: "/dev/pts", Write: true, FilesOnly: true, Dev: true},
		LandlockPath{Path: "/proc", Write: true, FilesOnly: true},
	)
	for _, n := range devNodes {
		paths = append(paths, LandlockPath{Path: "/dev/" + n, Write: true, FilesOnly: true, Dev: true})
	}
	return paths
}

// coversAny reports whether the run's part of the root (setup's mounts,
// masked and read-only paths) mounts anything at or above one of paths:
// there a path names another inode once the root is finished than it did
// in the skeleton. (A read-only path is a bind of itself, the same inode;
// it counts all the same.)
func coversAny(setup *Setup, paths []LandlockPath) bool {
	if setup == nil {
		return false
	}
	var dsts []string
	for _, m := range setup.Mounts {
		dsts = append(dsts, m.Destination)
	}
	dsts = append(append(dsts, setup.MaskedPaths...), setup.ReadonlyPaths...)
	for _, d := range dsts {
		d = filepath.Clean(d)
		for _, p := range paths {
			if d == "/" || p.Path == d || strings.HasPrefix(p.Path, d+"/") {
				return true
			}
		}
	}
	return false
}

// hostEtcEntries are the parts of the host's /etc the landlock tier's
// commands may read besides etcEntries: the user and group names (there
// is no generated /etc/passwd without a root of its own).
var hostEtcEntries = []string{"passwd", "group", "nsswitch.conf", "hostname", "hosts"}

// HostSystemLandlock are the rules every command of the landlock tier gets
// on the host's own tree, which it shares: the system directories readable
// and executable; the parts of /etc programs need (etcEntries and
// hostEtcEntries) and /proc readable (Landlock keeps the processes
// outside the command's domain from being traced or read through
// /proc/PID/environ and mem); the harmless device nodes readable and
// writable as files. Nothing else of the host: no /tmp, /dev/shm, /run,
// /home, /var or /sys.
func HostSystemLandlock() []LandlockPath {
	var paths []LandlockPath
	for _, d := range systemDirs {
		paths = append(paths, LandlockPath{Path: d, Exec: true, Optional: true})
	}
	for _, e := range append(append([]string(nil), etcEntries...), hostEtcEntries...) {
		paths = append(paths, LandlockPath{Path: "/etc/" + e, Optional: true})
	}
	paths = append(paths, LandlockPath{Path: "/proc"})
	for _, n := range devNodes {
		if n == "tty" {
			continue // commands have no controlling terminal
		}
		paths = append(paths, LandlockPath{Path: "/dev/" + n, Write: true, FilesOnly: true, Optional: true})
	}
	return paths
}
