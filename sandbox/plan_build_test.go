package sandbox

import (
	"cmp"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/landlock"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// planFixture binds a definition against made-up host facts: nothing of
// the host is read, so what buildPlan makes of it is fixed.
func planFixture(t *testing.T, yaml string) (*tool.Bound, []permissions.Grant, *HostFacts) {
	t.Helper()
	def, err := tool.Parse([]byte(yaml), "/home/ada/proj/t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f := &HostFacts{Cwd: "/home/ada/proj", Home: "/home/ada", UID: 1000, GID: 1000,
		Env: []string{"LANG=fr_FR.UTF-8", "TOKEN=s3cret", "TOKEN=second"}, RuntimeDir: "/run/sandboxed"}
	b, err := tool.Bind(def, tool.Input{}, tool.BindEnv{ToolName: def.Name, Workspace: f.Cwd, Temp: "/tmp/x", Home: f.Home})
	if err != nil {
		t.Fatal(err)
	}
	grants, err := permissions.Resolve(b.Permissions, f.Cwd, f.Home)
	if err != nil {
		t.Fatal(err)
	}
	for i := range grants {
		if m := grants[i].Mount; m != nil {
			m.Resolved = "/host" + m.HostPath // as ResolveMounts would, made up
		}
	}
	return b, grants, f
}

// allow is a decision that allows the run, with memory mem, pids pids (0:
// the built-in policy's default) and the built-in /tmp.
func allow(mem int64, pids int64) *policy.Decision {
	lim := policy.Default().Limits
	return &policy.Decision{Verdict: policy.Allow, Isolation: tool.IsolationProcess,
		Limits: policy.Effective{MemoryBytes: mem, Pids: cmp.Or(pids, lim.Pids.Default), Timeout: time.Minute, OutputBytes: 1 << 20,
			TmpfsBytes: int64(lim.Tmpfs.Default)},
		EgressDeny: []string{"169.254.169.254"}}
}

func envOf(p *isolation.Plan) []string { return p.Spec.Process.Env }

func mountAt(s *specs.Spec, dst string) *specs.Mount {
	for i := range s.Mounts {
		if s.Mounts[i].Destination == dst {
			return &s.Mounts[i]
		}
	}
	return nil
}

func TestBuildPlanFromFacts(t *testing.T) {
	const head = "name: t\ndescription: d\nbash: echo hi\n"
	tests := []struct {
		name    string
		yaml    string
		d       *policy.Decision
		wantErr bool
		check   func(t *testing.T, p *isolation.Plan)
	}{
		{"egress section and host directory", head + `security:
  required-permissions: [network:external:api.example.com, "network:localhost:8080"]
`, allow(64<<20, 0), false, func(t *testing.T, p *isolation.Plan) {
			if p.HostDir != "/run/sandboxed/RUN" {
				t.Errorf("host dir %q", p.HostDir)
			}
			e := p.Egress
			if e == nil || e.ProxySocket != "/run/sandboxed/RUN/egress.sock" || e.ProxyPort != EgressProxyPort ||
				!slices.Equal(e.Allow, []netrule.Rule{{Host: "api.example.com"}}) ||
				!slices.Equal(e.Deny, []netrule.Rule{{Host: "169.254.169.254"}}) || !slices.Equal(e.LocalhostPorts, []int{8080}) {
				t.Fatalf("egress %+v", e)
			}
			if !slices.Contains(envOf(p), "ALL_PROXY=socks5h://127.0.0.1:3128") || !slices.Contains(envOf(p), "http_proxy=http://127.0.0.1:3128") {
				t.Errorf("proxy environment missing: %v", envOf(p))
			}
		}},
		{"no network, no egress", head, allow(64<<20, 0), false, func(t *testing.T, p *isolation.Plan) {
			if p.Egress != nil {
				t.Errorf("egress %+v", p.Egress)
			}
			for _, kv := range envOf(p) {
				if strings.Contains(strings.ToLower(kv), "proxy") {
					t.Errorf("proxy variable without network: %s", kv)
				}
			}
		}},
		{"the proxy's own port cannot be forwarded", head + "security:\n  required-permissions: [\"network:localhost:3128\"]\n",
			allow(64<<20, 0), true, nil},
		{"env grants read the facts, first of a name", head + "security:\n  required-permissions: [env:TOKEN, env:ABSENT]\n",
			allow(64<<20, 0), false, func(t *testing.T, p *isolation.Plan) {
				env := envOf(p)
				if !slices.Contains(env, "TOKEN=s3cret") || !slices.Contains(env, "LANG=fr_FR.UTF-8") || slices.ContainsFunc(env, func(s string) bool { return strings.HasPrefix(s, "ABSENT=") }) {
					t.Errorf("env %v", env)
				}
			}},
		{"same-as-user runs as the facts' user", head, allow(64<<20, 0), false, func(t *testing.T, p *isolation.Plan) {
			if u := p.Spec.Process.User; u.UID != 1000 || u.GID != 1000 {
				t.Errorf("user %+v", u)
			}
		}},
		{"grants bind what the facts resolved", head + "security:\n  required-permissions: [filesystem:read:data, filesystem:write:out]\n",
			allow(64<<20, 0), false, func(t *testing.T, p *isolation.Plan) {
				r, w := mountAt(p.Spec, "/home/ada/proj/data"), mountAt(p.Spec, "/home/ada/proj/out")
				if r == nil || r.Source != "/host/home/ada/proj/data" || !slices.Contains(r.Options, "ro") {
					t.Errorf("read grant %+v", r)
				}
				if w == nil || w.Source != "/host/home/ada/proj/out" || !slices.Contains(w.Options, "rw") {
					t.Errorf("write grant %+v", w)
				}
			}},
		{"a mask nobody looked up refuses the run", head + "security:\n  required-permissions: [filesystem:write:out]\n",
			func() *policy.Decision {
				d := allow(64<<20, 0)
				d.Masks = []policy.PathMask{{Path: "/home/ada/proj/out/.git/hooks", Under: "/home/ada/proj/out", Rule: "r"}}
				return d
			}(), true, nil},
		{"a decision that does not allow plans nothing", head, &policy.Decision{Verdict: policy.NeedsApproval}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, grants, f := planFixture(t, tt.yaml)
			p, _, _, err := buildPlan(PlanInput{RunID: "RUN", Bound: b, Grants: grants, Decision: tt.d, Facts: f})
			if tt.wantErr {
				if !errors.Is(err, ErrPlan) {
					t.Fatalf("err %v, want ErrPlan", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, p)
			// The same facts give the same plan.
			again, _, _, _ := buildPlan(PlanInput{RunID: "RUN", Bound: b, Grants: grants, Decision: tt.d, Facts: f})
			if a, b := mustJSON(t, p), mustJSON(t, again); a != b {
				t.Errorf("two plans from the same facts differ:\n%s\n%s", a, b)
			}
		})
	}
}

func TestPlanMasks(t *testing.T) {
	rw := &permissions.Mount{HostPath: "/p", Target: "/w", Resolved: "/h/w", Write: true}
	ro := &permissions.Mount{HostPath: "/p", Target: "/w", Resolved: "/h/w"}
	dir := FileFact{Dir: true}
	hooks := policy.PathMask{Path: "/w/**/.git/hooks", Under: "/w", Rule: "deny-write hooks"}
	env := policy.PathMask{Path: "/w/.env", Under: "/w", Hide: true, Rule: "deny .env"}
	dotdot := policy.PathMask{Path: "/w/..env", Under: "/w", Hide: true, Rule: "deny ..env"}
	secret := policy.PathMask{Path: "/w/**/.env", Under: "/w", Hide: true, Rule: "secrets.mask[0] .env", Secret: true}
	tests := []struct {
		name    string
		mount   *permissions.Mount
		masks   []policy.PathMask
		matches map[policy.PathMask]MaskMatch
		files   map[string]FileFact
		mounts  []string // destination type source, shallow first
		watches int
		wantErr string
	}{
		{"under a write grant: parents anchored, the match read-only, a watch for new ones", rw,
			[]policy.PathMask{hooks}, map[policy.PathMask]MaskMatch{hooks: {Paths: []string{"a/.git/hooks"}}},
			map[string]FileFact{"/h/w/a": dir, "/h/w/a/.git": dir, "/h/w/a/.git/hooks": dir},
			[]string{"/w/a bind /h/w/a rw", "/w/a/.git bind /h/w/a/.git rw", "/w/a/.git/hooks bind /h/w/a/.git/hooks ro"}, 1, ""},
		{"under a read grant: no anchors, no watch", ro,
			[]policy.PathMask{hooks}, map[policy.PathMask]MaskMatch{hooks: {Paths: []string{"a/.git/hooks"}}},
			map[string]FileFact{"/h/w/a": dir, "/h/w/a/.git": dir, "/h/w/a/.git/hooks": dir},
			[]string{"/w/a/.git/hooks bind /h/w/a/.git/hooks ro"}, 0, ""},
		{"a hidden file becomes /dev/null", ro,
			[]policy.PathMask{env}, map[policy.PathMask]MaskMatch{env: {Paths: []string{".env"}}},
			map[string]FileFact{"/h/w/.env": {}}, []string{"/w/.env bind /dev/null ro"}, 0, ""},
		{"a hidden directory becomes an empty tmpfs", ro,
			[]policy.PathMask{env}, map[policy.PathMask]MaskMatch{env: {Paths: []string{".env"}}},
			map[string]FileFact{"/h/w/.env": dir}, []string{"/w/.env tmpfs tmpfs ro"}, 0, ""},
		{"a literal path that is missing is watched under a write grant", rw,
			[]policy.PathMask{env}, map[policy.PathMask]MaskMatch{env: {}}, nil, nil, 1, ""},
		{"a symlinked match is refused with its target", ro,
			[]policy.PathMask{env}, map[policy.PathMask]MaskMatch{env: {Paths: []string{".env"}}},
			map[string]FileFact{"/h/w/.env": {IsLink: true, Link: "/etc/passwd"}}, nil, 0, "symlink (to /etc/passwd)"},
		// A secret is hidden where it lies; no parent is pinned, and a
		// symlink named like one is left alone (what it leads to is
		// masked under its own name, or not in the sandbox).
		{"a secret under a write grant pins no parent; new ones are watched", rw,
			[]policy.PathMask{secret}, map[policy.PathMask]MaskMatch{secret: {Paths: []string{"a/b/.env"}}},
			map[string]FileFact{"/h/w/a": dir, "/h/w/a/b": dir, "/h/w/a/b/.env": {}},
			[]string{"/w/a/b/.env bind /dev/null ro"}, 1, ""},
		{"a symlink named like a secret is not mounted over", ro,
			[]policy.PathMask{secret}, map[policy.PathMask]MaskMatch{secret: {Paths: []string{".env", "x/.env"}}},
			map[string]FileFact{"/h/w/.env": {IsLink: true, Link: "/etc/passwd"}, "/h/w/x": dir, "/h/w/x/.env": dir},
			[]string{"/w/x/.env tmpfs tmpfs ro"}, 0, ""},
		{"a parent that is not a directory is refused", rw,
			[]policy.PathMask{hooks}, map[policy.PathMask]MaskMatch{hooks: {Paths: []string{"a/.git/hooks"}}},
			map[string]FileFact{"/h/w/a": {IsLink: true, Link: "/x"}, "/h/w/a/.git": dir, "/h/w/a/.git/hooks": dir}, nil, 0, "is not a directory"},
		{"a walk that failed refuses the run", rw,
			[]policy.PathMask{hooks}, map[policy.PathMask]MaskMatch{hooks: {Err: errors.New("more than 50000 entries to check")}}, nil, nil, 0, "grant a narrower path"},
		{"a mask not looked up refuses the run", rw, []policy.PathMask{hooks}, nil, nil, nil, 0, "was not looked up"},
		// A name that starts with two dots is inside the mount: before,
		// every rel starting with ".." was taken for one outside it, and
		// a deny of /w/..env refused every grant of /w.
		{"a name starting with two dots is inside the mount", ro,
			[]policy.PathMask{dotdot}, map[policy.PathMask]MaskMatch{dotdot: {Paths: []string{"..env"}}},
			map[string]FileFact{"/h/w/..env": {}}, []string{"/w/..env bind /dev/null ro"}, 0, ""},
		{"a mask outside the mount refuses the run", ro,
			[]policy.PathMask{{Path: "/x", Under: "/w", Hide: true}}, nil, nil, nil, 0, "outside the mount"},
		{"a mask of a mount not granted is ignored", rw,
			[]policy.PathMask{{Path: "/elsewhere/.env", Under: "/elsewhere", Hide: true}}, nil, nil, nil, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &HostFacts{Masks: tt.matches, Files: tt.files}
			opts, watches, _, err := planMasks(tt.masks, []*permissions.Mount{tt.mount}, f, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrPlan) {
					t.Fatalf("err %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := &specs.Spec{}
			for _, o := range opts {
				if err := o(s); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for _, m := range s.Mounts {
				mode := "rw"
				if slices.Contains(m.Options, "ro") {
					mode = "ro"
				}
				got = append(got, m.Destination+" "+m.Type+" "+m.Source+" "+mode)
			}
			if !slices.Equal(got, tt.mounts) {
				t.Errorf("mounts\n got %q\nwant %q", got, tt.mounts)
			}
			if len(watches) != tt.watches {
				t.Errorf("%d watches, want %d", len(watches), tt.watches)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The spec's user is the one the tool runs as, in every tier: the none
// tier's is the invoking user; the landlock tier's, which has no user
// namespace, a uid of the run's own as root (whatever the privilege) and
// else this process's; root's same-as-user tool in the container tier the
// id reserved for sandboxed.
func TestPlanUser(t *testing.T) {
	reserved := &isolation.ID{UID: 0x70000000, GID: 0x70000000}
	root := &HostFacts{Root: true, Reserved: reserved}
	sudo := &HostFacts{Root: true, Reserved: reserved, UID: 1000, GID: 1000}
	user := &HostFacts{UID: 1000, GID: 1000, Self: isolation.ID{UID: 1000, GID: 1000}}
	runs := landlock.ToolID("RUN")
	for _, tc := range []struct {
		name string
		t    isolation.Tier
		kube bool
		priv privilege.Privilege
		f    *HostFacts
		want *isolation.ID // nil: the spec's default for the privilege
	}{
		{"process, root", isolation.TierProcess, false, privilege.SameAsUser, root, &isolation.ID{}},
		{"process, reduced", isolation.TierProcess, false, privilege.Reduced, root, nil},
		{"container, root", isolation.TierContainer, false, privilege.SameAsUser, root, reserved},
		{"container, root, no reserved range", isolation.TierContainer, false, privilege.SameAsUser, &HostFacts{Root: true}, &isolation.ID{}},
		{"container, sudo", isolation.TierContainer, false, privilege.SameAsUser, sudo, &isolation.ID{UID: 1000, GID: 1000}},
		{"container, rootless", isolation.TierContainer, false, privilege.SameAsUser, user, &isolation.ID{UID: 1000, GID: 1000}},
		{"container, reduced", isolation.TierContainer, false, privilege.Reduced, root, nil},
		{"pod, root", isolation.TierContainer, true, privilege.SameAsUser, root, &isolation.ID{}}, // WithTier: nobody
		{"landlock, root", isolation.TierLandlock, false, privilege.SameAsUser, root, &isolation.ID{UID: runs, GID: runs}},
		{"landlock, root, reduced", isolation.TierLandlock, false, privilege.Reduced, sudo, &isolation.ID{UID: runs, GID: runs}},
		{"landlock, rootless, reduced", isolation.TierLandlock, false, privilege.Reduced, user, &isolation.ID{UID: 1000, GID: 1000}},
		{"none, reduced", isolation.TierNone, false, privilege.Reduced, user, &isolation.ID{UID: 1000, GID: 1000}},
	} {
		got, ok := planUser(tc.t, tc.kube, tc.priv, tc.f, "RUN")
		if ok != (tc.want != nil) || (ok && got != *tc.want) {
			t.Errorf("%s: planUser = %+v, %t; want %+v", tc.name, got, ok, tc.want)
		}
	}
	if !landlock.IsToolID(runs) || runs == landlock.ToolID("RUN2") {
		t.Errorf("landlock.ToolID(RUN) = %d: not in its range, or not the run's own", runs)
	}
}

// A run outside namespaces (the landlock and none tiers) names the run's
// cgroup where one can hold its limits, with the init's spare threads in
// the pids limit; where none can, it names none, and the pids limit is
// the tool's own: RLIMIT_NPROC on the tool's uid, which the init's threads
// are not counted against. The process tier always has its cgroup.
func TestPlanOutsideCgroup(t *testing.T) {
	const yaml = "name: t\ndescription: d\nbash: echo hi\nsandboxed:\n  pids-limit: 16\n"
	for _, tc := range []struct {
		tier     isolation.Tier
		cgroup   bool
		wantPath bool
		wantPids int64
	}{
		{isolation.TierLandlock, true, true, 16 + isolation.InitSpareThreads},
		{isolation.TierLandlock, false, false, 16},
		{isolation.TierNone, true, true, 16 + isolation.InitSpareThreads},
		{isolation.TierNone, false, false, 16},
		{isolation.TierProcess, false, true, 16 + isolation.InitSpareThreads},
	} {
		b, grants, f := planFixture(t, yaml)
		f.Cgroup = tc.cgroup
		d := allow(64<<20, 16) // as the policy decides the definition's pids-limit
		d.Isolation = tc.tier
		p, _, _, err := buildPlan(PlanInput{RunID: "RUN", Bound: b, Grants: grants, Decision: d, Facts: f})
		if err != nil {
			t.Fatalf("%s, cgroup %t: %v", tc.tier, tc.cgroup, err)
		}
		if path := p.Spec.Linux.CgroupsPath; (path != "") != tc.wantPath || isolation.SpecPids(p.Spec) != tc.wantPids || p.Limits.Pids != 16 {
			t.Errorf("%s, cgroup %t: cgroup %q, spec pids %d, the tool's %d; want a cgroup %t and %d", tc.tier, tc.cgroup, path, isolation.SpecPids(p.Spec), p.Limits.Pids, tc.wantPath, tc.wantPids)
		}
		// The cgroup holds memory and pids as written: no approximation
		// is marked (nor noted in the result) where it does.
		var fields []string
		for _, a := range p.Approximations {
			fields = append(fields, a.Field)
		}
		approx := slices.Contains(fields, specconv.FieldMemory) && slices.Contains(fields, specconv.FieldPids)
		if approx == tc.wantPath || (tc.wantPath && len(approximationNotes(p)) > 0) {
			t.Errorf("%s, cgroup %t: approximations %v (notes %q), want memory and pids approximated %t", tc.tier, tc.cgroup, fields, approximationNotes(p), !tc.wantPath)
		}
	}
}

// TestPlanLimitsAreTheDecision checks that the plan holds every limit as
// the policy decided it, and the spec what the plan holds: the planner
// decides none of them a second time.
func TestPlanLimitsAreTheDecision(t *testing.T) {
	const head = "name: t\ndescription: d\nbash: echo hi\ntags: [read]\n"
	capped := policy.Default()
	capped.Limits.CPUs = policy.CPULimit{Default: 0, Max: 2}
	capped.Limits.Tmpfs.Max = 32 << 20
	capped.Limits.Pids.Max = 100
	defs := []string{
		head,
		head + "security:\n  execution-privilege: reduced\n",
		head + "security:\n  execution-privilege: reduced\nsandboxed:\n  pids-limit: 90\n",
		head + "sandboxed:\n  pids-limit: 16\n  cpus: 0.5\n  tmpfs-size: 16MiB\n",
		head + "sandboxed:\n  pids-limit: 5000\n  cpus: 8\n  tmpfs-size: 2GiB\nresources:\n  max-memory: 64GiB\n  timeout: 2h\n",
	}
	for _, pol := range []*policy.Policy{policy.Default(), capped} {
		for _, yaml := range defs {
			b, grants, f := planFixture(t, yaml)
			d := pol.Decide(policy.NewRequest(b.Def, grants, f.Cwd, f.Home))
			d.Verdict = policy.Allow // the limits are decided whatever the verdict
			p, _, _, err := buildPlan(PlanInput{RunID: "RUN", Bound: b, Grants: grants, Decision: &d, Facts: f})
			if err != nil {
				t.Fatalf("%q: %v", yaml, err)
			}
			want := isolation.Limits{MemoryBytes: d.Limits.MemoryBytes, Pids: d.Limits.Pids, CPUs: d.Limits.CPUs,
				TmpfsBytes: d.Limits.TmpfsBytes, Timeout: d.Limits.Timeout, KillGrace: DefaultKillGrace}
			if p.Limits != want || planLimits(&d) != want {
				t.Errorf("%q: plan's limits %+v, want the decision's %+v", yaml, p.Limits, want)
			}
			if got := isolation.SpecPids(p.Spec); got != d.Limits.Pids+isolation.InitSpareThreads {
				t.Errorf("%q: spec pids %d, want the decision's %d and %d spare", yaml, got, d.Limits.Pids, isolation.InitSpareThreads)
			}
			if tmp, err := tmpfsSize(p.Spec); err != nil || tmp != d.Limits.TmpfsBytes {
				t.Errorf("%q: spec /tmp %d (%v), want the decision's %d", yaml, tmp, err, d.Limits.TmpfsBytes)
			}
			cpu := p.Spec.Linux.Resources.CPU
			switch {
			case d.Limits.CPUs == 0 && cpu != nil:
				t.Errorf("%q: a CPU quota %+v the decision has none of", yaml, cpu)
			case d.Limits.CPUs > 0 && (cpu == nil || *cpu.Quota != isolation.CPUQuota(d.Limits.CPUs) || *cpu.Period != isolation.CPUPeriod):
				t.Errorf("%q: spec CPU %+v, want the decision's %g CPUs", yaml, cpu, d.Limits.CPUs)
			}
		}
	}
	// What the decision holds, for the cases the policy's own tests pin.
	b, grants, f := planFixture(t, defs[1])
	if d := policy.Default().Decide(policy.NewRequest(b.Def, grants, f.Cwd, f.Home)); d.Limits.Pids != policy.ReducedPids {
		t.Errorf("reduced privilege: pids %d, want %d", d.Limits.Pids, policy.ReducedPids)
	}
	b, grants, f = planFixture(t, defs[4])
	if d := capped.Decide(policy.NewRequest(b.Def, grants, f.Cwd, f.Home)); d.Limits.CPUs != 2 || d.Limits.TmpfsBytes != 32<<20 || d.Limits.Pids != 100 {
		t.Errorf("above the caps: %+v, want them clamped", d.Limits)
	}
}

// A CPU quota needs a cgroup: outside namespaces without one, the plan is
// refused with the fix for where the quota comes from — the definition's
// sandboxed.cpus, or the policy's limits.cpus.
func TestPlanRefusesCPUWithoutCgroup(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		cgroup     bool
		want       string // "" for planned
	}{
		{"the definition's", "name: t\ndescription: d\nbash: echo hi\nsandboxed:\n  cpus: 0.5\n", false, "remove sandboxed.cpus"},
		{"the policy's", "name: t\ndescription: d\nbash: echo hi\n", false, "limits.cpus.default and limits.cpus.max to 0"},
		{"in a cgroup", "name: t\ndescription: d\nbash: echo hi\n", true, ""},
	} {
		b, grants, f := planFixture(t, tc.yaml)
		f.Cgroup = tc.cgroup
		d := allow(64<<20, 16)
		d.Isolation, d.Limits.CPUs = isolation.TierLandlock, 0.5
		p, _, _, err := buildPlan(PlanInput{RunID: "RUN", Bound: b, Grants: grants, Decision: d, Facts: f})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want == "" && p.Spec.Linux.Resources.CPU == nil:
			t.Errorf("%s: no CPU quota in the spec", tc.name)
		case tc.want != "" && (!errors.Is(err, isolation.ErrUnsupported) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want refused with %q", tc.name, err, tc.want)
		}
	}
}
