package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
	"github.com/sandboxed-dev/sandboxed/policy"
)

// Spec defaults.
const (
	// DefaultPath is the PATH every command starts with.
	DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// DefaultTmpfsBytes is the size of DefaultSpec's /tmp, the policy's
	// built-in limits.tmpfs.default; a run's plan sets the size its
	// decision holds (WithTmpfs).
	DefaultTmpfsBytes = policy.DefaultTmpfsBytes
	// DefaultNoFile is the open-files limit of every command.
	DefaultNoFile = 1024
)

// ErrSpec: a spec option got a value it cannot use.
var ErrSpec = errors.New("invalid sandbox spec option")

// SpecOpt changes a spec. Options are pure: they capture data only.
type SpecOpt func(*specs.Spec) error

// DockerDefaultCaps is Docker's default capability set, which the elevated
// privilege gets inside its user namespace (isolation.DockerDefaultCaps).
var DockerDefaultCaps = isolation.DockerDefaultCaps

// MaskedPaths are hidden in every sandbox (isolation.DockerMaskedPaths).
var MaskedPaths = isolation.DockerMaskedPaths

// ReadonlyPaths are read-only in every sandbox
// (isolation.DockerReadonlyPaths).
var ReadonlyPaths = isolation.DockerReadonlyPaths

// DefaultSpec is the closed default of a run: every namespace, no
// capabilities, no_new_privs, a read-only root, masked and read-only /proc
// paths, NOFILE 1024, the seccomp profile of the privilege, a size-capped
// /tmp and no network. priv is same-as-user, reduced or elevated; an
// unknown value gets the reduced defaults. Commands run as 65534:65534
// (root of a user namespace for elevated); for same-as-user the planner
// adds WithUser(invoking uid, gid). The rest comes from SpecOpts.
func DefaultSpec(runID string, priv privilege.Privilege) *specs.Spec {
	s := &specs.Spec{
		Version:  specs.Version,
		Root:     &specs.Root{Path: "rootfs", Readonly: true},
		Hostname: "sandbox",
		Process: &specs.Process{
			User:            specs.User{UID: privilege.NobodyID, GID: privilege.NobodyID},
			Args:            nil, // commands come through Sandbox.Exec
			Env:             []string{"PATH=" + DefaultPath},
			Cwd:             "/",
			NoNewPrivileges: true,
			Capabilities:    &specs.LinuxCapabilities{},
			Rlimits: []specs.POSIXRlimit{
				{Type: "RLIMIT_NOFILE", Hard: DefaultNoFile, Soft: DefaultNoFile},
				{Type: "RLIMIT_CORE", Hard: 0, Soft: 0},
			},
		},
		Mounts: isolation.SkeletonMounts(DefaultTmpfsBytes),
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace}, {Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace}, {Type: specs.MountNamespace}, {Type: specs.CgroupNamespace},
			},
			Resources:     &specs.LinuxResources{},
			CgroupsPath:   specconv.CgroupsPath(runID),
			MaskedPaths:   append([]string(nil), MaskedPaths...),
			ReadonlyPaths: append([]string(nil), ReadonlyPaths...),
			Seccomp:       SeccompProfile(priv),
		},
		Annotations: map[string]string{isolation.AnnotationRunID: runID},
	}
	// same-as-user starts as nobody too: the planner sets the invoking
	// user with WithUser, and forgetting to fails closed.
	if priv == privilege.Elevated {
		_ = WithElevated()(s)
	}
	return s
}

// NewSpec is DefaultSpec with opts applied in order.
func NewSpec(runID string, priv privilege.Privilege, opts ...SpecOpt) (*specs.Spec, error) {
	s := DefaultSpec(runID, priv)
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// WithMemory limits memory to bytes, swap included (swap = limit).
func WithMemory(bytes int64) SpecOpt {
	return func(s *specs.Spec) error {
		if bytes <= 0 {
			return fmt.Errorf("memory limit %d: %w", bytes, ErrSpec)
		}
		res := resources(s)
		swap := bytes
		res.Memory = &specs.LinuxMemory{Limit: &bytes, Swap: &swap}
		return nil
	}
}

// WithPids limits the number of processes and threads.
func WithPids(n int64) SpecOpt {
	return func(s *specs.Spec) error {
		if n <= 0 {
			return fmt.Errorf("pids limit %d: %w", n, ErrSpec)
		}
		resources(s).Pids = &specs.LinuxPids{Limit: &n}
		return nil
	}
}

// WithCPUs limits CPU time to cpus CPUs: a quota over isolation.CPUPeriod.
func WithCPUs(cpus float64) SpecOpt {
	return func(s *specs.Spec) error {
		if cpus <= 0 {
			return fmt.Errorf("cpu limit %v: %w", cpus, ErrSpec)
		}
		period := uint64(isolation.CPUPeriod)
		quota := isolation.CPUQuota(cpus)
		resources(s).CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
		return nil
	}
}

// WithTmpfs sets the size of /tmp.
func WithTmpfs(bytes int64) SpecOpt {
	return func(s *specs.Spec) error {
		if bytes <= 0 {
			return fmt.Errorf("tmpfs size %d: %w", bytes, ErrSpec)
		}
		for i := range s.Mounts {
			if s.Mounts[i].Destination != "/tmp" {
				continue
			}
			opts := s.Mounts[i].Options[:0:0]
			for _, o := range s.Mounts[i].Options {
				if !strings.HasPrefix(o, "size=") {
					opts = append(opts, o)
				}
			}
			s.Mounts[i].Options = append(opts, "size="+strconv.FormatInt(bytes, 10))
			return nil
		}
		return fmt.Errorf("tmpfs size: spec has no /tmp: %w", ErrSpec)
	}
}

// WithReadBind makes host (already symlink-resolved) visible read-only at
// target.
func WithReadBind(host, target string) SpecOpt { return bind(host, target, "ro") }

// WithWriteBind makes host (already symlink-resolved) visible read-write
// at target.
func WithWriteBind(host, target string) SpecOpt { return bind(host, target, "rw") }

func bind(host, target, mode string) SpecOpt {
	return func(s *specs.Spec) error {
		for _, p := range []string{host, target} {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p {
				return fmt.Errorf("bind %s -> %s: %q is not an absolute, clean path: %w", host, target, p, ErrSpec)
			}
		}
		if target == "/" {
			return fmt.Errorf("bind %s over the root: %w", host, ErrSpec)
		}
		// A later grant for the same target replaces the earlier one.
		for i, m := range s.Mounts {
			if m.Destination == target && m.Type == "bind" {
				s.Mounts = append(s.Mounts[:i:i], s.Mounts[i+1:]...)
				break
			}
		}
		s.Mounts = append(s.Mounts, specs.Mount{
			Destination: target, Type: "bind", Source: host,
			Options: []string{"bind", mode, "nosuid", "nodev"},
		})
		return nil
	}
}

// WithUser sets the uid and gid commands run as (no supplementary groups).
func WithUser(uid, gid uint32) SpecOpt {
	return func(s *specs.Spec) error {
		s.Process.User = specs.User{UID: uid, GID: gid}
		return nil
	}
}

// WithEnv sets the base environment of every command (replacing it).
func WithEnv(env []string) SpecOpt {
	return func(s *specs.Spec) error {
		for _, kv := range env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return fmt.Errorf("environment entry %q: not NAME=VALUE: %w", kv, ErrSpec)
			}
		}
		s.Process.Env = append([]string(nil), env...)
		return nil
	}
}

// WithCwd sets the working directory inside the sandbox.
func WithCwd(dir string) SpecOpt {
	return func(s *specs.Spec) error {
		if !filepath.IsAbs(dir) {
			return fmt.Errorf("working directory %q: not absolute: %w", dir, ErrSpec)
		}
		s.Process.Cwd = filepath.Clean(dir)
		return nil
	}
}

// WithElevated makes commands root inside a user namespace with Docker's
// default capabilities; uid 0 maps to an unprivileged host id (the
// backend chooses it), never to host root.
func WithElevated() SpecOpt {
	return func(s *specs.Spec) error {
		s.Process.User = specs.User{UID: 0, GID: 0}
		caps := append([]string(nil), DockerDefaultCaps...)
		s.Process.Capabilities = &specs.LinuxCapabilities{
			Bounding:  caps,
			Effective: append([]string(nil), caps...),
			Permitted: append([]string(nil), caps...),
		}
		for _, ns := range s.Linux.Namespaces {
			if ns.Type == specs.UserNamespace {
				return nil
			}
		}
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace})
		return nil
	}
}

// WithSeccomp replaces the seccomp profile.
func WithSeccomp(p *specs.LinuxSeccomp) SpecOpt {
	return func(s *specs.Spec) error {
		if p == nil {
			return fmt.Errorf("seccomp profile: nil (a sandbox always has one): %w", ErrSpec)
		}
		s.Linux.Seccomp = p
		return nil
	}
}

// WithHostname sets the sandbox's hostname.
func WithHostname(name string) SpecOpt {
	return func(s *specs.Spec) error {
		if name == "" || len(name) > 64 || strings.ContainsAny(name, "/ \x00") {
			return fmt.Errorf("hostname %q: %w", name, ErrSpec)
		}
		s.Hostname = name
		return nil
	}
}

// WithAnnotation records key=value on the spec (e.g. the tool name).
func WithAnnotation(key, value string) SpecOpt {
	return func(s *specs.Spec) error {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[key] = value
		return nil
	}
}

func resources(s *specs.Spec) *specs.LinuxResources {
	if s.Linux.Resources == nil {
		s.Linux.Resources = &specs.LinuxResources{}
	}
	return s.Linux.Resources
}

// WithoutCgroup leaves the run's cgroup out of the spec
// (Linux.CgroupsPath): a run started outside namespaces where this host
// has no cgroup sandboxed may use, whose limits rlimits approximate.
func WithoutCgroup() SpecOpt {
	return func(s *specs.Spec) error {
		s.Linux.CgroupsPath = ""
		return nil
	}
}

// WithTier shapes the spec to what tier t's sandbox is, so that the spec
// says what runs (each tier's converter refuses a field it does not
// honour). The process and container tiers and a pod keep the default's
// shape; the container tier and a pod (kubernetes) have a cgroup their
// engine names, and a pod never runs as uid 0 (a same-as-user run of
// root's runs as nobody). The landlock tier has no namespaces, no root
// of its own (the host's, read-only to the tool by Landlock), no
// skeleton mounts, no masked or read-only /proc paths and no host name;
// the size of its /tmp becomes RLIMIT_FSIZE (its scratch directory is on
// the host). The none tier is a host process of the invoking user:
// nothing but its environment, working directory, identity and limits.
func WithTier(t isolation.Tier, kubernetes bool) SpecOpt {
	return func(s *specs.Spec) error {
		switch {
		case kubernetes:
			s.Linux.CgroupsPath = ""
			if u := &s.Process.User; u.UID == 0 {
				u.UID, u.GID = privilege.NobodyID, privilege.NobodyID
			}
		case t == isolation.TierContainer:
			s.Linux.CgroupsPath = ""
		case t == isolation.TierLandlock:
			tmp, err := tmpfsSize(s)
			if err != nil {
				return err
			}
			s.Root = &specs.Root{Path: "/", Readonly: true}
			s.Hostname = ""
			s.Linux.Namespaces, s.Linux.MaskedPaths, s.Linux.ReadonlyPaths = nil, nil, nil
			s.Mounts = slices.DeleteFunc(s.Mounts, func(m specs.Mount) bool { return isolation.IsSkeleton(m.Destination) })
			s.Process.Rlimits = append(s.Process.Rlimits, specs.POSIXRlimit{Type: "RLIMIT_FSIZE", Soft: uint64(tmp), Hard: uint64(tmp)})
		case t == isolation.TierNone:
			s.Root = &specs.Root{Path: "/"}
			s.Hostname = ""
			s.Mounts = nil
			s.Process.Capabilities, s.Process.Rlimits, s.Process.NoNewPrivileges = nil, nil, false
			s.Linux.Namespaces, s.Linux.MaskedPaths, s.Linux.ReadonlyPaths, s.Linux.Seccomp = nil, nil, nil, nil
		}
		return nil
	}
}

// tmpfsSize is the size of the spec's /tmp.
func tmpfsSize(s *specs.Spec) (int64, error) {
	for _, m := range s.Mounts {
		if m.Destination == "/tmp" {
			return isolation.CheckSkeleton(m)
		}
	}
	return 0, fmt.Errorf("tmpfs size: spec has no /tmp: %w", ErrSpec)
}
