package isolation

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// The skeleton of a sandbox's root: the mounts that every tier with a root
// of its own (process, container, a pod) builds itself, whatever the run —
// /proc, a read-only /dev with its pts and shm, and a private /tmp whose
// size the run decides. The planner writes them into the spec from here;
// each converter holds the spec's to these (CheckSkeleton) and refuses a
// difference, so what the spec says of them is what the sandbox has.
var skeleton = []specs.Mount{
	{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
	{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"ro", "nosuid", "noexec", "mode=755", "size=65536k"}},
	{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
	{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
	{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}},
}

// SkeletonMounts are the skeleton's mounts with a /tmp of tmpfsBytes.
func SkeletonMounts(tmpfsBytes int64) []specs.Mount {
	out := make([]specs.Mount, len(skeleton))
	for i, m := range skeleton {
		m.Options = slices.Clone(m.Options)
		if m.Destination == "/tmp" {
			m.Options = append(m.Options, "size="+strconv.FormatInt(tmpfsBytes, 10))
		}
		out[i] = m
	}
	return out
}

// IsSkeleton reports whether dst is a mount point of the skeleton.
func IsSkeleton(dst string) bool {
	return slices.ContainsFunc(skeleton, func(m specs.Mount) bool { return m.Destination == dst })
}

// CheckSkeleton holds m, a mount of the skeleton (IsSkeleton), to what
// every tier builds there, and returns the size of /tmp (0 for the
// others). A mount that differs is refused: the tiers build these
// themselves and would not honour it.
func CheckSkeleton(m specs.Mount) (int64, error) {
	i := slices.IndexFunc(skeleton, func(s specs.Mount) bool { return s.Destination == m.Destination })
	if i < 0 {
		return 0, fmt.Errorf("check mount %s: not a mount of the skeleton: %w", m.Destination, ErrUnsupported)
	}
	want := skeleton[i]
	opts := m.Options
	var size int64
	if m.Destination == "/tmp" {
		opts = nil
		for _, o := range m.Options {
			v, ok := strings.CutPrefix(o, "size=")
			if !ok {
				opts = append(opts, o)
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 || size != 0 {
				return 0, &UnsupportedError{What: fmt.Sprintf("the /tmp size %q", o), Fix: "give /tmp one size, in bytes"}
			}
			size = n
		}
		if size == 0 {
			return 0, &UnsupportedError{What: "a /tmp without a size", Fix: "give /tmp a size (size=BYTES)"}
		}
	}
	if m.Type != want.Type || m.Source != want.Source || !slices.Equal(opts, want.Options) || len(m.UIDMappings)+len(m.GIDMappings) > 0 {
		return 0, &UnsupportedError{
			What: fmt.Sprintf("the spec's mount at %s (%s %s %v): every sandbox builds %s itself, as %s %s %v", m.Destination, m.Type, m.Source, m.Options, want.Destination, want.Type, want.Source, want.Options),
			Fix:  "leave the skeleton's mounts as the planner writes them",
		}
	}
	return size, nil
}

// Mount options the tiers apply: a bind's (bind, rbind, ro, rw and the
// flags every mount of a grant gets), a tmpfs's (those flags, its size,
// mode and inode count).
var (
	bindOptions  = []string{"bind", "rbind", "ro", "rw", "nosuid", "nodev", "noexec"}
	tmpfsOptions = []string{"ro", "rw", "nosuid", "nodev", "noexec"}
	tmpfsData    = []string{"size=", "mode=", "nr_inodes="}
)

// CheckMountOptions refuses a bind or tmpfs mount of an option the tiers
// do not apply (a mount of another type is each tier's to refuse). The
// flags nosuid and nodev are applied to every grant whether the spec
// names them or not.
func CheckMountOptions(m specs.Mount) error {
	bind := m.Type == "bind" || slices.Contains(m.Options, "bind") || slices.Contains(m.Options, "rbind")
	if bind && m.Type != "bind" && m.Type != "" && m.Type != "none" {
		return &UnsupportedError{What: fmt.Sprintf("the mount at %s: a bind of type %q", m.Destination, m.Type), Fix: "plan the run with sandbox.Plan"}
	}
	for _, o := range m.Options {
		ok := false
		switch {
		case bind:
			ok = slices.Contains(bindOptions, o)
		case m.Type == "tmpfs":
			ok = slices.Contains(tmpfsOptions, o) || slices.ContainsFunc(tmpfsData, func(p string) bool { return strings.HasPrefix(o, p) })
		default:
			ok = true
		}
		if !ok {
			return &UnsupportedError{What: fmt.Sprintf("the option %q of the mount at %s", o, m.Destination), Fix: "plan the run with sandbox.Plan"}
		}
	}
	return nil
}
