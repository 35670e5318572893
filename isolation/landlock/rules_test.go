package landlock

import (
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/tier"
	"github.com/sandboxed-dev/sandboxed/isolation"
)

// The masks inside read grants become excepts of every grant above them;
// inside a write grant they refuse the run unless the gap is accepted.
func TestPlanGrantsMasks(t *testing.T) {
	bind := func(dst, src string, opts ...string) specs.Mount {
		return specs.Mount{Destination: dst, Source: src, Type: "bind", Options: append([]string{"bind"}, opts...)}
	}
	hideDir := func(dst string) specs.Mount {
		return specs.Mount{Destination: dst, Source: "tmpfs", Type: "tmpfs", Options: []string{"ro", "size=4k", "mode=000"}}
	}
	for _, tc := range []struct {
		name   string
		mounts []specs.Mount
		gaps   []string
		want   []grant
		refuse string
	}{
		{"read grant", []specs.Mount{bind("/g", "/g", "ro"), hideDir("/g/.aws"), bind("/g/.env", "/dev/null", "ro"),
			bind("/g/sub", "/g/sub", "ro"), bind("/g/sub/.env.local", "/dev/null", "ro")}, nil,
			[]grant{{source: "/g", dest: "/g", exec: true, except: []string{"/g/.aws", "/g/.env", "/g/sub/.env.local"}},
				{source: "/g/sub", dest: "/g/sub", exec: true, except: []string{"/g/sub/.env.local"}}}, ""},
		{"a narrower bind keeps its own rule", []specs.Mount{bind("/g", "/g", "ro"), bind("/g/bin", "/g/bin", "ro", "noexec")}, nil,
			[]grant{{source: "/g", dest: "/g", exec: true, except: []string{"/g/bin"}}, {source: "/g/bin", dest: "/g/bin"}}, ""},
		{"a write grant inside a read grant", []specs.Mount{bind("/g", "/g", "ro"), bind("/g/out", "/g/out", "rw"), hideDir("/g/.ssh")}, nil,
			[]grant{{source: "/g", dest: "/g", exec: true, except: []string{"/g/.ssh"}}, {source: "/g/out", dest: "/g/out", write: true, exec: true}}, ""},
		{"a mask in a write grant", []specs.Mount{bind("/g", "/g", "rw"), hideDir("/g/.aws")}, nil, nil, "mask at /g/.aws inside the write grant of /g"},
		{"a mask in a write grant inside a read grant", []specs.Mount{bind("/g", "/g", "ro"), bind("/g/out", "/g/out", "rw"), bind("/g/out/.env", "/dev/null", "ro")}, nil,
			nil, "mask at /g/out/.env inside the write grant of /g/out"},
		{"a mask in a write grant, accepted", []specs.Mount{bind("/g", "/g", "rw"), hideDir("/g/.aws")}, []string{tier.GapMasks},
			[]grant{{source: "/g", dest: "/g", write: true, exec: true}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &isolation.Plan{Spec: &specs.Spec{Mounts: tc.mounts}, AcceptGaps: tc.gaps}
			got, err := planGrants(p)
			if tc.refuse != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refuse) {
					t.Fatalf("want a refusal with %q, got %v", tc.refuse, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// The plan notes what a mask is in this tier wherever a grant holds one:
// a read grant's, and a write grant's, refused or, accepted, left out.
func TestMaskApproximation(t *testing.T) {
	bind := func(dst, opt string) specs.Mount {
		return specs.Mount{Destination: dst, Source: dst, Type: "bind", Options: []string{"bind", opt}}
	}
	mask := specs.Mount{Destination: "/g/.aws", Source: "tmpfs", Type: "tmpfs", Options: []string{"ro"}}
	for _, tc := range []struct {
		name   string
		mounts []specs.Mount
		gaps   []string
		want   bool
	}{
		{"no mask", []specs.Mount{bind("/g", "ro")}, nil, false},
		{"read grant", []specs.Mount{bind("/g", "ro"), mask}, nil, true},
		{"write grant", []specs.Mount{bind("/g", "rw"), mask}, nil, true},
		{"write grant, gap accepted", []specs.Mount{bind("/g", "rw"), mask}, []string{tier.GapMasks}, true},
	} {
		p := &isolation.Plan{Tier: isolation.TierLandlock, Spec: &specs.Spec{Mounts: tc.mounts}, AcceptGaps: tc.gaps}
		if got := MaskApproximation(p); (got != nil) != tc.want || got != nil && got.How != MaskNote {
			t.Errorf("%s: %+v", tc.name, got)
		}
		if len(tc.gaps) > 0 && len(p.AcceptGaps) != len(tc.gaps) {
			t.Errorf("%s: the plan's gaps changed", tc.name)
		}
	}
	if MaskApproximation(&isolation.Plan{Tier: isolation.TierProcess, Spec: &specs.Spec{Mounts: []specs.Mount{bind("/g", "ro"), mask}}}) != nil {
		t.Error("a process-tier plan got the landlock tier's note")
	}
}
