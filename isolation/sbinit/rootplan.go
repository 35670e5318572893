package sbinit

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The process-tier root is built in two phases, as runc's rootfs code does:
// planRoot computes every entry of the root from the Config and a few facts
// read from the host beforehand (hostEntry), with no system call; the init
// (rootfs_linux.go) then opens, mounts and pivots exactly what the plan
// says. The planning half is table-tested.
//
// The root is applied in two stages, in this order whether the init is
// started for one run or warm, ahead of any run:
//
//	skeleton   what no run decides: the root tmpfs, the system paths
//	           (symlinks, copies, read-only binds), /dev, /proc and the
//	           masked and read-only paths below /proc, the generated /etc
//	           files (the user and hostname, which a pool's key fixes) and
//	           /tmp (its size, likewise) (Skeleton)
//	the run's  grants and tmpfs mounts, the other masked and read-only
//	           paths, pivot_root
//
// A warm init builds the skeleton before a run claims it; no grant can
// reach below /proc (NewSetup refuses it), so the masks applied there
// first cover what they would cover last.

// systemDirs are bound read-only when they exist.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcEntries are the parts of the host /etc programs need; everything else
// of /etc stays hidden. /etc/ssl/private is deliberately absent.
var etcEntries = []string{
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ssl/certs", "ssl/openssl.cnf",
	"ca-certificates", "ca-certificates.conf", "pki/tls/certs", "pki/ca-trust",
	"alternatives", "localtime", "timezone", "protocols", "services", "mime.types", "os-release",
}

// devNodes are the device nodes every sandbox's /dev has.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

const defaultTmpfsBytes = 64 << 20

// maxCopy is the largest /etc file copied into the root rather than bound.
const maxCopy = 512 << 10

// systemPaths are the host paths whose shape planRoot needs, in the order
// the root takes them.
func systemPaths() []string {
	paths := append([]string(nil), systemDirs...)
	for _, e := range etcEntries {
		paths = append(paths, "/etc/"+e)
	}
	return paths
}

// generatedEtc are the files of /etc the init writes itself (writeEtc).
var generatedEtc = []string{"passwd", "group", "hosts", "nsswitch.conf", "hostname"}

// GivenPaths are the paths every process-tier sandbox shows whatever its
// grants: the system directories and /etc entries (from the host,
// read-only), the files the init writes into /etc, and the skeleton it
// builds (/proc, /dev, /sys, a private /tmp). A tool needs no permission
// for them.
func GivenPaths() []string {
	paths := systemPaths()
	for _, f := range generatedEtc {
		paths = append(paths, "/etc/"+f)
	}
	for dst := range skeleton {
		paths = append(paths, dst)
	}
	sort.Strings(paths)
	return paths
}

// hostEntry is what the host has at one system path, read before planning.
type hostEntry struct {
	path   string
	absent bool
	mode   os.FileMode
	size   int64
	link   string // the symlink's text, when mode is a symlink
}

// mountOpts is what one mount must be. Every mount of the root is nosuid;
// it is nodev unless it is a device node's, and a device node's mount is
// noexec. flags (rootfs_linux.go) turns it into the flags of both mount
// APIs.
type mountOpts struct {
	ro     bool
	noexec bool
	dev    bool // a device node: device access allowed on this mount
}

// rootLink is a symlink of the host recreated in the root.
type rootLink struct {
	path, text string
}

// rootMount is one grant (source set) or tmpfs (source empty) of the plan.
type rootMount struct {
	dst    string
	source string // host path of a bind
	data   string // tmpfs options
	opts   mountOpts
	// inGrant: dst lies inside another grant, on the host's file system:
	// its mountpoint must exist, never be created there.
	inGrant bool // tree is Mount.Tree: the host prepared this bind (0: the init binds
	// source itself).
	tree int
	// scratch: see Mount.Scratch.
	scratch bool
}

// rootPlan is the whole root, computed before anything is mounted.
type rootPlan struct {
	// base is the directory the new root tmpfs is mounted on.
	base string
	// links, copies and binds are the system paths: recreated symlinks,
	// small files copied, and read-only binds.
	links  []rootLink
	copies []string
	binds  []string
	nodes  []string
	// tmpfsBytes caps /tmp.
	tmpfsBytes int64
	// mounts are the grants and extra tmpfs, shallow first.
	mounts []rootMount
	// procMasked and procReadonly are the masked and read-only paths
	// below /proc, applied with the skeleton; masked and readonly the
	// others, applied after the mounts.
	procMasked, procReadonly []string
	masked, readonly         []string
}

// planRoot computes the root of cfg and setup from host, the shape of the
// host's system paths. It makes no system call.
func planRoot(cfg *Config, setup *Setup, host []hostEntry) *rootPlan {
	p := &rootPlan{
		base:       cfg.RootBase,
		nodes:      devNodes,
		tmpfsBytes: cfg.TmpfsBytes,
	}
	p.procMasked, p.masked = splitProc(setup.MaskedPaths)
	p.procReadonly, p.readonly = splitProc(setup.ReadonlyPaths)
	if p.base == "" {
		p.base = "/tmp"
	}
	if p.tmpfsBytes <= 0 {
		p.tmpfsBytes = defaultTmpfsBytes
	}
	for _, h := range host {
		switch {
		case h.absent:
		case h.mode&os.ModeSymlink != 0:
			p.links = append(p.links, rootLink{path: h.path, text: h.link})
		case h.mode.IsRegular() && h.size <= maxCopy:
			// A copy costs less than a mount, now and at teardown.
			p.copies = append(p.copies, h.path)
		default:
			p.binds = append(p.binds, h.path)
		}
	}
	p.mounts = orderMounts(setup.Mounts)
	return p
}

// orderMounts puts grants and tmpfs mounts shallow first, whichever kind:
// a grant inside an empty working directory needs that tmpfs under it, a
// hidden directory inside a grant needs the grant under it. Among mounts
// of one depth, tmpfs mounts come first, each kind in the spec's order.
func orderMounts(ms []Mount) []rootMount {
	var grants []string
	for _, m := range ms {
		if m.Source != "" {
			grants = append(grants, m.Destination)
		}
	}
	insideGrant := func(dst string) bool {
		for _, g := range grants {
			if g != dst && strings.HasPrefix(dst, strings.TrimSuffix(g, "/")+"/") {
				return true
			}
		}
		return false
	}
	var out []rootMount
	for _, tmpfs := range []bool{true, false} {
		for _, m := range ms {
			if (m.Source == "") != tmpfs {
				continue
			}
			out = append(out, rootMount{
				dst: m.Destination, source: m.Source, data: m.Data,
				opts:    mountOpts{ro: m.ReadOnly, noexec: m.NoExec},
				inGrant: insideGrant(m.Destination),
				tree:    m.Tree,
				scratch: m.Scratch && m.Source != "",
			})
		}
	}
	depth := func(p string) int { return strings.Count(filepath.Clean(p), "/") }
	sort.SliceStable(out, func(i, j int) bool { return depth(out[i].dst) < depth(out[j].dst) })
	return out
}

// splitProc splits paths into those below /proc and the others, each in
// their order.
func splitProc(paths []string) (proc, rest []string) {
	for _, p := range paths {
		if BelowProc(p) {
			proc = append(proc, p)
		} else {
			rest = append(rest, p)
		}
	}
	return proc, rest
}

// BelowProc reports whether path lies strictly below /proc.
func BelowProc(path string) bool {
	c := filepath.Clean(path)
	return strings.HasPrefix(c, "/proc/")
}

// ProcPaths are the paths of paths below /proc, in their order: the
// masked and read-only paths a warm init applies with its skeleton.
func ProcPaths(paths []string) []string {
	proc, _ := splitProc(paths)
	return proc
}
