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
	p := &isolation.Plan{Limits: isolation.Limits{Pids: 24}, Spec: &specs.Spec{Linux: &specs.Linux{Resources: &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: &n}}}}}
	if r := resources(p); r.Pids != n {
		t.Errorf("pids limit 24 (spec %d) became %d, want the spec's", n, r.Pids)
	}
}
