package specconv

import (
	"errors"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

func i64(v int64) *int64   { return &v }
func u64(v uint64) *uint64 { return &v }

func TestFields(t *testing.T) {
	s := &specs.Spec{
		Version:  specs.Version,
		Process:  &specs.Process{Env: []string{"A=1"}, Rlimits: []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE"}}, Capabilities: &specs.LinuxCapabilities{}},
		Mounts:   []specs.Mount{{Destination: "/a"}, {Destination: "/b", Options: []string{"ro"}}},
		Linux:    &specs.Linux{Resources: &specs.LinuxResources{Memory: &specs.LinuxMemory{Swap: i64(0)}, BlockIO: &specs.LinuxBlockIO{WeightDevice: []specs.LinuxWeightDevice{{LinuxBlockIODevice: specs.LinuxBlockIODevice{Major: 8}}}}}},
		Hostname: "",
	}
	want := []string{"Linux.Resources.BlockIO.WeightDevice.Major", "Linux.Resources.Memory.Swap", "Mounts.Destination", "Mounts.Options",
		"Process.Env", "Process.Rlimits.Type", "Version"}
	if got := Fields(s); !slices.Equal(got, want) {
		t.Errorf("Fields:\n got %v\nwant %v", got, want)
	}
	leaves := Leaves()
	for _, f := range want {
		if !slices.Contains(leaves, f) {
			t.Errorf("Leaves lacks %s, which Fields names", f)
		}
	}
}

func TestReview(t *testing.T) {
	mem := i64(1 << 20)
	tests := []struct {
		name    string
		target  Target
		spec    *specs.Spec
		approx  []string
		refused string
	}{
		{"process: memory enforced", Target{Tier: isolation.TierProcess},
			&specs.Spec{Linux: &specs.Linux{Resources: &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: mem}}}}, nil, ""},
		{"landlock: memory approximated", Target{Tier: isolation.TierLandlock},
			&specs.Spec{Linux: &specs.Linux{Resources: &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: mem, Swap: mem}}}},
			[]string{FieldMemory, FieldSwap}, ""},
		{"landlock with a cgroup: memory and pids enforced", Target{Tier: isolation.TierLandlock},
			&specs.Spec{Linux: &specs.Linux{CgroupsPath: "/sandboxed/x", Resources: &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: mem, Swap: mem}, Pids: &specs.LinuxPids{Limit: i64(66)}}}},
			nil, ""},
		{"none without a cgroup: memory and pids approximated", Target{Tier: isolation.TierNone},
			&specs.Spec{Linux: &specs.Linux{Resources: &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: mem}, Pids: &specs.LinuxPids{Limit: i64(64)}}}},
			[]string{FieldMemory, FieldPids}, ""},
		{"runsc: memory approximated", Target{Tier: isolation.TierContainer, Runtime: "runsc"},
			&specs.Spec{Linux: &specs.Linux{Resources: &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: mem}}}}, []string{FieldMemory}, ""},
		{"none: namespaces refused", Target{Tier: isolation.TierNone},
			&specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace}}}}, nil, "Linux.Namespaces.Type"},
		{"process: a namespace path refused", Target{Tier: isolation.TierProcess},
			&specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.NetworkNamespace, Path: "/proc/1/ns/net"}}}}, nil, "Linux.Namespaces.Path"},
		{"pod: hooks refused", Target{Tier: isolation.TierContainer, Kubernetes: true},
			&specs.Spec{Hooks: &specs.Hooks{Poststart: []specs.Hook{{Path: "/x"}}}}, nil, "Hooks.Poststart.Path"},
		{"unknown tier honours nothing", Target{Tier: "vm"}, &specs.Spec{Version: specs.Version}, nil, "Version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			approx, err := Review(tc.target, tc.spec)
			if tc.refused != "" {
				var ue *isolation.UnsupportedError
				if !errors.As(err, &ue) || !strings.Contains(ue.What, tc.refused) {
					t.Fatalf("err %v, want a refusal naming %s", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range approx {
				if a.How == "" {
					t.Errorf("%s approximated without saying how", a.Field)
				}
				got = append(got, a.Field)
			}
			if !slices.Equal(got, tc.approx) {
				t.Errorf("approximations %v, want %v", got, tc.approx)
			}
		})
	}
}

func TestReadResources(t *testing.T) {
	q, per := i64(50000), uint64(100000)
	ok := func() *specs.Spec {
		return &specs.Spec{Linux: &specs.Linux{Resources: &specs.LinuxResources{
			Memory: &specs.LinuxMemory{Limit: i64(64 << 20), Swap: i64(64 << 20)}, Pids: &specs.LinuxPids{Limit: i64(10)},
			CPU: &specs.LinuxCPU{Quota: q, Period: &per}}}}
	}
	r, err := ReadResources(ok())
	if err != nil || r != (Resources{MemoryBytes: 64 << 20, Pids: 10, CPUQuota: 50000, CPUPeriod: 100000}) || r.CPUs() != 0.5 || r.MilliCPUs() != 500 {
		t.Fatalf("%+v %v", r, err)
	}
	for name, edit := range map[string]func(s *specs.Spec){
		"no memory":        func(s *specs.Spec) { s.Linux.Resources.Memory = nil },
		"no pids":          func(s *specs.Spec) { s.Linux.Resources.Pids = nil },
		"swap":             func(s *specs.Spec) { s.Linux.Resources.Memory.Swap = i64(1 << 30) },
		"quota no period":  func(s *specs.Spec) { s.Linux.Resources.CPU.Period = nil },
		"no linux":         func(s *specs.Spec) { s.Linux = nil },
		"period below 1ms": func(s *specs.Spec) { s.Linux.Resources.CPU.Period = u64(999) },
		"period above 1s":  func(s *specs.Spec) { s.Linux.Resources.CPU.Period = u64(1000001) },
		"quota below 1ms":  func(s *specs.Spec) { s.Linux.Resources.CPU.Quota = i64(999) },
	} {
		s := ok()
		edit(s)
		if _, err := ReadResources(s); !errors.Is(err, isolation.ErrUnsupported) {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}
}

func TestRunIDAndChecks(t *testing.T) {
	s := &specs.Spec{Version: specs.Version, Annotations: map[string]string{isolation.AnnotationRunID: "r1", isolation.AnnotationTool: "t"}}
	if id, err := RunID(s); err != nil || id != "r1" {
		t.Fatalf("%q %v", id, err)
	}
	for name, edit := range map[string]func(s *specs.Spec){
		"version":       func(s *specs.Spec) { s.Version = "1.0.0" },
		"annotation":    func(s *specs.Spec) { s.Annotations["x"] = "y" },
		"no run id":     func(s *specs.Spec) { delete(s.Annotations, isolation.AnnotationRunID) },
		"run id a path": func(s *specs.Spec) { s.Annotations[isolation.AnnotationRunID] = "../x" },
	} {
		c := &specs.Spec{Version: s.Version, Annotations: map[string]string{isolation.AnnotationRunID: "r1"}}
		edit(c)
		if _, err := RunID(c); !errors.Is(err, isolation.ErrUnsupported) {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}
	s.Linux = &specs.Linux{CgroupsPath: "/other/r1"}
	if err := CheckCgroupsPath(s, "r1"); err == nil {
		t.Error("another cgroup accepted")
	}
	s.Linux.CgroupsPath = CgroupsPath("r1")
	if err := CheckCgroupsPath(s, "r1"); err != nil {
		t.Error(err)
	}
	if err := CheckRoot(&specs.Spec{Root: &specs.Root{Path: "rootfs"}}, "rootfs", true); err == nil {
		t.Error("a writable root accepted where the tier's is read-only")
	}
	if _, err := CheckNamespaces(&specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace}}}}, Namespaces, nil); err == nil {
		t.Error("a spec without the network namespace accepted")
	}
}
