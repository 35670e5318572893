package isolation

import (
	"errors"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestCheckSkeleton(t *testing.T) {
	for _, m := range SkeletonMounts(1 << 20) {
		size, err := CheckSkeleton(m)
		if err != nil {
			t.Errorf("%s: %v", m.Destination, err)
		}
		if (m.Destination == "/tmp") != (size == 1<<20) {
			t.Errorf("%s: size %d", m.Destination, size)
		}
	}
	for name, m := range map[string]specs.Mount{
		"/tmp without size":   {Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}},
		"/tmp of two sizes":   {Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777", "size=1", "size=2"}},
		"/tmp with exec flag": {Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "mode=1777", "size=1"}},
		"/dev writable":       {Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "noexec", "mode=755", "size=65536k"}},
		"/proc a bind":        {Destination: "/proc", Type: "bind", Source: "/proc", Options: []string{"nosuid", "noexec", "nodev"}},
		"not the skeleton":    {Destination: "/x", Type: "tmpfs"},
	} {
		if _, err := CheckSkeleton(m); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}
}

func TestCheckMountOptions(t *testing.T) {
	for name, tc := range map[string]struct {
		m  specs.Mount
		ok bool
	}{
		"bind":              {specs.Mount{Type: "bind", Options: []string{"bind", "ro", "nosuid", "nodev"}}, true},
		"rbind, no type":    {specs.Mount{Options: []string{"rbind", "rw", "noexec"}}, true},
		"tmpfs":             {specs.Mount{Type: "tmpfs", Options: []string{"ro", "size=4k", "mode=755", "nr_inodes=8"}}, true},
		"bind of a type":    {specs.Mount{Type: "overlay", Options: []string{"bind"}}, false},
		"bind propagation":  {specs.Mount{Type: "bind", Options: []string{"bind", "rshared"}}, false},
		"tmpfs uid":         {specs.Mount{Type: "tmpfs", Options: []string{"uid=0"}}, false},
		"other types: tier": {specs.Mount{Type: "proc", Options: []string{"anything"}}, true},
	} {
		if err := CheckMountOptions(tc.m); (err == nil) != tc.ok {
			t.Errorf("%s: %v", name, err)
		}
	}
}
