package process

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// TestInitAttrs checks the attributes a sandbox's init starts with, for
// each way it is started.
func TestInitAttrs(t *testing.T) {
	const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWIPC |
		unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP
	maps := &idMapping{uids: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1000, Size: 1}},
		gids: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1000, Size: 1}}}
	helper := &idMapping{helper: true}
	tests := []struct {
		name     string
		confined bool
		m        *idMapping
		euid     int
		flags    uintptr
		deathSig syscall.Signal
		noGroups bool // starts as root without supplementary groups
		mappings bool // the kernel writes the maps (no helper)
		ambient  bool
	}{
		{name: "outside namespaces", confined: false, euid: 1000, deathSig: syscall.SIGTERM},
		{name: "outside namespaces as root", confined: false, euid: 0, deathSig: syscall.SIGTERM},
		{name: "root without a user namespace", confined: true, euid: 0, flags: nsFlags, deathSig: syscall.SIGKILL, noGroups: true},
		{name: "a user namespace the kernel maps", confined: true, m: maps, euid: 1000, flags: nsFlags | unix.CLONE_NEWUSER, deathSig: syscall.SIGKILL, mappings: true, ambient: true},
		{name: "a user namespace newuidmap maps", confined: true, m: helper, euid: 1000, flags: nsFlags | unix.CLONE_NEWUSER, deathSig: syscall.SIGKILL, ambient: true},
		{name: "root with a user namespace", confined: true, m: maps, euid: 0, flags: nsFlags | unix.CLONE_NEWUSER, deathSig: syscall.SIGKILL, mappings: true, ambient: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sys := initAttrs(tc.confined, tc.m, tc.euid, 42)
			if !sys.Setsid || sys.Pdeathsig != tc.deathSig || sys.Cloneflags != tc.flags {
				t.Errorf("setsid %v, death signal %v, clone flags %#x; want true, %v, %#x", sys.Setsid, sys.Pdeathsig, sys.Cloneflags, tc.deathSig, tc.flags)
			}
			noGroups := sys.Credential != nil && sys.Credential.Uid == 0 && sys.Credential.Gid == 42 && len(sys.Credential.Groups) == 0 && sys.Credential.Groups != nil
			if noGroups != tc.noGroups || (sys.Credential != nil && !noGroups) {
				t.Errorf("credential %+v, want root without groups: %v", sys.Credential, tc.noGroups)
			}
			if mappings := sys.UidMappings != nil && sys.GidMappings != nil && !sys.GidMappingsEnableSetgroups; mappings != tc.mappings {
				t.Errorf("uid maps %v, gid maps %v; want maps: %v", sys.UidMappings, sys.GidMappings, tc.mappings)
			}
			if ambient := len(sys.AmbientCaps) > 0; ambient != tc.ambient {
				t.Errorf("ambient capabilities %v, want some: %v", sys.AmbientCaps, tc.ambient)
			}
		})
	}
}

// TestLaunchFailure checks which failures to start an init say that this
// host refuses user namespaces.
func TestLaunchFailure(t *testing.T) {
	tests := []struct {
		name        string
		err         error
		userns      bool
		unsupported bool
	}{
		{"EPERM with an unprivileged user namespace", fmt.Errorf("fork/exec: %w", unix.EPERM), true, true},
		{"EACCES with an unprivileged user namespace", unix.EACCES, true, true},
		{"EPERM, the cache and the memory file", fmt.Errorf("%w (and from the cache: %w)", unix.ENOENT, unix.EPERM), true, true},
		{"EPERM without one", unix.EPERM, false, false},
		{"another error", unix.ENOMEM, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := launchFailure("r1", tc.err, tc.userns)
			var ue *isolation.UnsupportedError
			if got := errors.As(err, &ue); got != tc.unsupported {
				t.Errorf("launchFailure = %v; unsupported %v, want %v", err, got, tc.unsupported)
			}
			if !tc.unsupported && !errors.Is(err, tc.err) {
				t.Errorf("launchFailure = %v, does not wrap %v", err, tc.err)
			}
		})
	}
}
