package process

import (
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
)

func TestTailBufferKeepsHeadAndTail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"short", []string{"fatal: x"}, "fatal: x"},
		{"cut in the middle", []string{"fatal error: x"}, "fatal \n...\nror: x"},
		{"fits", []string{"abcd", "efgh"}, "abcdefgh"},
		{"cut", []string{"HEAD", strings.Repeat("m", 20), "TAIL"}, "HEADmm\n...\nmmTAIL"},
		{"one write", []string{"HEAD" + strings.Repeat("m", 20) + "TAIL"}, "HEADmm\n...\nmmTAIL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &tailBuffer{max: 12}
			for _, w := range tc.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := b.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The cgroup's pids limit is the spec's, which the planner made the
// tool's and the init's spare threads; nothing is added here, and no
// limit is made from none.
func TestResourcesSpareThreads(t *testing.T) {
	if r := resources(&isolation.Plan{Spec: &specs.Spec{}}); r.Pids != 0 {
		t.Errorf("no pids limit became %d", r.Pids)
	}
	n := int64(24 + sbinit.SpareThreads)
	mem := int64(64 << 20)
	p := &isolation.Plan{Limits: isolation.Limits{Pids: 24}, Spec: &specs.Spec{Linux: &specs.Linux{Resources: &specs.LinuxResources{
		Pids: &specs.LinuxPids{Limit: &n}, Memory: &specs.LinuxMemory{Limit: &mem}}}}}
	if r := resources(p); r.Pids != n {
		t.Errorf("pids limit 24 (spec %d) became %d, want the spec's", n, r.Pids)
	}
}

// The host id explain names is the one the run's mapping gives the
// spec's user: root as root maps to the reserved range, never to 0.
func TestHostIDOfMapping(t *testing.T) {
	h := hostIDs{euid: 0, egid: 0, reserved: 1 << 20}
	m, err := planIDMapping(h, "same-as-user", 0, 0)
	if err != nil || m == nil {
		t.Fatalf("root's same-as-user run as uid 0: %v %v", m, err)
	}
	if uid, ok := mappedID(m.uids, 0); !ok || uid != 1<<20 {
		t.Errorf("uid 0 inside is host uid %d (%v), want the reserved %d", uid, ok, 1<<20)
	}
	if _, ok := mappedID(m.uids, 5); ok {
		t.Error("an id the namespace does not map was given a host id")
	}
	user := hostIDs{euid: 1000, egid: 1000, subUID: 100000, subUIDCount: 65536, subGID: 100000, subGIDCount: 65536}
	m, err = planIDMapping(user, "reduced", 65534, 65534)
	if err != nil {
		t.Fatal(err)
	}
	if uid, ok := mappedID(m.uids, 65534); !ok || uid != 100000+65534 {
		t.Errorf("reduced nobody is host uid %d (%v), want %d", uid, ok, 100000+65534)
	}
}

// The spec's pids limit holds the tool's and the init's spare threads
// where it names the run's cgroup, and is the tool's own where it names
// none (RLIMIT_NPROC on the tool's uid); where it names none the limits
// are rlimits, RLIMIT_NPROC of the spec's pids limit, nothing taken off.
func TestCheckSpecPids(t *testing.T) {
	for _, tc := range []struct {
		cgroup string
		spec   int64
		ok     bool
	}{
		{"/sandboxed/r", 18, true},
		{"/sandboxed/r", 16, false},
		{"", 16, true},
		{"", 18, false},
	} {
		n := tc.spec
		p := &isolation.Plan{RunID: "r", Limits: isolation.Limits{Pids: 16, MemoryBytes: 1 << 20},
			Spec: &specs.Spec{Linux: &specs.Linux{CgroupsPath: tc.cgroup, Resources: &specs.LinuxResources{
				Pids: &specs.LinuxPids{Limit: &n}, Memory: &specs.LinuxMemory{Limit: &n}}}}}
		if err := checkSpecPids(p); (err == nil) != tc.ok {
			t.Errorf("cgroup %q, spec pids %d: %v, want ok %t", tc.cgroup, tc.spec, err, tc.ok)
		}
		if tc.cgroup == "" && tc.ok {
			rl, err := OutsideRlimits(p, false, false)
			if err != nil || rl.NprocLimit != 16 {
				t.Errorf("OutsideRlimits = %+v, %v; want RLIMIT_NPROC of the spec's 16", rl, err)
			}
		}
	}
}
