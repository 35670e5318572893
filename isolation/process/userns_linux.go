package process

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	host "github.com/sandboxed-dev/sandboxed/internal/hostsetup"
	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
)

// How each run's init enters a user namespace (none when nil):
//
//	who runs sandboxed      privilege     inside    outside (host ids)
//	root, invoking user U   same-as-user  —         U (no user namespace)
//	root, invoking user U   reduced       —         65534 (no user namespace)
//	root, no invoking user  same-as-user  0         R, the reserved range
//	root                    elevated      0         R
//	user U                  same-as-user  U         U
//	user U                  reduced       65534     U's first subordinate id + 65534
//	                                      0         U (the init only, to build the root)
//	user U                  elevated      0         U
//
// R is the first id of the range reserved for sandboxed: a "sandboxed"
// entry of /etc/subuid (and /etc/subgid) when there is one, else
// DefaultReservedStart, which must collide with no entry there.
//
// Maps of the user's own ids are written by this process; subordinate ids
// (reduced without root) by newuidmap and newgidmap, setuid helpers that
// check /etc/subuid. The init keeps every capability of its user namespace
// until its root is built, then drops them all (Setup) — inside a user
// namespace they never meant anything on the host.

// DefaultReservedStart is the first host id of the range sandboxed maps
// its tools to when it runs as root with no invoking user and /etc/subuid
// has no "sandboxed" entry: 0x70000000, above systemd's container range
// (524288–1879048191) and below 2^31.
const DefaultReservedStart = 0x70000000

// ReservedCount is the size of the default reserved range.
const ReservedCount = 65536

// reservedOwner names the entry of /etc/subuid and /etc/subgid that
// reserves a range for sandboxed.
const reservedOwner = "sandboxed"

// idMapping is the user namespace of one run.
type idMapping struct {
	// uids and gids map ids inside to host ids.
	uids, gids []syscall.SysProcIDMap
	// helper: newuidmap/newgidmap write the maps (subordinate ids).
	helper bool
	// become is the identity (inside) the init takes before it builds the
	// root, when it starts as an id the namespace does not map.
	become *[2]uint32
	// keepGroups: the init cannot change its supplementary groups (an
	// unprivileged writer of the maps must deny setgroups); they stay the
	// user's own.
	keepGroups bool
	// idmapGrants: grant binds are idmapped with the run's user namespace,
	// so files the tool writes belong on the host to whom they belong
	// inside (root), not to the mapped id.
	idmapGrants bool
	// dropGroups: the starting thread sheds its supplementary groups
	// before the clone (root's groups must not follow the tool into a
	// namespace that denies setgroups).
	dropGroups bool
}

// hostIDs is what the mapping needs of the host.
type hostIDs struct {
	euid, egid int
	// sub is the invoking user's first subordinate uid and gid and their
	// counts (rootless reduced), zero when it has none.
	subUID, subUIDCount, subGID, subGIDCount int
	// reserved is the first id of the range reserved for sandboxed (root).
	reserved int
}

// planIDMapping decides the user namespace of a run of privilege priv
// whose commands run as uid:gid (the spec's user). It is pure.
func planIDMapping(h hostIDs, priv privilege.Privilege, uid, gid uint32) (*idMapping, error) {
	one := func(in uint32, out int) []syscall.SysProcIDMap {
		return []syscall.SysProcIDMap{{ContainerID: int(in), HostID: out, Size: 1}}
	}
	if h.euid == 0 {
		switch {
		case priv == privilege.Elevated || (priv == privilege.SameAsUser && uid == 0):
			return &idMapping{
				uids: one(0, h.reserved), gids: one(0, h.reserved),
				become: &[2]uint32{0, 0}, idmapGrants: priv == privilege.SameAsUser, dropGroups: true,
			}, nil
		default:
			return nil, nil
		}
	}
	switch priv {
	case privilege.SameAsUser:
		if int(uid) != h.euid || int(gid) != h.egid {
			return nil, fmt.Errorf("check plan: same-as-user as %d:%d, but sandboxed runs as %d:%d without root: %w", uid, gid, h.euid, h.egid, ErrBadPlan)
		}
		return &idMapping{uids: one(uid, h.euid), gids: one(gid, h.egid), keepGroups: true}, nil
	case privilege.Elevated:
		return &idMapping{uids: one(0, h.euid), gids: one(0, h.egid), keepGroups: true}, nil
	default: // reduced, and anything else gets the reduced treatment
		if h.subUIDCount < 1 || h.subGIDCount < 1 {
			return nil, &isolation.UnsupportedError{
				What: fmt.Sprintf("the reduced privilege without root (it runs the tool as a subordinate id of uid %d, and /etc/subuid or /etc/subgid has none)", h.euid),
				Fix:  cgroup.SetupFix() + " (once per host), or run the tool as same-as-user",
			}
		}
		pick := func(start, count int) int {
			if count > privilege.NobodyID {
				return start + privilege.NobodyID
			}
			return start
		}
		return &idMapping{
			uids:   []syscall.SysProcIDMap{{ContainerID: 0, HostID: h.euid, Size: 1}, {ContainerID: int(uid), HostID: pick(h.subUID, h.subUIDCount), Size: 1}},
			gids:   []syscall.SysProcIDMap{{ContainerID: 0, HostID: h.egid, Size: 1}, {ContainerID: int(gid), HostID: pick(h.subGID, h.subGIDCount), Size: 1}},
			helper: true,
		}, nil
	}
}

// probeHostIDs reads what planIDMapping needs. Missing files are no ids.
// The last answer is kept with the state of the files it read (a claim
// probes for its key and again for its check, and they seldom change):
// it is answered again while each file is the one read then, unchanged,
// and was last changed more than a second before it was read (a change
// within the file system's timestamp granularity would not show).
func probeHostIDs() (hostIDs, error) {
	euid, egid := os.Geteuid(), os.Getegid()
	files := []string{"/etc/subuid", "/etc/subgid"}
	if euid != 0 {
		files = append(files, "/etc/passwd") // the user's name
	}
	stamp, settled := idFilesStamp(euid, egid, files)
	c := &hostIDsCache
	c.mu.Lock()
	if c.valid && c.stamp == stamp {
		h := c.ids
		c.mu.Unlock()
		return h, nil
	}
	c.mu.Unlock()
	h, err := readHostIDs(euid, egid)
	if err == nil && settled {
		c.mu.Lock()
		c.stamp, c.ids, c.valid = stamp, h, true
		c.mu.Unlock()
	}
	return h, err
}

// hostIDsCache is probeHostIDs' last answer.
var hostIDsCache struct {
	mu    sync.Mutex
	valid bool
	stamp string
	ids   hostIDs
}

// idFilesStamp names the ids and the state of files (device, inode,
// size, change and modification times; or absent), and reports whether
// each was last changed more than a second ago.
func idFilesStamp(euid, egid int, files []string) (string, bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "%d:%d", euid, egid)
	settled := true
	recent := time.Now().Add(-time.Second).UnixNano()
	for _, f := range files {
		var st unix.Stat_t
		if err := unix.Stat(f, &st); err != nil {
			fmt.Fprintf(&b, " %s:%v", f, err)
			continue
		}
		fmt.Fprintf(&b, " %s:%d:%d:%d:%d:%d", f, st.Dev, st.Ino, st.Size, st.Ctim.Nano(), st.Mtim.Nano())
		if st.Ctim.Nano() > recent || st.Mtim.Nano() > recent {
			settled = false
		}
	}
	return b.String(), settled
}

// readHostIDs is probeHostIDs, reading the files.
func readHostIDs(euid, egid int) (hostIDs, error) {
	h := hostIDs{euid: euid, egid: egid}
	if h.euid == 0 {
		r, err := reservedStart("/etc/subuid", "/etc/subgid")
		if err != nil {
			return h, err
		}
		h.reserved = r
		return h, nil
	}
	name := ""
	if u, err := user.LookupId(strconv.Itoa(h.euid)); err == nil {
		name = u.Username
	}
	var err error
	if h.subUID, h.subUIDCount, err = subIDs("/etc/subuid", name, h.euid); err != nil {
		return h, err
	}
	if h.subGID, h.subGIDCount, err = subIDs("/etc/subgid", name, h.euid); err != nil {
		return h, err
	}
	return h, nil
}

// readSubIDs reads /etc/subuid or /etc/subgid; a missing file has none.
func readSubIDs(path string) ([]host.SubIDRange, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	r, err := host.ParseSubIDs(b)
	if err != nil {
		return nil, &isolation.UnsupportedError{What: fmt.Sprintf("subordinate ids: %s: %v", path, err), Fix: "correct the line in " + path}
	}
	return r, nil
}

// subIDs returns the first subordinate range of the user (by name or uid).
func subIDs(path, name string, uid int) (start, count int, err error) {
	ranges, err := readSubIDs(path)
	if err != nil {
		return 0, 0, err
	}
	if own := host.OwnedBy(ranges, name, uid); len(own) > 0 {
		return int(own[0].Start), int(own[0].Count), nil
	}
	return 0, 0, nil
}

// ReservedID is the first host id of the range reserved for sandboxed
// (R above): the uid and gid a tier that cannot map ids runs root's tools
// as, the container tier on an engine without user namespace remapping.
func ReservedID() (int, error) { return reservedStart("/etc/subuid", "/etc/subgid") }

// reservedStart is the first id of sandboxed's reserved range, the same
// in both files: the "sandboxed" entry, else DefaultReservedStart when it
// collides with no entry of either file.
func reservedStart(subuid, subgid string) (int, error) {
	var starts []int
	for _, p := range []string{subuid, subgid} {
		ranges, err := readSubIDs(p)
		if err != nil {
			return 0, err
		}
		found := -1
		for _, r := range host.OwnedBy(ranges, reservedOwner, -1) {
			found = int(r.Start)
			break
		}
		if found >= 0 {
			starts = append(starts, found)
			continue
		}
		for _, r := range ranges {
			if r.Start < DefaultReservedStart+ReservedCount && DefaultReservedStart < r.End() {
				return 0, &isolation.UnsupportedError{
					What: fmt.Sprintf("a host id range for tools run by root: the default %d-%d overlaps %s's entry in %s", DefaultReservedStart, DefaultReservedStart+ReservedCount-1, r.Owner, p),
					Fix:  fmt.Sprintf("add a line sandboxed:START:65536 with a free START to %s and %s", subuid, subgid),
				}
			}
		}
		starts = append(starts, DefaultReservedStart)
	}
	if starts[0] != starts[1] {
		return 0, &isolation.UnsupportedError{
			What: fmt.Sprintf("a host id range for tools run by root: the sandboxed entries of %s (%d) and %s (%d) differ", subuid, starts[0], subgid, starts[1]),
			Fix:  "give sandboxed the same START in both files",
		}
	}
	return starts[0], nil
}

// writeIDMaps writes m's maps for pid with newuidmap and newgidmap.
func writeIDMaps(pid int, m *idMapping) error {
	for _, h := range []struct {
		tool string
		maps []syscall.SysProcIDMap
	}{{"newuidmap", m.uids}, {"newgidmap", m.gids}} {
		args := []string{strconv.Itoa(pid)}
		for _, e := range h.maps {
			args = append(args, strconv.Itoa(e.ContainerID), strconv.Itoa(e.HostID), strconv.Itoa(e.Size))
		}
		path, err := exec.LookPath(h.tool)
		if err != nil {
			return &isolation.UnsupportedError{What: "the reduced privilege without root needs " + h.tool, Fix: "install it (Debian and Ubuntu: apt-get install uidmap; Fedora: shadow-utils)"}
		}
		if out, err := exec.Command(path, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %w: %s", h.tool, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// allCaps lists every capability this kernel knows: the init's ambient set
// inside its user namespace until it drops them.
func allCaps() []uintptr {
	last := 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 && n < 64 {
			last = n
		}
	}
	caps := make([]uintptr, 0, last+1)
	for c := 0; c <= last; c++ {
		caps = append(caps, uintptr(c))
	}
	return caps
}

// preparedTrees makes, for each bind of s, a detached, private copy of
// its source carrying the bind's flags, and numbers them into s
// (Mount.Tree). With idmap the copies are idmapped with the user
// namespace of pid: files there belong inside to whom they belong on the
// host, and what the tool creates belongs on the host to whom it belongs
// inside. A source whose file system cannot be idmapped is refused: the
// mapped id could not write where the grant says it may.
//
// With g idmapping write grants (a reduced run as root), the write
// grants' copies are idmapped with a user namespace of g's maps instead:
// the grants' owner is the tool there (see grantAccess).
func preparedTrees(pid int, s *sbinit.Setup, idmap bool, g *grantAccess) (trees []int, retErr error) {
	defer func() {
		if retErr != nil {
			for _, fd := range trees {
				unix.Close(fd)
			}
			trees = nil
		}
	}()
	ns := -1
	if idmap {
		var err error
		if ns, err = unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			return nil, fmt.Errorf("open the user namespace of the sandbox init: %w", err)
		}
		defer unix.Close(ns)
	}
	wns := -1
	if g.idmapsWrite() {
		var err error
		if wns, err = writeGrantNS(g.exe, g); err != nil {
			return nil, err
		}
		defer unix.Close(wns)
	}
	for i := range s.Mounts {
		m := &s.Mounts[i]
		if m.Source == "" {
			continue
		}
		src, err := unix.Openat2(unix.AT_FDCWD, m.Source, &unix.OpenHow{
			Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("bind source %s: a path component is a symlink (changed since planning); refused", m.Source)
		}
		if err != nil {
			return nil, fmt.Errorf("open bind source %s: %w", m.Source, err)
		}
		// A character device (the /dev/null a policy mask binds over a
		// hidden file) holds no files to own: it is not idmapped, and
		// devtmpfs could not be.
		var sst unix.Stat_t
		isDev := unix.Fstat(src, &sst) == nil && sst.Mode&unix.S_IFMT == unix.S_IFCHR
		tree, err := unix.OpenTree(src, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
		unix.Close(src)
		if err != nil {
			return nil, fmt.Errorf("clone bind source %s: %w", m.Source, err)
		}
		trees = append(trees, tree)
		// Private, as the init's own binds: a copy of a mount the host
		// shares would receive what the host mounts below it later, and
		// pass on what the init mounts below it.
		ma := &unix.MountAttr{Attr_set: sbinit.MountAttr(*m), Propagation: unix.MS_PRIVATE}
		userns := ns
		if g.isWriteGrant(*m) {
			userns = wns
		}
		if userns < 0 || isDev {
			if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, ma); err != nil {
				return nil, fmt.Errorf("set the flags of bind source %s: %w", m.Source, err)
			}
			m.Tree = len(trees)
			continue
		}
		ma.Attr_set |= unix.MOUNT_ATTR_IDMAP
		ma.Userns_fd = uint64(userns)
		err = unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, ma)
		if err != nil {
			var st unix.Statfs_t
			_ = unix.Statfs(m.Source, &st)
			why := "as root with no invoking user, tools run as an unprivileged id and a grant needs one to be written as root"
			if userns == wns {
				why = fmt.Sprintf("a reduced tool runs as uid %d, and its write grant is idmapped so that it writes as the grant's owner", g.uids[0].HostID)
			}
			return nil, &isolation.UnsupportedError{
				What: fmt.Sprintf("an idmapped mount of %s (file system magic %#x): %v; %s", m.Source, st.Type, err, why),
				Fix:  "grant a directory on ext4, xfs, btrfs or tmpfs, or run sandboxed through sudo from the user who owns the files (a reduced tool: or run it as same-as-user)",
			}
		}
		m.Tree = len(trees)
	}
	return trees, nil
}

// HostIdentity is the host uid and gid the tool's commands of a
// process-tier plan run as: the spec's user through the user namespace
// this host would give the run (planIDMapping, the decision Start makes).
// ok is false for another tier, or when this host cannot say (its id
// files unreadable, a mapping it would refuse). It reads the host's id
// files, as a run does.
func HostIdentity(p *isolation.Plan) (uid, gid uint32, ok bool) {
	if p == nil || p.Tier != isolation.TierProcess || p.Spec == nil || p.Spec.Process == nil {
		return 0, 0, false
	}
	h, err := probeHostIDs()
	if err != nil {
		return 0, 0, false
	}
	u := p.Spec.Process.User
	m, err := planIDMapping(h, p.Privilege, u.UID, u.GID)
	if err != nil {
		return 0, 0, false
	}
	if m == nil { // no user namespace: the spec's ids are the host's
		return u.UID, u.GID, true
	}
	hu, uok := mappedID(m.uids, u.UID)
	hg, gok := mappedID(m.gids, u.GID)
	return hu, hg, uok && gok
}

// mappedID is the host id that id inside maps to.
func mappedID(maps []syscall.SysProcIDMap, id uint32) (uint32, bool) {
	for _, e := range maps {
		if int(id) >= e.ContainerID && int(id) < e.ContainerID+e.Size {
			return uint32(e.HostID + int(id) - e.ContainerID), true
		}
	}
	return 0, false
}
