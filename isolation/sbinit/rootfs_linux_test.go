package sbinit

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
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

func TestWriteEtcWritesGeneratedEtc(t *testing.T) {
	root := t.TempDir()
	if err := writeEtc(root, &Setup{UID: 1000, GID: 1000}); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(root, "etc"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	want := append([]string(nil), generatedEtc...)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("writeEtc wrote %q; generatedEtc (GivenPaths) lists %q", got, want)
	}
}
