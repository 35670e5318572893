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

// TestOpenGrantSourceUnderBase opens sources below the directory the root
// is built on through the descriptor of what that directory was (the root
// tmpfs covers it by then); here the directory is swapped for another.
func TestOpenGrantSourceUnderBase(t *testing.T) {
	tmp := t.TempDir()
	base := filepath.Join(tmp, "base")
	if err := os.MkdirAll(filepath.Join(base, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "work", "f"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("work", filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	under, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(under)
	// What now lies at base is not what the source names.
	if err := os.Rename(base, filepath.Join(tmp, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(base, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "work", "f"), []byte("cover"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(src bindSource) string {
		t.Helper()
		defer unix.Close(src.fd)
		b, err := os.ReadFile(src.procPath())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	src, err := openGrantSource(filepath.Join(base, "work", "f"), base, under)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(src); got != "host" {
		t.Errorf("source below base: read %q, want the host's %q", got, "host")
	}
	// Without the descriptor the path names what covers base: refused.
	if src, err = openGrantSource(filepath.Join(base, "work", "f"), base, -1); err == nil {
		t.Errorf("without the descriptor: opened a source below base (read %q)", read(src))
	}
	if src, err = openGrantSource(base, base, -1); err == nil {
		unix.Close(src.fd)
		t.Error("without the descriptor: opened base")
	}
	if src, err = openGrantSource(base, base, under); err != nil {
		t.Fatal(err)
	} else {
		unix.Close(src.fd)
	}
	if _, err := openGrantSource(filepath.Join(base, "link", "f"), base, under); err == nil {
		t.Error("a symlink below base was followed")
	}
	if _, err := openGrantSource(base+"x/f", base, under); err == nil {
		t.Error("a sibling of base that does not exist was opened (through the descriptor?)")
	}
}

func TestSameSkeleton(t *testing.T) {
	cfg := &Config{NetworkUp: true, BuildAs: &ID{UID: 0, GID: 0}, TmpfsBytes: 8 << 20, Setup: &Setup{
		Bounding:    1 << 5,
		MaskedPaths: []string{"/proc/kcore", "/sys/firmware"}, ReadonlyPaths: []string{"/proc/sys"},
		UID: 1000, GID: 1001, Hostname: "box",
	}}
	sk := cfg.Skeleton()
	want := Skeleton{MaskedPaths: []string{"/proc/kcore"}, ReadonlyPaths: []string{"/proc/sys"}, NetworkUp: true, Bounding: 1 << 5, BuildAs: &ID{},
		UID: 1000, GID: 1001, Hostname: "box", TmpfsBytes: 8 << 20}
	if !sameSkeleton(sk, want) {
		t.Fatalf("Skeleton() = %+v, want %+v", sk, want)
	}
	for name, edit := range map[string]func(*Skeleton){
		"base":     func(s *Skeleton) { s.RootBase = "/run" },
		"mask":     func(s *Skeleton) { s.MaskedPaths = nil },
		"readonly": func(s *Skeleton) { s.ReadonlyPaths = append(s.ReadonlyPaths, "/proc/bus") },
		"network":  func(s *Skeleton) { s.NetworkUp = false },
		"bounding": func(s *Skeleton) { s.Bounding = 0 },
		"identity": func(s *Skeleton) { s.BuildAs = &ID{UID: 1} },
		"no build": func(s *Skeleton) { s.BuildAs = nil },
		"uid":      func(s *Skeleton) { s.UID = 0 },
		"gid":      func(s *Skeleton) { s.GID = 1000 },
		"hostname": func(s *Skeleton) { s.Hostname = "" },
		"tmpfs":    func(s *Skeleton) { s.TmpfsBytes = 0 },
	} {
		other := want
		edit(&other)
		if sameSkeleton(sk, other) {
			t.Errorf("%s: a different skeleton compared the same", name)
		}
	}
}
