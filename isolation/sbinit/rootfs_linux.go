package sbinit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
)

// The process-tier root, built by the init inside its own mount namespace:
//
//	/                 tmpfs (read-only after pivot_root), holds mountpoints
//	/usr /bin /sbin   read-only, nosuid, nodev binds of the host's (symlinks
//	/lib* ...         such as /bin -> usr/bin are recreated as symlinks)
//	/etc              generated passwd, group, hosts, nsswitch.conf,
//	                  hostname; copies (small files) or read-only binds
//	                  (directories) of what programs need to load and
//	                  verify TLS (ld.so.*, ssl/certs, ...); no resolv.conf:
//	                  the sandbox has no resolver
//	/proc             fresh procfs, masked and read-only paths as the spec says
//	/dev              read-only tmpfs: null zero full random urandom tty
//	                  (mknod as host root, binds of the host nodes in a user
//	                  namespace), pts (newinstance), shm, fd/std* symlinks
//	/tmp              size-capped tmpfs, nosuid, nodev. Not noexec: tools
//	                  legitimately run scripts they write to /tmp, and
//	                  noexec is no security boundary (sh /tmp/x runs anyway).
//	grants            the spec's bind mounts, after the above
//
// Nothing of /home, /root, /run, /var, /sys or /mnt exists. Binds are not
// recursive: mounts below a granted directory stay invisible.

// copyFile copies the regular file src to dst (mode 0644), making dst's
// parents. The bytes go from file to file in the kernel (sendfile).
func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	in, err := unix.Open(src, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, &os.PathError{Op: "open", Path: src, Err: err})
	}
	defer unix.Close(in)
	var st unix.Stat_t
	if err := unix.Fstat(in, &st); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("copy %s: not a regular file", src)
	}
	out, err := unix.Open(dst, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, &os.PathError{Op: "open", Path: dst, Err: err})
	}
	defer unix.Close(out)
	for left := st.Size; left > 0; {
		n, err := unix.Sendfile(out, in, nil, int(min(left, 1<<30)))
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			return fmt.Errorf("copy %s: %w", src, err)
		}
		if n == 0 {
			break // the file shrank meanwhile
		}
		left -= int64(n)
	}
	return nil
}

// writeFile writes data to the new file path (mode 0644).
func writeFile(path string, data []byte) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "write", Path: path, Err: err}
		}
		data = data[n:]
	}
	return nil
}

// makeNodes gives root/dev the host's device nodes names: made with mknod
// where the init may (host root), bound from the host where it may not (a
// user namespace).
func makeNodes(root string, names []string) error {
	for _, n := range names {
		host := "/dev/" + n
		var st unix.Stat_t
		if err := unix.Stat(host, &st); err != nil {
			return fmt.Errorf("stat %s: %w", host, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFCHR {
			return fmt.Errorf("%s is not a character device", host)
		}
		target := filepath.Join(root, host)
		err := unix.Mknod(target, unix.S_IFCHR|0o666, int(st.Rdev))
		if err == nil {
			// mknod obeys the umask; the nodes are for everyone.
			err = unix.Chmod(target, 0o666)
		}
		if err == nil {
			continue
		}
		if err != unix.EPERM {
			return fmt.Errorf("make %s: %w", host, err)
		}
		fd, err := unix.Open(host, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", host, err)
		}
		err = bindInto(root, plannedBind{src: bindSource{fd: fd, path: host}, target: host, opts: mountOpts{dev: true}})
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

// mountError is a failed mount(2) with its arguments.
type mountError struct {
	op, source, target, fstype string
	flags                      uintptr
	data                       string
	err                        error
}

func (e *mountError) Error() string {
	return fmt.Sprintf("%s %s on %s (type %q, flags %#x, data %q): %v", e.op, e.source, e.target, e.fstype, e.flags, e.data, e.err)
}

func (e *mountError) Unwrap() error { return e.err }

func mount(source, target, fstype string, flags uintptr, data string) error {
	if err := unix.Mount(source, target, fstype, flags, data); err != nil {
		return &mountError{op: "mount", source: source, target: target, fstype: fstype, flags: flags, data: data, err: err}
	}
	return nil
}

// bindSource is a host path opened O_PATH before the new root hides it.
type bindSource struct {
	fd   int
	path string
}

func (b bindSource) procPath() string { return "/proc/self/fd/" + strconv.Itoa(b.fd) }

// openGrantSource opens a planner-resolved source so that no path component
// may be a symlink: a source swapped for a symlink after planning is refused.
// base is the host's directory which a mount of the init covers; under,
// when not -1, is an O_PATH descriptor of it: a path at or below base is
// opened through it, and refused without it (by its path it would be what
// the init mounted there, not the host's).
func openGrantSource(path, base string, under int) (bindSource, error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return bindSource{}, fmt.Errorf("bind source %q: not an absolute, clean path", path)
	}
	dirfd, rel := unix.AT_FDCWD, path
	if path == base {
		dirfd, rel = under, "."
	} else if r, ok := strings.CutPrefix(path, base+"/"); ok && base != "/" {
		dirfd, rel = under, r
	}
	if dirfd < 0 && dirfd != unix.AT_FDCWD {
		return bindSource{}, fmt.Errorf("bind source %s: below %s, which the root covers, and the host's %s is not open: %w", path, base, base, ErrSetup)
	}
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(dirfd, rel, how)
	if err == nil {
		return bindSource{fd: fd, path: path}, nil
	}
	if errors.Is(err, unix.ELOOP) {
		return bindSource{}, fmt.Errorf("bind source %s: a path component is a symlink (changed since planning); refused", path)
	}
	if !errors.Is(err, unix.ENOSYS) {
		return bindSource{}, fmt.Errorf("open bind source %s: %w", path, err)
	}
	// Kernels before 5.6: open without following the last component,
	// then check that the kernel's name for what we opened is the path.
	fd, err = unix.Openat(dirfd, rel, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return bindSource{}, fmt.Errorf("open bind source %s: %w", path, err)
	}
	got, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || got != path {
		unix.Close(fd)
		return bindSource{}, fmt.Errorf("bind source %s: resolves to %q (changed since planning); refused", path, got)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		unix.Close(fd)
		return bindSource{}, fmt.Errorf("bind source %s: is a symlink; refused", path)
	}
	return bindSource{fd: fd, path: path}, nil
}

// plannedBind is one bind the root will get, its source open.
type plannedBind struct {
	src    bindSource
	target string // inside the new root
	opts   mountOpts
	// inGrant: see rootMount.inGrant.
	inGrant bool
	// prepared: src.fd is a detached mount the host made (idmapped, its
	// flags set): it is attached as it is.
	prepared bool
}

// mountFlags maps what a mount must be (mountOpts) to its flags in both
// mount APIs: MOUNT_ATTR_* for mount_setattr and fsmount, MS_* for
// mount(2). The decision is made once, here.
var mountFlags = []struct {
	attr uint64
	ms   uintptr
	want func(mountOpts) bool
}{
	{unix.MOUNT_ATTR_NOSUID, unix.MS_NOSUID, func(mountOpts) bool { return true }},
	{unix.MOUNT_ATTR_NODEV, unix.MS_NODEV, func(o mountOpts) bool { return !o.dev }},
	{unix.MOUNT_ATTR_NOEXEC, unix.MS_NOEXEC, func(o mountOpts) bool { return o.noexec || o.dev }},
	{unix.MOUNT_ATTR_RDONLY, unix.MS_RDONLY, func(o mountOpts) bool { return o.ro }},
}

// flags returns o as MOUNT_ATTR_* and MS_* flags.
func (o mountOpts) flags() (attr uint64, ms uintptr) {
	for _, f := range mountFlags {
		if f.want(o) {
			attr |= f.attr
			ms |= f.ms
		}
	}
	return attr, ms
}

// MountAttr is the MOUNT_ATTR_* flags a bind of m gets in the root: what
// the host sets on the binds it prepares itself (Mount.Tree).
func MountAttr(m Mount) uint64 {
	// A scratch mount's source is its read-only lower layer.
	attr, _ := mountOpts{ro: m.ReadOnly || m.Scratch, noexec: m.NoExec}.flags()
	return attr
}

// readHost reads the shape of each system path for planRoot.
func readHost(paths []string) ([]hostEntry, error) {
	out := make([]hostEntry, 0, len(paths))
	for _, path := range paths {
		fi, err := os.Lstat(path)
		if err != nil {
			out = append(out, hostEntry{path: path, absent: true})
			continue
		}
		h := hostEntry{path: path, mode: fi.Mode(), size: fi.Size()}
		if fi.Mode()&os.ModeSymlink != 0 {
			if h.link, err = os.Readlink(path); err != nil {
				return nil, fmt.Errorf("read link %s: %w", path, err)
			}
		}
		out = append(out, h)
	}
	return out, nil
}

// rootSkeleton is a root whose skeleton a warm init built (MsgPrepare),
// waiting for the config of the run that claims it.
type rootSkeleton struct {
	// asked is what the prepare frame asked for; the claiming config
	// must ask for the same.
	asked Skeleton
	// under is an O_PATH descriptor of the directory the root tmpfs
	// covers (RootBase), as the host has it: a grant's source below it
	// is opened through it. -1 when there is none.
	under int
	// landlock is the ruleset with the rules of the skeleton's paths
	// (nil: none; the claim makes every rule).
	landlock *landlockBase
}

// close releases what the skeleton holds of the host, and its ruleset.
func (sk *rootSkeleton) close() {
	if sk.under >= 0 {
		unix.Close(sk.under)
		sk.under = -1
	}
	sk.landlock.close()
	sk.landlock = nil
}

// prepareSkeleton builds the skeleton s asks for, before the init has its
// config (which a warm init waits for until a run claims it). Its mount
// namespace stays a slave of the host's, so a grant's source opened with
// the config is what the host has then; the root's own mounts are
// private, so nothing of the host reaches into the root. Every source of
// the system paths is opened before the root tmpfs hides anything, and a
// grant's below it is opened through the directory it covers (under).
func prepareSkeleton(s *Skeleton) (*rootSkeleton, error) {
	host, err := readHost(systemPaths())
	if err != nil {
		return nil, err
	}
	setup := &Setup{MaskedPaths: s.MaskedPaths, ReadonlyPaths: s.ReadonlyPaths, UID: s.UID, GID: s.GID, Hostname: s.Hostname}
	p := planRoot(&Config{RootBase: s.RootBase, TmpfsBytes: s.TmpfsBytes}, setup, host)
	if len(p.masked) > 0 || len(p.readonly) > 0 {
		return nil, fmt.Errorf("prepare root: masked and read-only paths of a skeleton must lie below /proc: %w", ErrSetup)
	}
	// Nothing done here may propagate back to the host, and what the host
	// mounts still reaches the host's paths here (not the root).
	if err := mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return nil, err
	}
	binds, closeBinds, err := openSystem(p)
	if err != nil {
		return nil, err
	}
	defer closeBinds()
	sk := &rootSkeleton{asked: *s, under: -1}
	if s.BuildAs != nil {
		// Every source the init opens is open: from here on it needs no
		// host identity (the grants come prepared).
		if err := become(s.BuildAs); err != nil {
			return nil, err
		}
	} else {
		fd, err := unix.Open(p.base, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			sk.under = fd
		}
	}
	if err := buildSkeleton(p, setup, binds); err != nil {
		sk.close()
		return nil, err
	}
	// Where it cannot be made ahead, the claim makes every rule itself
	// (and reports what stops it).
	sk.landlock, _ = prepareLandlock(p.base)
	if s.NetworkUp {
		if err := loopbackUp(); err != nil {
			sk.close()
			return nil, err
		}
	}
	if err := cutBounding(s.Bounding); err != nil {
		sk.close()
		return nil, err
	}
	return sk, nil
}

// buildRoot adds the run's part to the skeleton sk and pivots into the
// root: the plan of cfg (planRoot) without the skeleton's part, which
// stands. trees are the descriptors of the binds the host prepared
// (Mount.Tree).
func buildRoot(cfg *Config, setup *Setup, trees []int, sk *rootSkeleton) error {
	defer sk.close()
	p := planRoot(cfg, setup, nil)
	// From here on nothing the host mounts reaches the init.
	if err := mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return err
	}
	if sk.asked.BuildAs != nil {
		for _, m := range p.mounts {
			if m.source != "" && m.tree == 0 {
				return fmt.Errorf("bind %s: not prepared by the host, and the init builds its root as another identity: %w", m.dst, ErrSetup)
			}
		}
	}
	grants, closeGrants, err := openGrants(p, trees, sk.under)
	if err != nil {
		return err
	}
	defer closeGrants()
	sk.close()
	return finishRoot(p, grants)
}

// openSystem opens the sources of the root's system binds. The caller
// must call done once they are bound.
func openSystem(p *rootPlan) (binds []plannedBind, done func(), err error) {
	done = func() {
		for _, b := range binds {
			unix.Close(b.src.fd)
		}
	}
	binds = make([]plannedBind, 0, len(p.binds))
	for _, path := range p.binds {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			done()
			return nil, nil, fmt.Errorf("open %s: %w", path, err)
		}
		binds = append(binds, plannedBind{src: bindSource{fd: fd, path: path}, target: path, opts: mountOpts{ro: true}})
	}
	return binds, done, nil
}

// openGrants opens the sources of the plan's grants, by index in
// p.mounts; prepared ones are the caller's trees. under, when not -1, is
// the host's directory at p.base, under the root tmpfs: sources below it
// are opened through it. The caller must call done once they are bound.
func openGrants(p *rootPlan, trees []int, under int) (grants map[int]plannedBind, done func(), err error) {
	var open []int
	done = func() {
		for _, fd := range open {
			unix.Close(fd)
		}
	}
	grants = make(map[int]plannedBind)
	for i, m := range p.mounts {
		if m.source == "" {
			continue
		}
		if m.tree > 0 {
			if m.tree > len(trees) {
				done()
				return nil, nil, fmt.Errorf("bind %s: prepared mount %d of %d missing", m.dst, m.tree, len(trees))
			}
			// trees are closed by the caller.
			grants[i] = plannedBind{src: bindSource{fd: trees[m.tree-1], path: m.source}, target: m.dst, opts: m.opts, inGrant: m.inGrant, prepared: true}
			continue
		}
		src, err := openGrantSource(m.source, p.base, under)
		if err != nil {
			done()
			return nil, nil, err
		}
		open = append(open, src.fd)
		grants[i] = plannedBind{src: src, target: m.dst, opts: m.opts, inGrant: m.inGrant}
	}
	return grants, done, nil
}

// buildSkeleton mounts the root tmpfs on p.base and builds in it what no
// run decides: the system paths (binds are their open sources), /dev,
// /proc and the masked and read-only paths below it, the generated /etc
// files of setup and /tmp.
func buildSkeleton(p *rootPlan, setup *Setup, binds []plannedBind) error {
	// The new root: a small tmpfs holding mountpoints and generated files.
	if err := mount("sandbox", p.base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=4m"); err != nil {
		return err
	}
	root := p.base
	in := func(path string) string { return filepath.Join(root, path) }

	for _, l := range p.links {
		if err := os.MkdirAll(filepath.Dir(in(l.path)), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(l.text, in(l.path)); err != nil {
			return fmt.Errorf("recreate symlink %s: %w", l.path, err)
		}
	}
	for _, c := range p.copies {
		if err := copyFile(c, in(c)); err != nil {
			return err
		}
	}
	// /dev before its node binds.
	if err := os.Mkdir(in("/dev"), 0o755); err != nil {
		return err
	}
	if err := mount("sandbox-dev", in("/dev"), "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=65536k"); err != nil {
		return err
	}
	for _, b := range binds {
		if err := bindInto(root, b); err != nil {
			return err
		}
	}
	if err := makeNodes(root, p.nodes); err != nil {
		return err
	}
	if err := finishDev(root); err != nil {
		return err
	}
	if err := os.Mkdir(in("/proc"), 0o555); err != nil {
		return err
	}
	if err := mount("proc", in("/proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	if err := maskAndProtect(root, p.procMasked, p.procReadonly); err != nil {
		return err
	}
	if err := writeEtc(root, setup); err != nil {
		return err
	}
	if err := os.Mkdir(in("/tmp"), 0o1777); err != nil {
		return err
	}
	return mount("sandbox-tmp", in("/tmp"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=1777,size=%d", p.tmpfsBytes))
}

// maskAndProtect masks the paths masked and makes the paths readonly
// read-only, below root.
func maskAndProtect(root string, masked, readonly []string) error {
	for _, path := range masked {
		if err := maskPath(root, path); err != nil {
			return err
		}
	}
	for _, path := range readonly {
		if err := readonlyPath(root, path); err != nil {
			return err
		}
	}
	return nil
}

// finishRoot adds the run's part to a root whose skeleton is built: the
// grants (their sources open) and tmpfs mounts, the masked and read-only
// paths not below /proc; then pivots into it.
func finishRoot(p *rootPlan, grants map[int]plannedBind) error {
	root := p.base
	// A read-only tmpfs is mounted writable first, so grants nested in it
	// get their mountpoints, and made read-only once they are bound.
	var readonlyTmpfs []int // descriptors of the mounts
	var readonlyDst []string
	defer func() {
		for _, fd := range readonlyTmpfs {
			unix.Close(fd)
		}
	}()
	for i, m := range p.mounts {
		if b, ok := grants[i]; ok {
			if m.scratch {
				if err := scratchInto(root, b, i, p.tmpfsBytes); err != nil {
					return err
				}
				continue
			}
			if err := bindInto(root, b); err != nil {
				return err
			}
			continue
		}
		fd, err := tmpfsInto(root, m)
		if err != nil {
			return err
		}
		if m.opts.ro {
			readonlyTmpfs = append(readonlyTmpfs, fd)
			readonlyDst = append(readonlyDst, m.dst)
		} else {
			unix.Close(fd)
		}
	}
	_, roTmpfs := mountOpts{ro: true, noexec: true}.flags()
	for i, fd := range readonlyTmpfs {
		// Through the mount's own descriptor: no path is looked up again.
		if err := unix.Mount("", "/proc/self/fd/"+strconv.Itoa(fd), "", unix.MS_REMOUNT|roTmpfs, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", readonlyDst[i], err)
		}
	}
	if err := maskAndProtect(root, p.masked, p.readonly); err != nil {
		return err
	}
	return pivot(root)
}

// bindInto bind-mounts b into root and remounts it with the wanted flags,
// keeping the flags the kernel locks on the source (user namespaces).
func bindInto(root string, b plannedBind) error {
	var st unix.Stat_t
	if err := unix.Fstat(b.src.fd, &st); err != nil {
		return fmt.Errorf("stat bind source %s: %w", b.src.path, err)
	}
	tfd, err := mountpoint(root, b.target, st.Mode&unix.S_IFMT == unix.S_IFDIR, !b.inGrant)
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	if b.prepared {
		if err := unix.MoveMount(b.src.fd, "", tfd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
			return &mountError{op: "move_mount", source: b.src.path, target: b.target, err: err}
		}
		return nil
	}
	attr, ms := b.opts.flags()
	// Clone the source, set its flags while it is detached, then attach
	// it: no moment with the wrong flags, and no path is looked up again.
	// It is private: a clone of a mount the host shares would receive
	// what the host mounts below it later.
	tree, err := unix.OpenTree(b.src.fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err == nil {
		err = unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: attr, Propagation: unix.MS_PRIVATE})
		if err == nil {
			err = unix.MoveMount(tree, "", tfd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
			unix.Close(tree)
			if err != nil {
				return &mountError{op: "move_mount", source: b.src.path, target: b.target, err: err}
			}
			return nil
		}
		unix.Close(tree)
		if !errors.Is(err, unix.ENOSYS) {
			return &mountError{op: "mount_setattr", source: b.src.path, target: b.target, flags: uintptr(attr), err: err}
		}
		// open_tree (5.2) without mount_setattr (5.12): the old way.
	} else if !errors.Is(err, unix.ENOSYS) {
		return &mountError{op: "open_tree", source: b.src.path, target: b.target, err: err}
	}
	// Kernels before 5.12: bind, then remount with the flags, keeping those
	// the kernel locks on the source.
	target := filepath.Join(root, b.target)
	if err := mount(b.src.procPath(), "/proc/self/fd/"+strconv.Itoa(tfd), "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", b.src.path, err)
	}
	flags := uintptr(unix.MS_BIND|unix.MS_REMOUNT) | ms
	var sfs unix.Statfs_t
	if err := unix.Statfs(target, &sfs); err == nil {
		flags |= lockedFlags(sfs.Flags)
	}
	if err := mount("", target, "", flags, ""); err != nil {
		return fmt.Errorf("remount %s: %w", b.target, err)
	}
	return mount("", target, "", unix.MS_PRIVATE, "")
}

// scratchInto mounts b at its target as an overlay: b's source, bound
// read-only, is the lower layer; the upper layer and overlayfs's work
// directory live on a tmpfs of size bytes. Both are staged in a directory
// of the new root, which is detached and removed once the overlay holds
// them (overlayfs keeps private clones of its layers), so the sandbox
// never sees them.
func scratchInto(root string, b plannedBind, n int, size int64) error {
	var st unix.Stat_t
	if err := unix.Fstat(b.src.fd, &st); err != nil {
		return fmt.Errorf("stat bind source %s: %w", b.src.path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		// A file has no layers: it stays read-only.
		ro := b
		ro.opts.ro = true
		return bindInto(root, ro)
	}
	stage := fmt.Sprintf("/.sandboxed-scratch-%d", n)
	dir := filepath.Join(root, stage)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("scratch layer of %s: %w", b.target, err)
	}
	if err := mount("sandbox-scratch", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=0700,size=%d", size)); err != nil {
		return err
	}
	for _, d := range []string{"lower", "upper", "work"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("scratch layer of %s: %w", b.target, err)
		}
	}
	lower := b
	lower.target, lower.inGrant = stage+"/lower", false
	lower.opts.ro = true
	if err := bindInto(root, lower); err != nil {
		return err
	}
	tfd, err := mountpoint(root, b.target, true, !b.inGrant)
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	_, ms := mountOpts{noexec: b.opts.noexec}.flags()
	data := "lowerdir=" + filepath.Join(dir, "lower") + ",upperdir=" + filepath.Join(dir, "upper") + ",workdir=" + filepath.Join(dir, "work")
	// In a user namespace overlayfs keeps its metadata in user.* xattrs;
	// kernels before 5.11 know no userxattr, and outside one it is not
	// needed.
	err = mount("overlay", "/proc/self/fd/"+strconv.Itoa(tfd), "overlay", ms, data+",userxattr")
	if err != nil {
		err = mount("overlay", "/proc/self/fd/"+strconv.Itoa(tfd), "overlay", ms, data)
	}
	if err != nil {
		return fmt.Errorf("scratch layer of %s: %w", b.target, err)
	}
	if err := unix.Unmount(filepath.Join(dir, "lower"), unix.MNT_DETACH); err != nil {
		return fmt.Errorf("scratch layer of %s: detach its lower layer: %w", b.target, err)
	}
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("scratch layer of %s: detach its staging: %w", b.target, err)
	}
	return os.Remove(dir)
}

// tmpfsInto mounts a tmpfs at m.dst below root, on a mountpoint
// reached without following a symlink (a path inside a grant is the
// tool's to change), and returns an O_PATH descriptor of the new mount's
// root, through which it can be made read-only later.
func tmpfsInto(root string, m rootMount) (int, error) {
	tfd, err := mountpoint(root, m.dst, true, !m.inGrant)
	if err != nil {
		return -1, err
	}
	defer unix.Close(tfd)
	// Writable until the caller makes it read-only (grants nested in it
	// need their mountpoints first).
	attr, flags := mountOpts{noexec: m.opts.noexec}.flags()
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err == nil {
		defer unix.Close(fsfd)
		for _, kv := range strings.Split(m.data, ",") {
			if kv == "" {
				continue
			}
			k, v, _ := strings.Cut(kv, "=")
			if err := unix.FsconfigSetString(fsfd, k, v); err != nil {
				return -1, &mountError{op: "fsconfig", source: "tmpfs", target: m.dst, data: kv, err: err}
			}
		}
		if err := unix.FsconfigCreate(fsfd); err != nil {
			return -1, &mountError{op: "fsconfig create", source: "tmpfs", target: m.dst, data: m.data, err: err}
		}
		mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, int(attr))
		if err != nil {
			return -1, &mountError{op: "fsmount", source: "tmpfs", target: m.dst, err: err}
		}
		if err := unix.MoveMount(mfd, "", tfd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
			unix.Close(mfd)
			return -1, &mountError{op: "move_mount", source: "tmpfs", target: m.dst, err: err}
		}
		return mfd, nil
	}
	if !errors.Is(err, unix.ENOSYS) {
		return -1, &mountError{op: "fsopen", source: "tmpfs", target: m.dst, err: err}
	}
	// Kernels before 5.2: mount through the mountpoint's descriptor, then
	// walk to it again (without following a symlink), which steps onto the
	// new mount.
	if err := mount("tmpfs", "/proc/self/fd/"+strconv.Itoa(tfd), "tmpfs", flags, m.data); err != nil {
		return -1, err
	}
	return mountpoint(root, m.dst, true, false)
}

// mountpoint makes (if needed) and opens target below root one component
// at a time, never following a symlink: a writable grant cannot redirect
// where a later mount lands, nor make the init create files elsewhere on
// the host. It returns an O_PATH descriptor of the mountpoint.
func mountpoint(root, target string, dir, create bool) (int, error) {
	fail := func(err error) (int, error) {
		return -1, fmt.Errorf("make mountpoint %s: %w", target, err)
	}
	cur, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	parts := strings.Split(strings.Trim(filepath.Clean(target), "/"), "/")
	for i, name := range parts {
		last := i == len(parts)-1
		var next int
		if !last || dir {
			if create {
				if err = unix.Mkdirat(cur, name, 0o755); err != nil && err != unix.EEXIST {
					unix.Close(cur)
					return fail(err)
				}
			}
			// O_DIRECTORY|O_NOFOLLOW: a symlink here is ENOTDIR.
			next, err = unix.Openat(cur, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		} else if !create {
			next, err = unix.Openat(cur, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		} else {
			var f int
			// O_CREAT|O_NOFOLLOW: a symlink here is ELOOP.
			if f, err = unix.Openat(cur, name, unix.O_RDONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644); err == nil {
				unix.Close(f)
				next, err = unix.Openat(cur, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(cur)
		if err == nil {
			var st unix.Stat_t
			if err = unix.Fstat(next, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				err = unix.ELOOP
			}
			if err != nil {
				unix.Close(next)
			}
		}
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return fail(fmt.Errorf("%s is a symlink or not a directory; refused", filepath.Join(parts[:i+1]...)))
			}
			if !create && errors.Is(err, unix.ENOENT) {
				return fail(fmt.Errorf("%s is inside a grant and vanished since the run was planned; refused", filepath.Join(parts[:i+1]...)))
			}
			return fail(err)
		}
		cur = next
	}
	return cur, nil
}

// lockedFlags maps statfs flags to the mount flags a remount must keep.
func lockedFlags(f int64) uintptr {
	var out uintptr
	for st, ms := range map[int64]uintptr{
		unix.ST_NOSUID: unix.MS_NOSUID, unix.ST_NODEV: unix.MS_NODEV, unix.ST_NOEXEC: unix.MS_NOEXEC,
		unix.ST_NOATIME: unix.MS_NOATIME, unix.ST_NODIRATIME: unix.MS_NODIRATIME, unix.ST_RELATIME: unix.MS_RELATIME,
		unix.ST_RDONLY: unix.MS_RDONLY,
	} {
		if f&st != 0 {
			out |= ms
		}
	}
	return out
}

func finishDev(root string) error {
	dev := filepath.Join(root, "dev")
	if err := os.Mkdir(filepath.Join(dev, "pts"), 0o755); err != nil {
		return err
	}
	if err := mount("devpts", filepath.Join(dev, "pts"), "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return err
	}
	if err := os.Mkdir(filepath.Join(dev, "shm"), 0o1777); err != nil {
		return err
	}
	if err := mount("shm", filepath.Join(dev, "shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=64m"); err != nil {
		return err
	}
	for name, target := range map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return fmt.Errorf("make /dev/%s: %w", name, err)
		}
	}
	// The mode of the tmpfs root: read-only from here on.
	return mount("", dev, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, "")
}

// maskPath hides p (inside the new root): files get /dev/null bound over
// them, directories an empty read-only tmpfs. Absent paths are skipped.
func maskPath(root, p string) error {
	target := filepath.Join(root, p)
	fi, err := os.Lstat(target)
	if err != nil {
		return nil
	}
	if fi.IsDir() {
		return mount("masked", target, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,mode=0555")
	}
	return mount(filepath.Join(root, "dev/null"), target, "", unix.MS_BIND, "")
}

// readonlyPath makes p (inside the new root) read-only.
func readonlyPath(root, p string) error {
	target := filepath.Join(root, p)
	if _, err := os.Lstat(target); err != nil {
		return nil
	}
	if err := mount(target, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	return mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}

// pivot makes root the root, detaches the old one and makes / read-only.
func pivot(root string) error {
	if err := unix.Chdir(root); err != nil {
		return fmt.Errorf("enter new root: %w", err)
	}
	// pivot_root(".", ".") stacks the old root under the new one; detaching
	// "." then removes it (runc's trick, no put_old directory needed).
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root to %s: %w", root, err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	return mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "")
}

// writeEtc writes the generated /etc files.
func writeEtc(root string, setup *Setup) error {
	etc := filepath.Join(root, "etc")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		return err
	}
	host := setup.Hostname
	if host == "" {
		host = "sandbox"
	}
	files := map[string]string{
		"passwd": passwdFile(setup.UID, setup.GID),
		"group":  groupFile(setup.GID),
		"hosts": "127.0.0.1\tlocalhost " + host + "\n" +
			"::1\tlocalhost ip6-localhost ip6-loopback\n",
		"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\n",
		"hostname":      host + "\n",
	}
	for _, name := range generatedEtc {
		if err := writeFile(filepath.Join(etc, name), []byte(files[name])); err != nil {
			return fmt.Errorf("write /etc/%s: %w", name, err)
		}
	}
	return nil
}

func passwdFile(uid, gid uint32) string {
	s := "root:x:0:0:root:/tmp:/bin/sh\n"
	if uid != 0 && uid != privilege.NobodyID {
		s += fmt.Sprintf("sandbox:x:%d:%d:sandbox:/tmp:/bin/sh\n", uid, gid)
	}
	return s + fmt.Sprintf("nobody:x:%d:%d:nobody:/nonexistent:/usr/sbin/nologin\n", privilege.NobodyID, privilege.NobodyID)
}

func groupFile(gid uint32) string {
	s := "root:x:0:\n"
	if gid != 0 && gid != 65534 {
		s += fmt.Sprintf("sandbox:x:%d:\n", gid)
	}
	return s + "nogroup:x:65534:\n"
}
