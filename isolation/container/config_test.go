package container

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/images"
	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
)

// setPids gives p's tool n processes: the plan's limit and the spec's,
// which holds the init's spare threads too, as the planner writes them.
func setPids(p *isolation.Plan, n int64) {
	p.Limits.Pids = n
	if p.Spec.Linux == nil {
		p.Spec.Linux = &specs.Linux{}
	}
	if p.Spec.Linux.Resources == nil {
		p.Spec.Linux.Resources = &specs.LinuxResources{}
	}
	m := n + isolation.InitSpareThreads
	p.Spec.Linux.Resources.Pids = &specs.LinuxPids{Limit: &m}
}

func basePlan() *isolation.Plan {
	p := basePlanNoPids()
	setPids(p, p.Limits.Pids)
	return p
}

func basePlanNoPids() *isolation.Plan {
	return &isolation.Plan{
		RunID:     "r1",
		Tool:      "weather",
		Tier:      isolation.TierContainer,
		Privilege: privilege.SameAsUser,
		Spec:      baseSpec("r1", 256<<20, 1.5, 64<<20),
		Limits: isolation.Limits{
			MemoryBytes: 256 << 20,
			Pids:        128,
			CPUs:        1.5,
			TmpfsBytes:  64 << 20,
			Timeout:     time.Minute,
			KillGrace:   time.Second,
		},
		HostDir: "/run/sandboxed/r1",
	}
}

// baseSpec is a container-tier spec as the planner writes it (the
// container package cannot import the planner): memory, cpus and /tmp's
// size as given; setPids sets the pids limit.
func baseSpec(runID string, mem int64, cpus float64, tmp int64) *specs.Spec {
	quota, period := isolation.CPUQuota(cpus), uint64(isolation.CPUPeriod)
	ns := make([]specs.LinuxNamespace, len(specconv.Namespaces))
	for i, t := range specconv.Namespaces {
		ns[i] = specs.LinuxNamespace{Type: t}
	}
	return &specs.Spec{
		Version:  specs.Version,
		Hostname: "box",
		Root:     &specs.Root{Path: "rootfs", Readonly: true},
		Process: &specs.Process{
			User:            specs.User{UID: 1000, GID: 1001},
			Env:             []string{"PATH=/usr/bin:/bin", "HOME=/tmp"},
			Cwd:             "/work",
			NoNewPrivileges: true,
		},
		Mounts:      isolation.SkeletonMounts(tmp),
		Annotations: map[string]string{isolation.AnnotationRunID: runID},
		Linux: &specs.Linux{
			Namespaces: ns,
			Resources: &specs.LinuxResources{
				Memory: &specs.LinuxMemory{Limit: &mem, Swap: &mem},
				CPU:    &specs.LinuxCPU{Quota: &quota, Period: &period},
			},
		},
	}
}

func testHost() host {
	return host{InitBinary: "/usr/local/bin/sandboxed"}
}

// TestTranslateFixed checks what every container gets whatever the plan.
func TestTranslateFixed(t *testing.T) {
	cfg, hc, err := translate(basePlan(), testHost())
	if err != nil {
		t.Fatal(err)
	}
	if hc.NetworkMode != "none" {
		t.Errorf("NetworkMode = %q, want none", hc.NetworkMode)
	}
	if !hc.ReadonlyRootfs {
		t.Error("root filesystem is writable")
	}
	if !reflect.DeepEqual([]string(hc.CapDrop), []string{"ALL"}) || len(hc.CapAdd) != 0 {
		t.Errorf("CapDrop = %v, CapAdd = %v", hc.CapDrop, hc.CapAdd)
	}
	if !reflect.DeepEqual(hc.SecurityOpt, []string{"no-new-privileges"}) {
		t.Errorf("SecurityOpt = %v: want no-new-privileges and, without a plan profile, the engine's default seccomp profile", hc.SecurityOpt)
	}
	if !reflect.DeepEqual(hc.ReadonlyPaths, append(append([]string(nil), dockerReadonlyPaths...), "/dev")) || !reflect.DeepEqual(hc.MaskedPaths, dockerMaskedPaths) {
		t.Errorf("ReadonlyPaths %v MaskedPaths %v: want the engine's defaults and /dev read-only", hc.ReadonlyPaths, hc.MaskedPaths)
	}
	if hc.Privileged || hc.AutoRemove || hc.Init == nil || *hc.Init {
		t.Errorf("Privileged %v AutoRemove %v Init %v", hc.Privileged, hc.AutoRemove, hc.Init)
	}
	if hc.LogConfig.Type != "none" {
		t.Errorf("log driver %q: stdio must not go through the engine", hc.LogConfig.Type)
	}
	if hc.IpcMode != "private" || hc.CgroupnsMode != "private" {
		t.Errorf("ipc %q cgroupns %q", hc.IpcMode, hc.CgroupnsMode)
	}
	want := []string{InitPath, "__sandboxed-init", "--connect=" + ControlSocket}
	if !reflect.DeepEqual([]string(cfg.Entrypoint), want) || len(cfg.Cmd) != 0 {
		t.Errorf("Entrypoint %v Cmd %v, want %v", cfg.Entrypoint, cfg.Cmd, want)
	}
	wantMounts := []mount.Mount{
		bindMount("/usr/local/bin/sandboxed", InitPath, true),
		bindMount("/run/sandboxed/r1/init.sock", ControlSocket, false),
	}
	if !reflect.DeepEqual(hc.Mounts, wantMounts) {
		t.Errorf("Mounts = %+v, want %+v", hc.Mounts, wantMounts)
	}
	if cfg.Image != images.DefaultImage {
		t.Errorf("Image = %q, want %q", cfg.Image, images.DefaultImage)
	}
}

// TestTranslateFields maps each plan field to the engine field it sets.
func TestTranslateFields(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "data")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	h := testHost()
	h.lstat = os.Lstat

	tests := []struct {
		name  string
		edit  func(p *isolation.Plan)
		check func(t *testing.T, cfg *container.Config, hc *container.HostConfig)
	}{
		{"RunID and Tool become labels", func(p *isolation.Plan) {}, func(t *testing.T, cfg *container.Config, _ *container.HostConfig) {
			if cfg.Labels[isolation.AnnotationRunID] != "r1" || cfg.Labels[isolation.AnnotationTool] != "weather" {
				t.Errorf("Labels = %v", cfg.Labels)
			}
		}},
		{"Privilege same-as-user is the invoking uid:gid from Spec.Process.User", func(p *isolation.Plan) {}, func(t *testing.T, cfg *container.Config, _ *container.HostConfig) {
			if cfg.User != "1000:1001" {
				t.Errorf("User = %q", cfg.User)
			}
		}},
		{"Privilege reduced is nobody", func(p *isolation.Plan) { p.Privilege = privilege.Reduced }, func(t *testing.T, cfg *container.Config, _ *container.HostConfig) {
			if cfg.User != "65534:65534" {
				t.Errorf("User = %q", cfg.User)
			}
		}},
		{"Privilege elevated is root with the plan's capabilities", func(p *isolation.Plan) {
			p.Privilege = privilege.Elevated
			p.Spec.Process.Capabilities = &specs.LinuxCapabilities{Bounding: []string{"CAP_CHOWN", "CAP_SETUID"}, Effective: []string{"CAP_CHOWN"}}
		}, func(t *testing.T, cfg *container.Config, hc *container.HostConfig) {
			if cfg.User != "0:0" || !reflect.DeepEqual([]string(hc.CapAdd), []string{"CAP_CHOWN", "CAP_SETUID"}) || hc.CapDrop[0] != "ALL" {
				t.Errorf("User %q CapAdd %v CapDrop %v", cfg.User, hc.CapAdd, hc.CapDrop)
			}
		}},
		{"Spec.Process.Env, Cwd and Hostname", func(p *isolation.Plan) {}, func(t *testing.T, cfg *container.Config, _ *container.HostConfig) {
			if !reflect.DeepEqual(cfg.Env, []string{"PATH=/usr/bin:/bin", "HOME=/tmp"}) || cfg.WorkingDir != "/work" || cfg.Hostname != "box" {
				t.Errorf("Env %v WorkingDir %q Hostname %q", cfg.Env, cfg.WorkingDir, cfg.Hostname)
			}
		}},
		{"Spec.Process.Rlimits become ulimits", func(p *isolation.Plan) {
			p.Spec.Process.Rlimits = []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: 1024, Hard: 2048}, {Type: "RLIMIT_CORE", Soft: ^uint64(0), Hard: ^uint64(0)}}
		}, func(t *testing.T, _ *container.Config, hc *container.HostConfig) {
			want := []*container.Ulimit{{Name: "nofile", Soft: 1024, Hard: 2048}, {Name: "core", Soft: -1, Hard: -1}}
			if !reflect.DeepEqual(hc.Ulimits, want) {
				t.Errorf("Ulimits = %v", hc.Ulimits)
			}
		}},
		{"Limits: memory without swap, pids, cpus", func(p *isolation.Plan) {}, func(t *testing.T, _ *container.Config, hc *container.HostConfig) {
			r := hc.Resources
			if r.Memory != 256<<20 || r.MemorySwap != 256<<20 || r.PidsLimit == nil || *r.PidsLimit != 128+sbinit.SpareThreads || r.CPUQuota != 150000 || r.CPUPeriod != 100000 {
				t.Errorf("Resources = %+v", r)
			}
		}},
		{"no spec CPU quota is no cpu limit", func(p *isolation.Plan) { p.Spec.Linux.Resources.CPU = nil }, func(t *testing.T, _ *container.Config, hc *container.HostConfig) {
			if hc.CPUQuota != 0 || hc.CPUPeriod != 0 {
				t.Errorf("CPUQuota = %d, CPUPeriod = %d", hc.CPUQuota, hc.CPUPeriod)
			}
		}},
		{"the spec's /tmp size sizes /tmp, nosuid nodev", func(p *isolation.Plan) {}, func(t *testing.T, _ *container.Config, hc *container.HostConfig) {
			if got := hc.Tmpfs["/tmp"]; got != "nosuid,nodev,exec,mode=1777,size=67108864" {
				t.Errorf("Tmpfs[/tmp] = %q", got)
			}
		}},
		{"Image and Runtime", func(p *isolation.Plan) { p.Image = "my/runner:1"; p.Runtime = "runsc" }, func(t *testing.T, cfg *container.Config, hc *container.HostConfig) {
			if cfg.Image != "my/runner:1" || hc.Runtime != "runsc" {
				t.Errorf("Image %q Runtime %q", cfg.Image, hc.Runtime)
			}
		}},
		{"Spec.Mounts binds: read-only unless rw", func(p *isolation.Plan) {
			p.Spec.Mounts = append(p.Spec.Mounts, []specs.Mount{
				{Destination: "/data", Type: "bind", Source: src, Options: []string{"rbind", "ro"}},
				{Destination: "/out", Source: src, Options: []string{"rbind", "rw"}},
				{Destination: "/usr", Type: "bind", Source: "/usr", Options: []string{"rbind", "ro"}},
			}...)
		}, func(t *testing.T, _ *container.Config, hc *container.HostConfig) {
			got := hc.Mounts[2:]
			want := []mount.Mount{bindMount(src, "/data", true), bindMount(src, "/out", false)}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Mounts = %+v, want %+v", got, want)
			}
			if _, ok := hc.Tmpfs["/dev"]; ok {
				t.Error("engine /dev replaced by a tmpfs")
			}
		}},
		{"Spec.Linux.Seccomp becomes the engine's profile", func(p *isolation.Plan) {
			p.Spec.Linux = &specs.Linux{Namespaces: p.Spec.Linux.Namespaces, Resources: p.Spec.Linux.Resources, Seccomp: &specs.LinuxSeccomp{
				DefaultAction: specs.ActAllow,
				Syscalls:      []specs.LinuxSyscall{{Names: []string{"ptrace"}, Action: specs.ActErrno}},
			}}
		}, func(t *testing.T, _ *container.Config, hc *container.HostConfig) {
			if len(hc.SecurityOpt) != 2 || hc.SecurityOpt[0] != "no-new-privileges" {
				t.Fatalf("SecurityOpt = %v", hc.SecurityOpt)
			}
			prof, ok := strings.CutPrefix(hc.SecurityOpt[1], "seccomp=")
			var got specs.LinuxSeccomp
			if !ok || json.Unmarshal([]byte(prof), &got) != nil || got.DefaultAction != specs.ActErrno {
				t.Fatalf("seccomp option %q: want the engine's allowlist", hc.SecurityOpt[1])
			}
			if allows(&got, "ptrace") || !allows(&got, "read") {
				t.Errorf("profile allows ptrace %v, read %v: want the plan's denial folded in", allows(&got, "ptrace"), allows(&got, "read"))
			}
		}},
		{"Spec.Linux masked and read-only paths add to the engine's", func(p *isolation.Plan) {
			p.Spec.Linux = &specs.Linux{Namespaces: p.Spec.Linux.Namespaces, Resources: p.Spec.Linux.Resources, MaskedPaths: []string{"/proc/kcore", "/proc/extra"}, ReadonlyPaths: []string{"/proc/ro"}}
		}, func(t *testing.T, _ *container.Config, hc *container.HostConfig) {
			if hc.MaskedPaths[len(hc.MaskedPaths)-1] != "/proc/extra" || len(hc.MaskedPaths) != len(dockerMaskedPaths)+1 {
				t.Errorf("MaskedPaths %v", hc.MaskedPaths)
			}
			if n := len(hc.ReadonlyPaths); n != len(dockerReadonlyPaths)+2 || hc.ReadonlyPaths[n-2] != "/proc/ro" || hc.ReadonlyPaths[n-1] != "/dev" {
				t.Errorf("ReadonlyPaths %v", hc.ReadonlyPaths)
			}
		}},
		{"Egress binds the proxy socket", func(p *isolation.Plan) {
			p.Egress = &isolation.Egress{ProxySocket: "/run/sandboxed/r1/egress.sock", ProxyPort: 3128}
		}, func(t *testing.T, _ *container.Config, hc *container.HostConfig) {
			if got := hc.Mounts[len(hc.Mounts)-1]; !reflect.DeepEqual(got, bindMount("/run/sandboxed/r1/egress.sock", isolation.SandboxSocket, false)) {
				t.Errorf("last mount %+v", got)
			}
			if hc.NetworkMode != "none" {
				t.Errorf("NetworkMode %q: egress goes through the socket only", hc.NetworkMode)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := basePlan()
			tc.edit(p)
			cfg, hc, err := translate(p, h)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, cfg, hc)
		})
	}
}

// TestTranslateRefuses checks the plans the container tier refuses.
func TestTranslateRefuses(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	h := testHost()
	h.lstat = os.Lstat
	tests := []struct {
		name string
		edit func(p *isolation.Plan)
		want string
	}{
		{"another tier", func(p *isolation.Plan) { p.Tier = isolation.TierProcess }, "tier"},
		{"no spec", func(p *isolation.Plan) { p.Spec = nil }, "spec"},
		{"no memory limit", func(p *isolation.Plan) { p.Spec.Linux.Resources.Memory = nil }, "memory"},
		{"no pids limit", func(p *isolation.Plan) { p.Limits.Pids = 0 }, "pids"},
		{"no spec pids limit", func(p *isolation.Plan) { p.Spec.Linux.Resources.Pids = nil }, "pids"},
		{"swap", func(p *isolation.Plan) { sw := int64(1 << 30); p.Spec.Linux.Resources.Memory.Swap = &sw }, "swap"},
		{"a field no tier honours", func(p *isolation.Plan) { p.Spec.Process.OOMScoreAdj = new(int) }, "OOMScoreAdj"},
		{"a /tmp of other options", func(p *isolation.Plan) {
			p.Spec.Mounts[4] = specs.Mount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"noexec", "suid", "size=1073741824", "mode=0700"}}
		}, "/tmp"},
		{"no /tmp", func(p *isolation.Plan) { p.Spec.Mounts = p.Spec.Mounts[:4] }, "/tmp"},
		{"an engine mount the skeleton has not", func(p *isolation.Plan) {
			p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: "/sys", Type: "sysfs", Source: "sysfs"})
		}, "engine"},
		{"a cgroup of its own", func(p *isolation.Plan) { p.Spec.Linux.CgroupsPath = "/sandboxed/r1" }, "CgroupsPath"},
		{"a writable root", func(p *isolation.Plan) { p.Spec.Root.Readonly = false }, "root"},
		{"no network namespace", func(p *isolation.Plan) { p.Spec.Linux.Namespaces = p.Spec.Linux.Namespaces[:1] }, "namespace"},
		{"bad run id", func(p *isolation.Plan) { p.RunID = "../x" }, "run id"},
		{"relative host dir", func(p *isolation.Plan) { p.HostDir = "rel" }, "host dir"},
		{"unknown privilege", func(p *isolation.Plan) { p.Privilege = "root" }, "privilege"},
		{"capabilities when not elevated", func(p *isolation.Plan) {
			p.Spec.Process.Capabilities = &specs.LinuxCapabilities{Bounding: []string{"CAP_CHOWN"}}
		}, "capabilities"},
		{"capability beyond Docker's default set", func(p *isolation.Plan) {
			p.Privilege = privilege.Elevated
			p.Spec.Process.Capabilities = &specs.LinuxCapabilities{Bounding: []string{"CAP_SYS_ADMIN"}}
		}, "CAP_SYS_ADMIN"},
		{"unknown rlimit", func(p *isolation.Plan) { p.Spec.Process.Rlimits = []specs.POSIXRlimit{{Type: "RLIMIT_BOGUS"}} }, "rlimit"},
		{"symlink bind source", func(p *isolation.Plan) {
			p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: "/data", Type: "bind", Source: link, Options: []string{"ro"}})
		}, "symlink"},
		{"missing bind source", func(p *isolation.Plan) {
			p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: "/data", Type: "bind", Source: filepath.Join(dir, "nope")})
		}, "nope"},
		{"relative bind source", func(p *isolation.Plan) {
			p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: "/data", Type: "bind", Source: "data"})
		}, "not absolute"},
		{"mount over the init", func(p *isolation.Plan) {
			p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: "/.sandboxed/sandboxed", Type: "bind", Source: dir})
		}, "reserved"},
		{"unknown mount type", func(p *isolation.Plan) {
			p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: "/x", Type: "overlay", Source: "overlay"})
		}, "overlay"},
		{"unknown tmpfs option", func(p *isolation.Plan) {
			p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: "/x", Type: "tmpfs", Options: []string{"uid=0"}})
		}, "uid=0"},
		{"relative egress socket", func(p *isolation.Plan) { p.Egress = &isolation.Egress{ProxySocket: "x.sock"} }, "egress"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := basePlan()
			tc.edit(p)
			_, _, err := translate(p, h)
			if err == nil {
				t.Fatal("translated, want refused")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
			if tc.name != "missing bind source" && !errors.Is(err, isolation.ErrUnsupported) {
				t.Errorf("error %v does not wrap ErrUnsupported", err)
			}
		})
	}
}

func TestAddGVisorNames(t *testing.T) {
	prof := &specs.LinuxSeccomp{Syscalls: []specs.LinuxSyscall{
		{Names: []string{"read", "pselect6"}, Action: specs.ActAllow},
		{Names: []string{"write"}, Action: specs.ActAllow},
	}}
	addGVisorNames(prof)
	addGVisorNames(prof) // once only
	if got := prof.Syscalls[0].Names; len(got) != 3 || got[2] != "pselect" {
		t.Errorf("names %q, want pselect added once", got)
	}
	if got := prof.Syscalls[1].Names; len(got) != 1 {
		t.Errorf("names %q, want unchanged", got)
	}
}

// The container's user is the spec's for same-as-user (the planner gives
// root's tools the reserved id), nobody for reduced, root for elevated;
// as root, uid 0 where it would be host uid 0 is refused, and so is the
// reserved id where the engine remaps user namespaces.
func TestUserForRoot(t *testing.T) {
	for _, tc := range []struct {
		priv privilege.Privilege
		user specs.User
		want string
	}{
		{privilege.SameAsUser, specs.User{UID: 0x70000000, GID: 0x70000000}, "1879048192:1879048192"},
		{privilege.SameAsUser, specs.User{UID: 0, GID: 0}, "0:0"}, // checkUser's to refuse
		{privilege.SameAsUser, specs.User{UID: 1000, GID: 1000}, "1000:1000"},
		{privilege.Reduced, specs.User{UID: 0, GID: 0}, "65534:65534"},
		{privilege.Elevated, specs.User{}, "0:0"},
	} {
		got, err := userFor(tc.priv, tc.user)
		if err != nil || got != tc.want {
			t.Errorf("userFor(%s, %d) = %q, %v; want %q", tc.priv, tc.user.UID, got, err, tc.want)
		}
	}
	none := errors.New("no reserved range")
	for _, tc := range []struct {
		uid      uint32
		remaps   bool
		reserved int
		err      error
		refused  bool
	}{
		{0, false, 0x70000000, nil, true}, // host root
		{0, false, 0, none, true},         // host root, and no range to move to
		{0, true, 0x70000000, nil, false}, // remapped: unprivileged on the host
		{0x70000000, false, 0x70000000, nil, false},
		{0x70000000, true, 0x70000000, nil, true}, // the remapped range has no such id
		{1000, true, 0x70000000, nil, false},      // under sudo: the user's
		{1000, false, 0x70000000, nil, false},
	} {
		err := userRefusal(tc.uid, tc.remaps, tc.reserved, tc.err)
		if (err != nil) != tc.refused {
			t.Errorf("userRefusal(%d, remaps %t) = %v, want refused %t", tc.uid, tc.remaps, err, tc.refused)
		}
	}
	for src, ours := range map[string]bool{
		"/run/sandboxed/R/init.sock":          true,
		"/bin/sandboxed":                      true,
		"/run/sandboxed/R/.sandboxed-binds/0": false,
		"/home/ada/project":                   false,
	} {
		if got := ourSource(src, "/bin/sandboxed", "/run/sandboxed/R"); got != ours {
			t.Errorf("ourSource(%s) = %t", src, got)
		}
	}
}

// TestTranslateMounts checks which of a spec's mounts become binds and
// tmpfs mounts of the container, and which the image or engine provides.
func TestTranslateMounts(t *testing.T) {
	tests := []struct {
		name      string
		mounts    []specs.Mount
		wantBinds []string          // "src>dst ro|rw"
		wantTmpfs map[string]string // dst → options
	}{
		{"the skeleton: a /tmp of the tmpfs size", isolation.SkeletonMounts(1024), nil,
			map[string]string{"/tmp": "nosuid,nodev,exec,mode=1777,size=1024"}},
		{"system directories come from the image", []specs.Mount{
			{Destination: "/usr", Type: "bind", Source: "/usr", Options: []string{"rbind", "ro"}},
			{Destination: "/usr", Type: "bind", Source: "/opt/usr", Options: []string{"rbind", "ro"}},
		}, []string{"/opt/usr>/usr ro"}, map[string]string{"/tmp": "rw,nosuid,nodev,exec,mode=1777,size=1024"}},
		{"a grant is read-only unless rw", []specs.Mount{
			{Destination: "/data", Type: "bind", Source: "/srv/data"},
			{Destination: "/out", Type: "bind", Source: "/srv/out", Options: []string{"rbind", "rw"}},
		}, []string{"/srv/data>/data ro", "/srv/out>/out rw"}, map[string]string{"/tmp": "rw,nosuid,nodev,exec,mode=1777,size=1024"}},
		{"the engine's own filesystems are left to it", append(isolation.SkeletonMounts(1024),
			specs.Mount{Destination: "/cache", Type: "tmpfs"},
		), nil, map[string]string{"/tmp": "nosuid,nodev,exec,mode=1777,size=1024", "/cache": "nosuid,nodev,exec,mode=1777"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			binds, tmpfs, err := translateMounts(tc.mounts, 1024, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range binds {
				how := "rw"
				if b.ReadOnly {
					how = "ro"
				}
				got = append(got, b.Source+">"+b.Target+" "+how)
			}
			if !reflect.DeepEqual(got, tc.wantBinds) {
				t.Errorf("binds = %q, want %q", got, tc.wantBinds)
			}
			if !reflect.DeepEqual(tmpfs, tc.wantTmpfs) {
				t.Errorf("tmpfs = %q, want %q", tmpfs, tc.wantTmpfs)
			}
		})
	}
}

// allows reports whether p has an allow rule naming name, with any args.
func allows(p *specs.LinuxSeccomp, name string) bool {
	for _, r := range rulesFor(p, name) {
		if r.Action == specs.ActAllow {
			return true
		}
	}
	return false
}

func rulesFor(p *specs.LinuxSeccomp, name string) []specs.LinuxSyscall {
	var out []specs.LinuxSyscall
	for _, r := range p.Syscalls {
		for _, n := range r.Names {
			if n == name {
				out = append(out, r)
			}
		}
	}
	return out
}
