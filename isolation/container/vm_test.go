package container

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/system"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/hostsetup"
	"github.com/sandboxed-dev/sandboxed/isolation"
)

// TestDetectVM holds the engines' bind-path rules: which engine runs its
// containers in a VM, and which of this host's paths that VM sees at the
// same path.
func TestDetectVM(t *testing.T) {
	const home = "/Users/ann"
	tests := []struct {
		name       string
		info       system.Info
		host, goos string
		engine     string // "" for an engine on this kernel
		visible    []string
		hidden     []string
	}{
		{name: "Docker Desktop on macOS", info: system.Info{OperatingSystem: "Docker Desktop", Name: "docker-desktop"},
			host: "unix:///Users/ann/.docker/run/docker.sock", goos: "darwin", engine: "Docker Desktop",
			visible: []string{"/Users/ann/src", "/Volumes/ext/data", "/private/tmp/x", "/private/var/folders/ab/T/run", "/tmp/x", "/dev/null"},
			hidden:  []string{"/opt/homebrew/etc", "/usr/local/share", "/etc/hosts", "/Library/Keychains", "/Users2/x", "/privatex"}},
		{name: "Docker Desktop found by its socket", info: system.Info{OperatingSystem: "Ubuntu"},
			host: "unix:///Users/ann/.docker/run/docker.sock", goos: "darwin", engine: "Docker Desktop",
			visible: []string{"/Users/ann"}, hidden: []string{"/opt/x"}},
		{name: "Docker Desktop on Linux shares the home directory", info: system.Info{OperatingSystem: "Docker Desktop"},
			host: "unix:///home/ann/.docker/desktop/docker.sock", goos: "linux", engine: "Docker Desktop",
			visible: []string{"/Users/ann/x"}, hidden: []string{"/srv/data", "/tmp/x", "/Users/annex"}},
		{name: "colima shares the home directory and /tmp/colima", info: system.Info{OperatingSystem: "Ubuntu 24.04 LTS", Name: "colima"},
			host: "unix:///Users/ann/.colima/default/docker.sock", goos: "darwin", engine: "colima",
			visible: []string{"/Users/ann/src/app", "/tmp/colima/x"},
			hidden:  []string{"/Users/bob/src", "/Volumes/ext", "/private/tmp/x", "/tmp/other"}},
		{name: "a colima profile", info: system.Info{Name: "colima-work"}, host: "unix:///Users/ann/.colima/work/docker.sock", goos: "darwin", engine: "colima",
			visible: []string{"/Users/ann/x"}, hidden: []string{"/opt/x"}},
		{name: "OrbStack sees the whole Mac", info: system.Info{OperatingSystem: "OrbStack", Name: "orbstack"},
			host: "unix:///Users/ann/.orbstack/run/docker.sock", goos: "darwin", engine: "OrbStack",
			visible: []string{"/Users/ann/x", "/opt/homebrew/etc", "/Volumes/ext", "/private/etc/hosts"}},
		{name: "an unknown engine on macOS shares nothing known", info: system.Info{OperatingSystem: "Alpine Linux v3.20"},
			host: "unix:///Users/ann/.rd/docker.sock", goos: "darwin", engine: "the Docker engine's VM (Alpine Linux v3.20)",
			visible: []string{"/dev/null"}, hidden: []string{"/Users/ann/x", "/tmp/x"}},
		{name: "the system's engine on Linux", info: system.Info{OperatingSystem: "Debian GNU/Linux 12 (bookworm)"},
			host: "unix:///var/run/docker.sock", goos: "linux"},
		{name: "a rootless engine on Linux", info: system.Info{OperatingSystem: "Debian GNU/Linux 12 (bookworm)", Name: "colimbo"},
			host: "unix:///run/user/1000/docker.sock", goos: "linux"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vm := detectVM(tc.info, tc.host, home, tc.goos)
			if vm == nil {
				if tc.engine != "" {
					t.Fatalf("no VM, want %s's", tc.engine)
				}
				return
			}
			if vm.name != tc.engine {
				t.Fatalf("engine %q (shares %q), want %q", vm.name, vm.shared, tc.engine)
			}
			for _, p := range tc.visible {
				if !vm.visible(p) {
					t.Errorf("%s: %s is not visible, want it shared", vm.name, p)
				}
			}
			for _, p := range tc.hidden {
				if vm.visible(p) {
					t.Errorf("%s: %s is visible, want it not shared", vm.name, p)
				}
			}
		})
	}
}

func TestMayRunInVM(t *testing.T) {
	for _, tc := range []struct {
		host, goos string
		want       bool
	}{
		{"unix:///var/run/docker.sock", "linux", false},
		{"unix:///run/docker.sock", "linux", false},
		{"unix:///home/ann/.docker/desktop/docker.sock", "linux", true},
		{"unix:///run/user/1000/docker.sock", "linux", true},
		{"unix:///var/run/docker.sock", "darwin", true},
	} {
		if got := mayRunInVM(tc.host, tc.goos); got != tc.want {
			t.Errorf("mayRunInVM(%s, %s) = %v, want %v", tc.host, tc.goos, got, tc.want)
		}
	}
}

// vmBackend is a test backend whose engine (Docker Desktop for Linux, the
// fake) runs its containers in a VM that shares home.
func vmBackend(t *testing.T, f *fakeEngine, in *fakeInit, home string) *Backend {
	t.Setenv("HOME", home)
	f.info.OperatingSystem = "Docker Desktop"
	f.host = "unix://" + filepath.Join(home, ".docker/desktop/docker.sock")
	b := newTestBackend(t, f, in, nil)
	b.initBinary = filepath.Join(home, ".cache/sandboxed/init")
	must(t, os.MkdirAll(filepath.Dir(b.initBinary), 0o755))
	must(t, os.WriteFile(b.initBinary, []byte("init"), 0o755))
	b.outsideOnce.Do(func() {}) // not in a container
	return b
}

// To an engine in a VM, a grant in a share is bound by path, a read grant
// elsewhere is copied, the control and egress sockets are never bound
// (they are in a share here, and still cannot cross it), and the init
// speaks over the attached streams.
func TestStartInVM(t *testing.T) {
	home := t.TempDir()
	f, in := newFakeEngine(), newFakeInit()
	b := vmBackend(t, f, in, home)
	shared := filepath.Join(home, "src")
	must(t, os.Mkdir(shared, 0o755))
	elsewhere := t.TempDir()
	must(t, os.WriteFile(filepath.Join(elsewhere, "in.txt"), []byte("hello"), 0o644))
	p := planIn(t)
	p.HostDir = filepath.Join(home, ".local/run/r1")
	must(t, os.MkdirAll(p.HostDir, 0o700))
	p.Spec.Mounts = append(p.Spec.Mounts, []specs.Mount{
		{Destination: "/work", Type: "bind", Source: shared, Options: []string{"rbind", "rw"}},
		{Destination: "/data", Type: "bind", Source: elsewhere, Options: []string{"rbind", "ro"}},
	}...)
	p.Egress = &isolation.Egress{ProxySocket: filepath.Join(p.HostDir, "egress.sock"), ProxyPort: 3128}
	sb, err := b.Start(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	var binds []string
	for _, m := range f.created.hc.Mounts {
		binds = append(binds, m.Source+":"+m.Target)
	}
	data := "/var/lib/docker/volumes/sandboxed-r1/_data"
	want := []string{b.initBinary + ":" + InitPath, shared + ":/work", data + "/0:/data"}
	if !reflect.DeepEqual(binds, want) {
		t.Errorf("binds %q, want %q (the init and the shared grant by path, the other copied, no sockets)", binds, want)
	}
	if cfg := f.created.cfg; !slices.Contains(cfg.Entrypoint, "--stdio") || !cfg.OpenStdin {
		t.Errorf("entrypoint %q: want the init on its attached streams", cfg.Entrypoint)
	}
	if got := f.copied["sandboxed-r1-copy:/copy/0"]; !slices.Contains(got, "in.txt 5") {
		t.Errorf("read grant copied as %q", got)
	}
	if _, ok := b.WarmKey(p); ok {
		t.Error("a warm key for an engine in a VM: its grants cannot be staged")
	}
}

// A write grant outside the VM's shares is refused, naming it, before
// anything is made.
func TestStartInVMRefusesUnsharedWriteGrant(t *testing.T) {
	home := t.TempDir()
	f := newFakeEngine()
	b := vmBackend(t, f, newFakeInit(), home)
	out := t.TempDir()
	p := planIn(t)
	p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: "/out", Type: "bind", Source: out, Options: []string{"rbind", "rw"}})
	if err := b.Check(context.Background(), p); !errors.Is(err, isolation.ErrUnsupported) || !strings.Contains(err.Error(), out) {
		t.Errorf("Check: %v, want the write grant refused by name", err)
	}
	if calls := f.Calls(); slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, "create") || strings.HasPrefix(c, "volume") }) {
		t.Errorf("refused run made %q", calls)
	}
}

// doctor names the engine's VM and what it shares.
func TestProbeSaysEngineVM(t *testing.T) {
	home := t.TempDir()
	b := vmBackend(t, newFakeEngine(), newFakeInit(), home)
	r, err := b.Probe(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(r.Checks(), func(c hostsetup.Check) bool { return c.Name == "engine's paths" })
	if r.EngineVM != "Docker Desktop" || !slices.Equal(r.Shares, []string{home}) || i < 0 || !strings.Contains(r.Checks()[i].Detail, home) {
		t.Errorf("Probe VM %q shares %q, checks %+v", r.EngineVM, r.Shares, r.Checks())
	}
}
