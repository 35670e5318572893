package sbinit

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestMountOptsFlags(t *testing.T) {
	for _, tc := range []struct {
		opts mountOpts
		attr uint64
		ms   uintptr
	}{
		{mountOpts{}, unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, unix.MS_NOSUID | unix.MS_NODEV},
		{mountOpts{ro: true}, unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_RDONLY, unix.MS_NOSUID | unix.MS_NODEV | unix.MS_RDONLY},
		{mountOpts{noexec: true}, unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC, unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
		{mountOpts{ro: true, noexec: true}, unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC | unix.MOUNT_ATTR_RDONLY, unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_RDONLY},
		// A device node's mount keeps device access and never executes.
		{mountOpts{dev: true}, unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC, unix.MS_NOSUID | unix.MS_NOEXEC},
	} {
		attr, ms := tc.opts.flags()
		if attr != tc.attr || ms != tc.ms {
			t.Errorf("%+v: got attr %#x ms %#x, want %#x %#x", tc.opts, attr, ms, tc.attr, tc.ms)
		}
	}
}
