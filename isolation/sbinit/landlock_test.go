package sbinit

import (
	"reflect"
	"testing"
)

func TestNewLandlock(t *testing.T) {
	skeleton := []LandlockPath{{Path: "/"}}
	for _, d := range systemDirs {
		skeleton = append(skeleton, LandlockPath{Path: d, Exec: true, Optional: true})
	}
	skeleton = append(skeleton,
		LandlockPath{Path: "/tmp", Write: true, Exec: true},
		LandlockPath{Path: "/dev/shm", Write: true},
		LandlockPath{Path: "/dev/pts", Write: true, FilesOnly: true, Dev: true},
		LandlockPath{Path: "/proc", Write: true, FilesOnly: true},
	)
	for _, n := range devNodes {
		skeleton = append(skeleton, LandlockPath{Path: "/dev/" + n, Write: true, FilesOnly: true, Dev: true})
	}
	with := func(extra ...LandlockPath) []LandlockPath {
		return append(append([]LandlockPath(nil), skeleton...), extra...)
	}
	for _, tc := range []struct {
		name   string
		cfg    Config
		minABI int
		want   Landlock
	}{{
		name: "no grants, no network: the skeleton only, no TCP port",
		cfg:  Config{Setup: &Setup{}},
		want: Landlock{Paths: skeleton},
	}, {
		name:   "required",
		cfg:    Config{Setup: &Setup{}},
		minABI: LandlockFullABI,
		want:   Landlock{Paths: skeleton, MinABI: LandlockFullABI},
	}, {
		name: "grants: read-only, writable, noexec; tmpfs writable and masks",
		cfg: Config{Setup: &Setup{Mounts: []Mount{
			{Source: "/h/in", Destination: "/work/in", ReadOnly: true},
			{Source: "/h/out", Destination: "/work/out"},
			{Source: "/h/data", Destination: "/data", ReadOnly: true, NoExec: true},
			{Destination: "/work", Data: "size=1m"},
			{Destination: "/work/out/.git", ReadOnly: true, NoExec: true},
			{Destination: "/opt/tools", ReadOnly: true},
		}}},
		want: Landlock{Paths: with(
			LandlockPath{Path: "/work/in", Exec: true, Unix: true},
			LandlockPath{Path: "/work/out", Write: true, Exec: true, Unix: true},
			LandlockPath{Path: "/data", Unix: true},
			LandlockPath{Path: "/work", Write: true, Exec: true},
			LandlockPath{Path: "/opt/tools", Exec: true},
		)},
	}, {
		name: "egress: the proxy socket's bind and the relay's ports",
		cfg: Config{
			Setup:  &Setup{Mounts: []Mount{{Source: "/run/x/egress.sock", Destination: "/.sandboxed/egress.sock", NoExec: true}}},
			Egress: &EgressRelay{Port: 3128, Socket: "/.sandboxed/egress.sock", LocalhostPorts: []int{5432, 8080}},
		},
		want: Landlock{
			Paths:      with(LandlockPath{Path: "/.sandboxed/egress.sock", Write: true, Unix: true}),
			ConnectTCP: []int{3128, 5432, 8080},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := NewLandlock(&tc.cfg, tc.minABI)
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("NewLandlock:\n got %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

func TestCoversAny(t *testing.T) {
	paths := skeletonLandlock()
	for _, tc := range []struct {
		name  string
		setup *Setup
		want  bool
	}{
		{"no setup", nil, false},
		{"grants beside the skeleton", &Setup{Mounts: []Mount{
			{Source: "/h/in", Destination: "/work/in"}, {Destination: "/work", Data: "size=1m"},
		}}, false},
		{"below a skeleton path", &Setup{Mounts: []Mount{{Source: "/h/x", Destination: "/usr/local/x"}}}, false},
		{"masks beside and below", &Setup{MaskedPaths: []string{"/proc/kcore", "/sys/firmware"}, ReadonlyPaths: []string{"/proc/sys"}}, false},
		{"a grant on a system directory", &Setup{Mounts: []Mount{{Source: "/h/usr", Destination: "/usr"}}}, true},
		{"a tmpfs on a system directory", &Setup{Mounts: []Mount{{Destination: "/lib/", Data: "size=1m"}}}, true},
		{"a mask on a device node", &Setup{MaskedPaths: []string{"/dev/zero"}}, true},
		{"a read-only path above one", &Setup{ReadonlyPaths: []string{"/dev"}}, true},
		{"the root", &Setup{MaskedPaths: []string{"/"}}, true},
	} {
		if got := coversAny(tc.setup, paths); got != tc.want {
			t.Errorf("%s: coversAny = %t, want %t", tc.name, got, tc.want)
		}
	}
}
