package landlock

import (
	"errors"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/tier"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
)

// Errno values of the rules (Linux, every architecture we build).
const (
	errnoEPERM        = 1
	errnoEAFNOSUPPORT = 97
)

// Socket constants the rules test (linux/socket.h, linux/net.h).
const (
	afUnix        = 1
	afInet        = 2
	afInet6       = 10
	ipprotoTCP    = 6
	sockStream    = 1
	sockSeqpacket = 5
	// sockTypeMask clears SOCK_NONBLOCK and SOCK_CLOEXEC from a socket
	// type, in its low 32 bits (the argument is an int).
	sockTypeMask = 0xffffffff &^ (0x800 | 0x80000)
	msgFastOpen  = 0x20000000
	// prioProcess is PRIO_PROCESS (linux/resource.h), ioprioWhoProcess
	// IOPRIO_WHO_PROCESS (linux/ioprio.h).
	prioProcess      = 0
	ioprioWhoProcess = 1
)

// SeccompRules are the rules the planner puts first in the seccomp profile
// of a landlock-tier run (the compiler matches rules in order, first match
// wins): with no namespace around it, the tool must not reach the
// container's network, its Unix sockets (a mounted Docker socket is root
// on the host) or its IPC, nor change the ownership or extended attributes
// of a file it can name.
//
//   - socket: without network, every family fails with EAFNOSUPPORT (no
//     Unix socket of the container can be connected to without one), and
//     connect, bind and listen fail with EPERM. With network (a run with
//     egress, whose connect() calls the init supervises: sbinit.Connect),
//     only TCP sockets, AF_INET or AF_INET6, SOCK_STREAM (its
//     SOCK_NONBLOCK and SOCK_CLOEXEC masked off) with protocol 0 or
//     IPPROTO_TCP (no SCTP, no Multipath TCP), and bind and listen fail
//     with EPERM (listen would bind).
//   - socketpair: AF_UNIX stream or seqpacket only (the type tested with
//     SOCK_NONBLOCK and SOCK_CLOEXEC masked off).
//   - sendto, sendmsg, sendmmsg with MSG_FASTOPEN (it connects without
//     connect) fail with EPERM.
//   - System V IPC and POSIX message queues: EPERM (they are the
//     container's, there being no IPC namespace).
//   - chown, fchown, lchown, fchownat and every extended-attribute change:
//     EPERM (Landlock does not restrict them).
//   - truncate by path: EPERM (Landlock handles it only from ABI 3;
//     ftruncate needs a descriptor opened for writing, which it checks).
//   - the limits, priorities and scheduling of other processes: prlimit64,
//     setpriority, ioprio_set and the sched_set* calls only on the caller
//     itself (pid 0, or PRIO_PROCESS and IOPRIO_WHO_PROCESS with who 0);
//     any other target fails with EPERM. Landlock's scoping covers signals
//     but not these, which the kernel allows between processes of one uid:
//     as a non-root user the tool shares the init's uid, and could starve
//     the init or take its descriptors away (RLIMIT_NOFILE 0) so that the
//     kill of the tree finds nothing.
//
// The rules are data; the same value is checked by the backend to open the
// plan's profile.
func SeccompRules(network bool) []specs.LinuxSyscall {
	eperm := uint(errnoEPERM)
	eafnosupport := uint(errnoEAFNOSUPPORT)
	deny := func(names ...string) specs.LinuxSyscall {
		return specs.LinuxSyscall{Names: names, Action: specs.ActErrno, ErrnoRet: &eperm}
	}
	masked := func(i uint, mask, v uint64) specs.LinuxSeccompArg {
		return specs.LinuxSeccompArg{Index: i, Value: mask, ValueTwo: v, Op: specs.OpMaskedEqual}
	}
	eq := func(i uint, v uint64) specs.LinuxSeccompArg {
		return specs.LinuxSeccompArg{Index: i, Value: v, Op: specs.OpEqualTo}
	}
	pair := func(typ uint64) specs.LinuxSyscall {
		return specs.LinuxSyscall{Names: []string{"socketpair"}, Action: specs.ActAllow,
			Args: []specs.LinuxSeccompArg{eq(0, afUnix), masked(1, sockTypeMask, typ)}}
	}
	// self allows name when its arguments name the caller alone; a deny
	// of name follows it.
	self := func(name string, args ...specs.LinuxSeccompArg) specs.LinuxSyscall {
		return specs.LinuxSyscall{Names: []string{name}, Action: specs.ActAllow, Args: args}
	}
	fastOpen := func(name string, flagsArg uint) specs.LinuxSyscall {
		r := deny(name)
		r.Args = []specs.LinuxSeccompArg{masked(flagsArg, msgFastOpen, msgFastOpen)}
		return r
	}
	rules := []specs.LinuxSyscall{
		{Names: []string{"socket"}, Action: specs.ActErrno, ErrnoRet: &eafnosupport},
		deny("connect", "bind", "listen"),
	}
	if network {
		rules = rules[:0]
		for _, family := range []uint64{afInet, afInet6} {
			for _, proto := range []uint64{0, ipprotoTCP} {
				rules = append(rules, specs.LinuxSyscall{Names: []string{"socket"}, Action: specs.ActAllow,
					Args: []specs.LinuxSeccompArg{eq(0, family), masked(1, sockTypeMask, sockStream), eq(2, proto)}})
			}
		}
		rules = append(rules,
			specs.LinuxSyscall{Names: []string{"socket"}, Action: specs.ActErrno, ErrnoRet: &eafnosupport},
			deny("bind", "listen"))
	}
	return append(rules,
		pair(sockStream),
		pair(sockSeqpacket),
		deny("socketpair"),
		fastOpen("sendto", 3),
		fastOpen("sendmsg", 2),
		fastOpen("sendmmsg", 3),
		deny("msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semctl",
			"shmget", "shmat", "shmdt", "shmctl",
			"mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr"),
		deny("chown", "fchown", "lchown", "fchownat",
			"setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
			"setxattrat", "removexattrat"),
		deny("truncate"),
		self("prlimit64", eq(0, 0)),
		self("sched_setscheduler", eq(0, 0)),
		self("sched_setparam", eq(0, 0)),
		self("sched_setattr", eq(0, 0)),
		self("sched_setaffinity", eq(0, 0)),
		self("setpriority", eq(0, prioProcess), eq(1, 0)),
		self("ioprio_set", eq(0, ioprioWhoProcess), eq(1, 0)),
		deny("prlimit64", "sched_setscheduler", "sched_setparam", "sched_setattr", "sched_setaffinity",
			"setpriority", "ioprio_set"),
	)
}

// WithSeccompRules is profile with SeccompRules(network) first: the
// profile of a landlock-tier run, with network when it has egress.
func WithSeccompRules(profile *specs.LinuxSeccomp, network bool) *specs.LinuxSeccomp {
	p := *profile
	p.Syscalls = append(SeccompRules(network), profile.Syscalls...)
	return &p
}

// hasSeccompRules reports whether profile starts with
// SeccompRules(network).
func hasSeccompRules(profile *specs.LinuxSeccomp, network bool) bool {
	want := SeccompRules(network)
	if profile == nil || len(profile.Syscalls) < len(want) {
		return false
	}
	for i, r := range want {
		if !sameRule(r, profile.Syscalls[i]) {
			return false
		}
	}
	return true
}

func sameRule(a, b specs.LinuxSyscall) bool {
	errno := func(p *uint) uint {
		if p == nil {
			return 0
		}
		return *p
	}
	return slices.Equal(a.Names, b.Names) && a.Action == b.Action && errno(a.ErrnoRet) == errno(b.ErrnoRet) &&
		slices.Equal(a.Args, b.Args)
}

// skeletonMounts are the spec's mounts a root of its own would have
// (DefaultSpec's): this tier has no root of its own, and the scratch
// directory stands in for /tmp.
var skeletonMounts = map[string]bool{"/proc": true, "/dev": true, "/dev/pts": true, "/dev/shm": true, "/dev/mqueue": true, "/tmp": true, "/sys": true}

// ScratchPrefix starts the name of a run's scratch directory, followed by
// its run id (ScratchDir).
const ScratchPrefix = "sandboxed-scratch-"

// ScratchDir is the scratch directory of a landlock-tier run (its TMPDIR
// and HOME) in the host's temporary directory tempDir, named by the run
// so that gc finds what a crashed run left.
func ScratchDir(tempDir, runID string) string {
	if !filepath.IsAbs(tempDir) {
		tempDir = "/tmp"
	}
	return filepath.Join(tempDir, ScratchPrefix+runID)
}

// ToolIDBase starts the range of ids a run's tool gets in this tier as
// root (ToolIDCount of them): far above any account's, and below the ids
// user namespaces commonly map.
const (
	ToolIDBase  = 0x5b000000
	ToolIDCount = 1 << 20
)

// ToolID is the uid and gid a landlock-tier run's tool has when sandboxed
// runs as root: one of the range of ToolIDBase, chosen by the run's id,
// so that the planner writes it into the spec and every run has its own.
// Start refuses it when a process already runs as it.
func ToolID(runID string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(runID))
	return ToolIDBase + h.Sum32()%ToolIDCount
}

// IsToolID reports whether id is in ToolID's range.
func IsToolID(id uint32) bool { return id >= ToolIDBase && id < ToolIDBase+ToolIDCount }

// grant is one bind of the plan: a host hierarchy the commands may use.
type grant struct {
	source, dest string
	write, exec  bool
	// except are the paths beneath source that stay unreadable (masks
	// inside a read grant): sbinit.LandlockPath.Except.
	except []string
}

// refusal is a run this tier refuses, with the gap that would accept it
// ("" when nothing accepts it).
type refusal struct {
	gap, what, fix string
}

func (r refusal) err() error {
	return &isolation.UnsupportedError{What: r.what, Fix: r.fix}
}

// planGrants reads the binds of p's spec: the grants the commands get as
// Landlock rules. A mount inside a read grant that hides a path (a mask:
// a tmpfs, a bind of something else over it) or narrows it becomes an
// except of every grant above it: no rule reaches it (a narrowing bind
// keeps its own). Inside a write grant the tier cannot do that (a rule
// per entry would keep the tool from creating files), and refuses unless
// p accepts the gap by name, which leaves the mask out. A tmpfs of the
// tool's own, or a mount type of its own, is refused. It makes no system
// call.
func planGrants(p *isolation.Plan) ([]grant, error) {
	var binds []grant
	isBind := func(m specs.Mount) bool {
		return m.Type == "bind" || slices.Contains(m.Options, "bind") || slices.Contains(m.Options, "rbind")
	}
	for _, m := range p.Spec.Mounts {
		if isBind(m) {
			binds = append(binds, grant{source: filepath.Clean(m.Source), dest: filepath.Clean(m.Destination),
				write: !slices.Contains(m.Options, "ro"), exec: !slices.Contains(m.Options, "noexec")})
		}
	}
	accepted := slices.Contains(p.AcceptGaps, tier.GapMasks)
	var out []grant
	var excepts []string
	for _, m := range p.Spec.Mounts {
		dst := filepath.Clean(m.Destination)
		outer, written := enclosing(binds, dst)
		hide := false
		switch {
		case !isBind(m) && outer != nil:
			hide = true
		case !isBind(m) && skeletonMounts[dst]:
			continue
		case !isBind(m) && m.Type == "tmpfs" && slices.Contains(m.Options, "ro"):
			// An empty, read-only directory where the process tier
			// shows an uncovered working directory: here the host's
			// directory is there, and no rule lets it be read.
			continue
		case !isBind(m):
			return nil, fmt.Errorf("mount %s (%s): the landlock tier mounts nothing: %w", dst, m.Type, ErrBadPlan)
		}
		g := grant{source: filepath.Clean(m.Source), dest: dst, write: !slices.Contains(m.Options, "ro"), exec: !slices.Contains(m.Options, "noexec")}
		if !hide && !filepath.IsAbs(g.source) {
			return nil, fmt.Errorf("bind of %s: source %q is not an absolute path: %w", dst, m.Source, ErrBadPlan)
		}
		if outer != nil && !hide {
			// A bind inside a grant narrows it (a mask, a protected path,
			// a read grant inside a write grant) unless it gives at least
			// the grant's rights to the same place: Landlock can add
			// rights beneath a rule, never take them away.
			same := g.source == g.dest && (g.write || !outer.write) && (g.exec || !outer.exec)
			if same {
				out = append(out, g)
				continue
			}
			hide = g.source != g.dest // a hiding bind (/dev/null over a file)
		}
		if outer == nil {
			out = append(out, g)
			continue
		}
		if written != nil {
			if !accepted {
				return nil, maskRefusal(dst, written.dest).err()
			}
			continue // accepted: not applied
		}
		excepts = append(excepts, dst)
		if !hide {
			out = append(out, g) // a narrower bind of its own place: its own rule
		}
	}
	for i := range out {
		for _, e := range excepts {
			if rel, ok := beneath(out[i].dest, e); ok {
				out[i].except = append(out[i].except, filepath.Join(out[i].source, rel))
			}
		}
	}
	return out, nil
}

// enclosing is the deepest of binds strictly above dst, and the deepest
// of them that is writable (nil for none).
func enclosing(binds []grant, dst string) (outer, written *grant) {
	for i := range binds {
		b := &binds[i]
		if _, ok := beneath(b.dest, dst); !ok {
			continue
		}
		if outer == nil || len(b.dest) > len(outer.dest) {
			outer = b
		}
		if b.write && (written == nil || len(b.dest) > len(written.dest)) {
			written = b
		}
	}
	return outer, written
}

// beneath returns p relative to dir when p is strictly beneath dir.
func beneath(dir, p string) (string, bool) {
	if dir == "/" {
		return strings.TrimPrefix(p, "/"), p != "/"
	}
	if !strings.HasPrefix(p, dir+"/") {
		return "", false
	}
	return p[len(dir)+1:], true
}

func maskRefusal(path, grant string) refusal {
	return refusal{gap: tier.GapMasks,
		what: fmt.Sprintf("the mask at %s inside the write grant of %s in the landlock tier (Landlock rights hold for a whole hierarchy: a read grant keeps a mask unreadable with a rule per entry, but a write grant so split would keep the tool from creating files)", path, grant),
		fix:  "grant the folder read-only, or grant narrower paths that hold nothing the policy masks, run the tool where namespaces can be made (the process tier), or accept the gap in the policy (isolation.landlock-gaps: [" + tier.GapMasks + "]: the write grant then leaves its masks out)"}
}

// MaskNote says what a mask inside a read grant is in this tier: the plan
// records it (MaskApproximation), and explain and the result say it.
const MaskNote = "a mask inside a read grant gets no Landlock rule: the folders above it may only be listed, and every other entry of those folders gets the grant's rule when each command starts; so masked names stay listed (a masked folder's entries too) while their contents cannot be read (EACCES), a masked file renamed during the run stays unreadable, and what is created in those folders during the run cannot be read either; a mask inside a write grant refuses the run, unless the policy accepts the gap masks, which runs it with the write grant's masks left out (readable and writable)"

// MaskApproximation is what p's tier, the landlock tier, approximates of
// the masks in its spec (MaskNote, on the spec's Mounts), nil when it
// has no mask inside a grant.
func MaskApproximation(p *isolation.Plan) *isolation.Approximation {
	if p == nil || p.Spec == nil || p.Tier != isolation.TierLandlock {
		return nil
	}
	note := &isolation.Approximation{Field: specconv.FieldMounts, How: MaskNote}
	// Whether the gap is accepted or not, a mask inside a write grant
	// is one: planned without the gap, it is refused.
	strict := *p
	strict.AcceptGaps = slices.DeleteFunc(slices.Clone(p.AcceptGaps), func(g string) bool { return g == tier.GapMasks })
	gs, err := planGrants(&strict)
	var unsupported *isolation.UnsupportedError
	if errors.As(err, &unsupported) {
		return note
	}
	for _, g := range gs {
		if len(g.except) > 0 {
			return note
		}
	}
	return nil
}

// checkExcepts refuses a mask that a rule of the commands other than its
// grants' would still let be read: one beneath a system directory, the
// parts of /etc and /proc every command reads, or the scratch directory.
func checkExcepts(grants []grant, scratch string) error {
	others := append(sbinit.HostSystemLandlock(), sbinit.LandlockPath{Path: scratch})
	for _, g := range grants {
		for _, e := range g.except {
			for _, o := range others {
				if _, under := beneath(o.Path, e); under || o.Path == e {
					return &isolation.UnsupportedError{
						What: fmt.Sprintf("the mask at %s in the landlock tier: it is beneath %s, which every command of the tier may read", e, o.Path),
						Fix:  "grant a path outside the system directories, or run the tool where namespaces can be made (the process tier)",
					}
				}
			}
		}
	}
	return nil
}

// commandPaths are the Landlock rules of the commands: the host's system
// paths, the grants and the scratch directory.
func commandPaths(grants []grant, scratch string) []sbinit.LandlockPath {
	paths := sbinit.HostSystemLandlock()
	for _, g := range grants {
		paths = append(paths, sbinit.LandlockPath{Path: g.source, Write: g.write, Exec: g.exec, Except: g.except})
	}
	return append(paths, sbinit.LandlockPath{Path: scratch, Write: true, Exec: true})
}
