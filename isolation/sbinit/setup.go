package sbinit

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// Setup is what a process-tier init applies, computed by the host from the
// plan's spec with NewSetup. The init never parses the OCI spec: a small
// flat message decodes in a fraction of the time in a fresh process, and
// every name (capability, rlimit, syscall) was checked before the init
// started.
type Setup struct {
	Hostname string   `json:"hostname,omitempty"`
	Cwd      string   `json:"cwd,omitempty"`
	UID      uint32   `json:"uid"`
	GID      uint32   `json:"gid"`
	Groups   []uint32 `json:"groups,omitempty"`
	// Capability sets as bit masks (bit n is capability n).
	Bounding    uint64   `json:"bounding"`
	Effective   uint64   `json:"effective"`
	Permitted   uint64   `json:"permitted"`
	Inheritable uint64   `json:"inheritable"`
	NoNewPrivs  bool     `json:"no_new_privs"`
	Rlimits     []Rlimit `json:"rlimits,omitempty"`
	// Mounts are the spec's mounts other than the skeleton the init
	// builds itself (/proc, /dev, /tmp, ...): grants and extra tmpfs.
	Mounts        []Mount  `json:"mounts,omitempty"`
	MaskedPaths   []string `json:"masked_paths,omitempty"`
	ReadonlyPaths []string `json:"readonly_paths,omitempty"`
	// Seccomp is the compiled filter, 8 bytes per instruction (code,
	// jt, jf, k; little-endian); empty means no filter.
	Seccomp []byte `json:"seccomp,omitempty"`
}

// Rlimit is one resource limit.
type Rlimit struct {
	Resource int    `json:"resource"`
	Soft     uint64 `json:"soft"`
	Hard     uint64 `json:"hard"`
}

// Mount is a bind (Source set) or a tmpfs (Source empty) in the sandbox.
type Mount struct {
	Source      string `json:"source,omitempty"`
	Destination string `json:"destination"`
	ReadOnly    bool   `json:"read_only,omitempty"`
	NoExec      bool   `json:"noexec,omitempty"`
	// Data is the tmpfs option string (size=, mode=, nr_inodes=).
	Data string `json:"data,omitempty"`
	// Tree, for a bind, is n when the host prepared the mount itself (an
	// idmapped, detached copy of Source with its flags set) and sent it as
	// the n-th descriptor of the config frame; 0 when the init binds
	// Source.
	Tree int `json:"tree,omitempty"`
	// Scratch, for a bind, keeps Source read-only underneath and lays a
	// writable layer on top (overlayfs, its upper layer on a tmpfs the
	// size of /tmp): the sandbox may write there, and every write is
	// thrown away with it. ReadOnly is false: the mount is writable.
	Scratch bool `json:"scratch,omitempty"`
}

// capNames maps capability names to numbers (linux/capability.h).
var capNames = map[string]uint{
	"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_FOWNER": 3,
	"CAP_FSETID": 4, "CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8,
	"CAP_LINUX_IMMUTABLE": 9, "CAP_NET_BIND_SERVICE": 10, "CAP_NET_BROADCAST": 11,
	"CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13, "CAP_IPC_LOCK": 14, "CAP_IPC_OWNER": 15,
	"CAP_SYS_MODULE": 16, "CAP_SYS_RAWIO": 17, "CAP_SYS_CHROOT": 18, "CAP_SYS_PTRACE": 19,
	"CAP_SYS_PACCT": 20, "CAP_SYS_ADMIN": 21, "CAP_SYS_BOOT": 22, "CAP_SYS_NICE": 23,
	"CAP_SYS_RESOURCE": 24, "CAP_SYS_TIME": 25, "CAP_SYS_TTY_CONFIG": 26, "CAP_MKNOD": 27,
	"CAP_LEASE": 28, "CAP_AUDIT_WRITE": 29, "CAP_AUDIT_CONTROL": 30, "CAP_SETFCAP": 31,
	"CAP_MAC_OVERRIDE": 32, "CAP_MAC_ADMIN": 33, "CAP_SYSLOG": 34, "CAP_WAKE_ALARM": 35,
	"CAP_BLOCK_SUSPEND": 36, "CAP_AUDIT_READ": 37, "CAP_PERFMON": 38, "CAP_BPF": 39,
	"CAP_CHECKPOINT_RESTORE": 40,
}

// rlimitNames maps OCI rlimit names to Linux resource numbers (the generic
// numbering used by x86, arm and most architectures).
var rlimitNames = map[string]int{
	"RLIMIT_CPU": 0, "RLIMIT_FSIZE": 1, "RLIMIT_DATA": 2, "RLIMIT_STACK": 3, "RLIMIT_CORE": 4,
	"RLIMIT_RSS": 5, "RLIMIT_NPROC": 6, "RLIMIT_NOFILE": 7, "RLIMIT_MEMLOCK": 8, "RLIMIT_AS": 9,
	"RLIMIT_LOCKS": 10, "RLIMIT_SIGPENDING": 11, "RLIMIT_MSGQUEUE": 12, "RLIMIT_NICE": 13,
	"RLIMIT_RTPRIO": 14, "RLIMIT_RTTIME": 15,
}

// skeleton destinations are built by the init itself; spec mounts for them
// only carry options.
var skeleton = map[string]bool{
	"/proc": true, "/dev": true, "/dev/pts": true, "/dev/shm": true, "/dev/mqueue": true,
	"/sys": true, "/sys/fs/cgroup": true, "/tmp": true,
}

// CapMask is the bit mask of the capabilities names (bit n is capability
// n), as Setup holds them; an unknown name is an error.
func CapMask(names []string) (uint64, error) { return capMask(names) }

func capMask(names []string) (uint64, error) {
	var m uint64
	for _, n := range names {
		c, ok := capNames[strings.ToUpper(n)]
		if !ok {
			return 0, fmt.Errorf("unknown capability %q", n)
		}
		m |= 1 << c
	}
	return m, nil
}

// Compiler turns a seccomp profile into a BPF program (seccomp.Compile).
// It is passed in rather than imported: the init links this package, and
// the compiler's tables would cost every sandbox start their
// initialisation.
type Compiler func(*specs.LinuxSeccomp) ([]bpf.RawInstruction, error)

// NewSetup checks spec and turns it into what the init applies. A spec
// with a seccomp profile needs compile; without one it is refused, never
// run unfiltered.
func NewSetup(spec *specs.Spec, compile Compiler) (*Setup, error) {
	if spec == nil || spec.Process == nil {
		return nil, fmt.Errorf("prepare sandbox: spec has no process: %w", ErrSetup)
	}
	p := spec.Process
	s := &Setup{
		Hostname:   spec.Hostname,
		Cwd:        p.Cwd,
		UID:        p.User.UID,
		GID:        p.User.GID,
		Groups:     append([]uint32(nil), p.User.AdditionalGids...),
		NoNewPrivs: p.NoNewPrivileges,
	}
	if c := p.Capabilities; c != nil {
		var err error
		for _, set := range []struct {
			dst   *uint64
			names []string
		}{{&s.Bounding, c.Bounding}, {&s.Effective, c.Effective}, {&s.Permitted, c.Permitted}, {&s.Inheritable, c.Inheritable}} {
			if *set.dst, err = capMask(set.names); err != nil {
				return nil, fmt.Errorf("prepare sandbox: %v: %w", err, ErrSetup)
			}
		}
		if len(c.Ambient) > 0 {
			return nil, fmt.Errorf("prepare sandbox: ambient capabilities are not supported: %w", ErrSetup)
		}
	}
	for _, rl := range p.Rlimits {
		res, ok := rlimitNames[rl.Type]
		if !ok {
			return nil, fmt.Errorf("prepare sandbox: unknown rlimit %q: %w", rl.Type, ErrSetup)
		}
		s.Rlimits = append(s.Rlimits, Rlimit{Resource: res, Soft: rl.Soft, Hard: rl.Hard})
	}
	for _, m := range spec.Mounts {
		dst := filepath.Clean(m.Destination)
		if !filepath.IsAbs(dst) || dst == "/" {
			return nil, fmt.Errorf("prepare sandbox: mount destination %q: not an absolute path below /: %w", m.Destination, ErrSetup)
		}
		if BelowProc(dst) {
			// The masks below /proc are applied before the mounts (a
			// warm init applies them ahead of any run): nothing may
			// land under them.
			return nil, fmt.Errorf("prepare sandbox: mount destination %s: nothing may be mounted below /proc: %w", dst, ErrSetup)
		}
		if skeleton[dst] {
			if m.Type == "bind" || hasOpt(m.Options, "bind") || hasOpt(m.Options, "rbind") {
				// A grant over a path the init builds itself would be
				// dropped: refuse it rather than run without it.
				return nil, fmt.Errorf("prepare sandbox: a grant cannot replace %s, which every sandbox builds itself: %w", dst, ErrSetup)
			}
			// The init builds these as the skeleton says, /tmp of the
			// spec's size (Config.TmpfsBytes): a spec that says
			// otherwise is refused, not run as if it did not.
			if !isolation.IsSkeleton(dst) {
				return nil, fmt.Errorf("prepare sandbox: a mount at %s, which the init builds itself: %w", dst, ErrSetup)
			}
			if _, err := isolation.CheckSkeleton(m); err != nil {
				return nil, fmt.Errorf("prepare sandbox: %w", err)
			}
			continue
		}
		if err := isolation.CheckMountOptions(m); err != nil {
			return nil, fmt.Errorf("prepare sandbox: %w", err)
		}
		switch {
		case m.Type == "bind" || hasOpt(m.Options, "bind") || hasOpt(m.Options, "rbind"):
			if !filepath.IsAbs(m.Source) || filepath.Clean(m.Source) != m.Source {
				return nil, fmt.Errorf("prepare sandbox: bind source %q: not an absolute, clean path: %w", m.Source, ErrSetup)
			}
			s.Mounts = append(s.Mounts, Mount{Source: m.Source, Destination: dst, ReadOnly: hasOpt(m.Options, "ro"), NoExec: hasOpt(m.Options, "noexec")})
		case m.Type == "tmpfs":
			var data []string
			for _, o := range m.Options {
				if strings.HasPrefix(o, "size=") || strings.HasPrefix(o, "mode=") || strings.HasPrefix(o, "nr_inodes=") {
					data = append(data, o)
				}
			}
			s.Mounts = append(s.Mounts, Mount{Destination: dst, ReadOnly: hasOpt(m.Options, "ro"), NoExec: hasOpt(m.Options, "noexec"), Data: strings.Join(data, ",")})
		default:
			return nil, fmt.Errorf("prepare sandbox: mount %s: type %q is not supported by the process tier: %w", dst, m.Type, ErrSetup)
		}
	}
	if l := spec.Linux; l != nil {
		s.MaskedPaths = append([]string(nil), l.MaskedPaths...)
		s.ReadonlyPaths = append([]string(nil), l.ReadonlyPaths...)
		if l.Seccomp != nil {
			if compile == nil {
				return nil, fmt.Errorf("prepare sandbox: the spec has a seccomp profile but no compiler was given: %w", ErrSetup)
			}
			prog, err := compile(l.Seccomp)
			if err != nil {
				return nil, fmt.Errorf("prepare sandbox: %w", err)
			}
			s.Seccomp = encodeBPF(prog)
			s.NoNewPrivs = true // a filter without CAP_SYS_ADMIN needs it
		}
	}
	return s, nil
}

func hasOpt(opts []string, o string) bool {
	for _, x := range opts {
		if x == o {
			return true
		}
	}
	return false
}

// EncodeProgram encodes prog as Setup.Seccomp and Config.Watch carry it.
func EncodeProgram(prog []bpf.RawInstruction) []byte { return encodeBPF(prog) }

func encodeBPF(prog []bpf.RawInstruction) []byte {
	b := make([]byte, 8*len(prog))
	for i, in := range prog {
		binary.LittleEndian.PutUint16(b[8*i:], in.Op)
		b[8*i+2], b[8*i+3] = in.Jt, in.Jf
		binary.LittleEndian.PutUint32(b[8*i+4:], in.K)
	}
	return b
}

func decodeBPF(b []byte) ([]bpf.RawInstruction, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("seccomp program of %d bytes: %w", len(b), ErrProtocol)
	}
	prog := make([]bpf.RawInstruction, len(b)/8)
	for i := range prog {
		prog[i] = bpf.RawInstruction{
			Op: binary.LittleEndian.Uint16(b[8*i:]),
			Jt: b[8*i+2], Jf: b[8*i+3],
			K: binary.LittleEndian.Uint32(b[8*i+4:]),
		}
	}
	return prog, nil
}
