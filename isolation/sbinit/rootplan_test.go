package sbinit

import (
	"os"
	"reflect"
	"testing"
)

func TestPlanRoot(t *testing.T) {
	host := []hostEntry{
		{path: "/usr", mode: os.ModeDir | 0o755, size: 4096},
		{path: "/bin", mode: os.ModeSymlink | 0o777, link: "usr/bin"},
		{path: "/lib32", absent: true},
		{path: "/etc/ld.so.cache", mode: 0o644, size: 30 << 10},
		{path: "/etc/big", mode: 0o644, size: maxCopy + 1},
		{path: "/etc/ssl/certs", mode: os.ModeDir | 0o755},
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		setup Setup
		want  rootPlan
	}{{
		name: "defaults",
		want: rootPlan{
			base:       "/tmp",
			links:      []rootLink{{"/bin", "usr/bin"}},
			copies:     []string{"/etc/ld.so.cache"},
			binds:      []string{"/usr", "/etc/big", "/etc/ssl/certs"},
			nodes:      devNodes,
			tmpfsBytes: defaultTmpfsBytes,
		},
	}, {
		name: "base, tmpfs size, masks: those below /proc with the skeleton",
		cfg:  Config{RootBase: "/run/x", TmpfsBytes: 1 << 20},
		setup: Setup{
			MaskedPaths:   []string{"/proc/kcore", "/sys/firmware", "/proc/keys", "/proc"},
			ReadonlyPaths: []string{"/proc/sys", "/procfs/x"},
		},
		want: rootPlan{
			base:         "/run/x",
			links:        []rootLink{{"/bin", "usr/bin"}},
			copies:       []string{"/etc/ld.so.cache"},
			binds:        []string{"/usr", "/etc/big", "/etc/ssl/certs"},
			nodes:        devNodes,
			tmpfsBytes:   1 << 20,
			procMasked:   []string{"/proc/kcore", "/proc/keys"},
			procReadonly: []string{"/proc/sys"},
			masked:       []string{"/sys/firmware", "/proc"},
			readonly:     []string{"/procfs/x"},
		},
	}, {
		name: "grants and tmpfs: shallow first, tmpfs first at one depth, nested ones inside a grant",
		setup: Setup{Mounts: []Mount{
			{Source: "/h/work", Destination: "/work"},
			{Source: "/h/in", Destination: "/work/in", ReadOnly: true},
			{Destination: "/work/.git", ReadOnly: true, NoExec: true, Data: "size=0"},
			{Destination: "/cache", Data: "size=4096,mode=0700"},
			{Source: "/h/work-other", Destination: "/workx"},
		}},
		want: rootPlan{
			base:       "/tmp",
			links:      []rootLink{{"/bin", "usr/bin"}},
			copies:     []string{"/etc/ld.so.cache"},
			binds:      []string{"/usr", "/etc/big", "/etc/ssl/certs"},
			nodes:      devNodes,
			tmpfsBytes: defaultTmpfsBytes,
			mounts: []rootMount{
				{dst: "/cache", data: "size=4096,mode=0700"},
				{dst: "/work", source: "/h/work"},
				{dst: "/workx", source: "/h/work-other"},
				{dst: "/work/.git", data: "size=0", opts: mountOpts{ro: true, noexec: true}, inGrant: true},
				{dst: "/work/in", source: "/h/in", opts: mountOpts{ro: true}, inGrant: true},
			},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := planRoot(&tc.cfg, &tc.setup, host)
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("planRoot:\n got %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

func TestSystemPaths(t *testing.T) {
	p := systemPaths()
	if len(p) != len(systemDirs)+len(etcEntries) || p[0] != "/usr" || p[len(systemDirs)] != "/etc/ld.so.cache" {
		t.Errorf("systemPaths: %v", p)
	}
}
