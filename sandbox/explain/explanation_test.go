package explain

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/internal/tier"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

func explainFor(t *testing.T, def *tool.Definition, perms []string, items []policy.Item, verdict policy.Verdict) Explanation {
	t.Helper()
	return Explain(inputFor(t, def, perms, items, verdict))
}

// inputFor is explainFor's input, for a test to change before Explain.
func inputFor(t *testing.T, def *tool.Definition, perms []string, items []policy.Item, verdict policy.Verdict) ExplainInput {
	t.Helper()
	var grants []permissions.Grant
	var templ []TemplatedPermission
	for i, p := range perms {
		if ps := permissions.PermissionParams(p); len(ps) > 0 {
			templ = append(templ, TemplatedPermission{Index: i, Permission: p, Params: ps})
			continue
		}
		gs, err := permissions.Resolve([]string{p}, "/work/proj", "/home/u")
		if err != nil {
			t.Fatalf("resolve %s: %v", p, err)
		}
		gs[0].Index = i
		grants = append(grants, gs[0])
	}
	def.Security.RequiredPermissions = perms
	pl := planOf("process", 1000, 1000)
	pl.Spec.Linux = &specs.Linux{Resources: &specs.LinuxResources{
		Memory: &specs.LinuxMemory{Limit: ptr(512 << 20), Swap: ptr(512 << 20)},
		Pids:   &specs.LinuxPids{Limit: ptr(256)},
	}}
	pl.Limits.Timeout = 5 * time.Minute
	pl.Spec.Mounts = []specs.Mount{{Source: "/work/proj/src", Destination: "/work/proj/src", Type: "bind", Options: []string{"bind", "ro", "nosuid", "nodev"}}}
	return ExplainInput{
		Def: def, Grants: grants, Templated: templ,
		Decision: policy.Decision{Items: items, Verdict: verdict, Tier: policy.TierReadOnly, Limits: policy.Effective{OutputBytes: 10 << 20}},
		Policy:   PolicyInfo{Source: "built-in default"},
		Plan:     pl, Planned: true,
		HostPath: []string{"/usr/local/bin", "/usr/bin", "/home/u/go/bin"},
		Home:     "/home/u",
	}
}

// planOf is a plan of tier t whose spec runs the tool as uid:gid, for
// the review to read.
func planOf(t string, uid, gid uint32) *isolation.Plan {
	return &isolation.Plan{Tier: tier.Tier(t), Privilege: privilege.SameAsUser,
		Spec: &specs.Spec{Process: &specs.Process{User: specs.User{UID: uid, GID: gid}}}}
}

func ptr(n int64) *int64 { return &n }

func riskCats(e Explanation) map[string]string {
	m := map[string]string{}
	for _, r := range e.Risks {
		m[r.Category+" "+r.Subject] = r.Severity
	}
	return m
}

func TestExplainAllowedSummary(t *testing.T) {
	def := &tool.Definition{Name: "t", Tags: []string{"read"}}
	e := explainFor(t, def, []string{"filesystem:read:src", "filesystem:write:out"}, []policy.Item{
		{Subject: "filesystem:read:/work/proj/src", Kind: "grant", Verdict: policy.Allow, Rule: "default: reads are allowed", Grant: &permissions.Grant{Index: 0}},
	}, policy.Allow)
	want := "ALLOWED: runs in process isolation as uid 1000; reads 1 path, writes 1 path, no network"
	if e.Verdict.Summary != want {
		t.Errorf("summary %q, want %q", e.Verdict.Summary, want)
	}
	fs := e.Filesystem[0]
	if fs.Rule != "default: reads are allowed" || len(fs.Mechanisms) == 0 || fs.Mechanisms[0].Kind != MechBind || fs.Mechanisms[0].Access != "read-only" {
		t.Errorf("filesystem point %+v", fs)
	}
	if len(e.Risks) != 0 {
		t.Errorf("unexpected risks %+v", e.Risks)
	}
}

func TestExplainRiskNotes(t *testing.T) {
	f := false
	def := &tool.Definition{
		Name: "t",
		Parameters: []tool.Parameter{
			{Name: "Q", Type: tool.TypeString, EscapeShell: &f},
			{Name: "MODE", Type: tool.TypeString, EscapeShell: &f, Validation: &tool.Validation{Enum: []any{"a", "b"}}},
			{Name: "FLAG", Type: tool.TypeBoolean, EscapeShell: &f},
		},
		Environment: &tool.Environment{Inherit: true},
	}
	e := explainFor(t, def, []string{
		"network:external:*",
		"network:external:*.com",
		"network:external:*.example.com",
		"filesystem:write:/usr/local/bin",
		"filesystem:write:~",
		"filesystem:read:/var/run",
		"filesystem:write:{DIR}",
		"network:localhost:6379",
		"env:AWS_SECRET_ACCESS_KEY",
	}, nil, policy.Allow)
	got := riskCats(e)
	for key, sev := range map[string]string{
		RiskExfiltration + " network:external:*":               "high",
		RiskExfiltration + " network:external:*.com":           "high",
		RiskExfiltration + " network:external:*.example.com":   "medium",
		RiskCodeExecution + " filesystem:write:/usr/local/bin": "high",
		RiskCodeExecution + " filesystem:write:/home/u":        "high",
		RiskHostRoot + " filesystem:read:/var/run":             "high",
		RiskCallerPath + " filesystem:write:{DIR}":             "high",
		RiskHostServices + " network:localhost:6379":           "high",
		RiskSecretLeak + " env:AWS_SECRET_ACCESS_KEY":          "medium",
		RiskSecretLeak + " environment.inherit":                "high",
		RiskCommandInjection + " parameter Q":                  "high",
		RiskUntagged + " security tier":                        "high",
	} {
		if got[key] != sev {
			t.Errorf("risk %q: severity %q, want %q (all: %v)", key, got[key], sev, got)
		}
	}
	for _, not := range []string{RiskCommandInjection + " parameter MODE", RiskCommandInjection + " parameter FLAG"} {
		if _, ok := got[not]; ok {
			t.Errorf("unexpected risk %q", not)
		}
	}
	if !e.Verdict.DependsOnArguments || !strings.Contains(e.Verdict.Summary, "paths from DIR are decided when given") {
		t.Errorf("verdict %+v", e.Verdict)
	}
	var templated *Point
	for i := range e.Filesystem {
		if e.Filesystem[i].Templated {
			templated = &e.Filesystem[i]
		}
	}
	if templated == nil || templated.Verdict != VerdictDepends || templated.Subject != "filesystem:write:{DIR}" {
		t.Errorf("templated point %+v", templated)
	}
}

func TestExplainVerdicts(t *testing.T) {
	def := &tool.Definition{Name: "t", Tags: []string{"read"}}
	e := explainFor(t, def, []string{"network:external:*"}, []policy.Item{
		{Subject: "network:external:*", Kind: "grant", Verdict: policy.NeedsApproval, Rule: "default: egress to any host (*) needs approval",
			ApproveFlag: "network:external:*", Grant: &permissions.Grant{Index: 0}},
	}, policy.NeedsApproval)
	if e.Verdict.Decision != DecisionNeedsApproval || !strings.HasPrefix(e.Verdict.Summary, "NEEDS APPROVAL: network:external:*") ||
		len(e.Verdict.ApproveFlags) != 1 || e.Verdict.ApproveFlags[0] != "--approve 'network:external:*'" {
		t.Errorf("verdict %+v", e.Verdict)
	}
	if !strings.Contains(e.Verdict.Summary, "reaches any public host") {
		t.Errorf("summary %q", e.Verdict.Summary)
	}

	e = explainFor(t, def, []string{"filesystem:read:~/.ssh"}, []policy.Item{
		{Subject: "filesystem:read:/home/u/.ssh", Kind: "grant", Verdict: policy.Deny, Rule: "paths.deny[0] ~/.ssh", Grant: &permissions.Grant{Index: 0}},
	}, policy.Deny)
	if e.Verdict.Decision != DecisionDenied || e.Verdict.Summary != "DENIED: filesystem:read:/home/u/.ssh by paths.deny[0] ~/.ssh" {
		t.Errorf("verdict %+v", e.Verdict)
	}
	if m := e.Filesystem[0].Mechanisms; len(m) != 1 || m[0].Kind != MechNone {
		t.Errorf("a denied grant is enforced by nothing, got %+v", m)
	}
}

func TestExplainNoIsolation(t *testing.T) {
	def := &tool.Definition{Name: "t", Tags: []string{"run"}, Security: tool.Security{Isolation: tool.IsolationNone}}
	in := ExplainInput{Def: def, Decision: policy.Decision{Verdict: policy.Allow}, Plan: planOf("none", 1000, 0)}
	in.Plan.Privilege = ""
	e := Explain(in)
	if !strings.HasPrefix(e.Verdict.Summary, "ALLOWED: runs unsandboxed on the host as uid 1000") {
		t.Errorf("summary %q", e.Verdict.Summary)
	}
	if riskCats(e)[RiskNoIsolation+" isolation"] != "high" {
		t.Errorf("risks %+v", e.Risks)
	}
	for _, p := range e.Network {
		if p.Subject == "network" && (len(p.Mechanisms) == 0 || p.Mechanisms[0].Kind != MechNone) {
			t.Errorf("network of an unsandboxed tool: %+v", p)
		}
	}
}

func TestDiff(t *testing.T) {
	def1 := &tool.Definition{Name: "t", Version: "1", Tags: []string{"read"}}
	def2 := &tool.Definition{Name: "t", Version: "2", Tags: []string{"read"}, Security: tool.Security{ExecutionPrivilege: tool.PrivilegeElevated}}
	old := explainFor(t, def1, []string{"filesystem:read:src"}, nil, policy.Allow)
	newer := explainFor(t, def2, []string{"filesystem:read:src", "network:external:api.example.com"}, nil, policy.Allow)
	d := Diff(old, newer)
	if len(d.PermissionsAdded) != 1 || d.PermissionsAdded[0] != "network:external:api.example.com" || len(d.PermissionsRemoved) != 0 {
		t.Errorf("permissions: %+v", d)
	}
	found := false
	for _, c := range d.Changes {
		if c.Field == "execution-privilege (requested)" && c.New == "execution-privilege: elevated" {
			found = true
		}
	}
	if !found {
		t.Errorf("no privilege change in %+v", d.Changes)
	}
	if d2 := Diff(old, old); !d2.Empty() {
		t.Errorf("a tool against itself: %+v", d2)
	}
}

// The mechanism's value is what it is set to; where that is not what the
// tool gets (the init's spare threads in the cgroup), both are named.
func TestPidsMechanism(t *testing.T) {
	for _, c := range []struct {
		runtime         string
		pids, toolPids  int64
		kind, value     string
		detail, meaning string
	}{
		{"", 24, 0, MechCgroup, "24", "cgroup pids.max 24", "up to 24 "},
		{"", 26, 24, MechCgroup, "26", "cgroup pids.max 26: the tool's 24 and 2 spare threads of the sandbox's init", "up to 24 "},
		{"runsc", 26, 24, MechRlimit, "24", "RLIMIT_NPROC 24 in gVisor's kernel", "up to 24 "},
	} {
		pl := &isolation.Plan{Runtime: c.runtime, Limits: isolation.Limits{Pids: c.toolPids},
			Spec: &specs.Spec{Linux: &specs.Linux{Resources: &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: ptr(c.pids)}}}}}
		m := pidsMechanism(pl)
		if m.Kind != c.kind || m.Value != c.value || !strings.HasPrefix(m.Detail, c.detail) {
			t.Errorf("runtime %q pids %d/%d: %+v", c.runtime, c.pids, c.toolPids, m)
		}
		if got := fmt.Sprintf("up to %d ", toolPids(pl)); got != c.meaning {
			t.Errorf("runtime %q pids %d/%d: the tool gets %q, want %q", c.runtime, c.pids, c.toolPids, got, c.meaning)
		}
	}
}

// Risk notes about what the policy protects read the plan's masked paths:
// an operator policy without the rule makes the claim go, not stay.
func TestRiskNotesReadThePlan(t *testing.T) {
	g := permissions.Grant{Kind: permissions.KindMount, Mount: &permissions.Mount{HostPath: "/r/.git", Write: true}}
	for _, c := range []struct {
		name   string
		masked []isolation.MaskedPath
		want   string
	}{
		{"no rule", nil, "(the plan does not keep /r/.git/hooks read-only)"},
		{"read-only", []isolation.MaskedPath{{Source: "/r/.git/hooks", Rule: "paths.deny-write[0] **/.git/hooks"}}, "(the policy keeps /r/.git/hooks read-only: paths.deny-write[0] **/.git/hooks)"},
		{"a parent hidden", []isolation.MaskedPath{{Source: "/r/.git", Hide: true, Rule: "paths.deny[3] **/.git"}}, "(the policy hides /r/.git/hooks: paths.deny[3] **/.git)"},
		{"another path", []isolation.MaskedPath{{Source: "/r/.git/config", Rule: "paths.deny-write[1] **/.git/config"}}, "(the plan does not keep /r/.git/hooks read-only)"},
	} {
		x := &explainer{in: ExplainInput{Plan: &isolation.Plan{Masked: c.masked}}, e: &Explanation{}}
		x.mountRisks(g, "")
		if len(x.e.Risks) != 1 || !strings.HasSuffix(x.e.Risks[0].Note, c.want) {
			t.Errorf("%s: risks %+v, want a note ending %q", c.name, x.e.Risks, c.want)
		}
	}
	x := &explainer{in: ExplainInput{Plan: &isolation.Plan{Masked: []isolation.MaskedPath{{Source: "/home/ada/.ssh", Hide: true}, {Source: "/home/ada/x/.git/hooks"}}}}, e: &Explanation{}}
	x.mountRisks(permissions.Grant{Kind: permissions.KindMount, Mount: &permissions.Mount{HostPath: "/home/ada"}}, "/home/ada")
	if len(x.e.Risks) != 1 || !strings.HasSuffix(x.e.Risks[0].Note, "(the plan hides 1 paths under it and makes 1 read-only)") {
		t.Errorf("home grant: %+v", x.e.Risks)
	}
}

// The landlock tier's network says what enforces it there: no namespace,
// the supervised connect to the proxy's port, Landlock; a localhost grant
// goes through the init too.
func TestExplainLandlockNetwork(t *testing.T) {
	mechs := func(p Point) string {
		var b strings.Builder
		for _, m := range p.Mechanisms {
			fmt.Fprintf(&b, "%s=%s: %s\n", m.Kind, m.Value, m.Detail)
		}
		return b.String()
	}
	explain := func(perms []string, proxyPort int) Explanation {
		var grants []permissions.Grant
		for i, p := range perms {
			gs, err := permissions.Resolve([]string{p}, "/work/proj", "/home/u")
			if err != nil {
				t.Fatal(err)
			}
			gs[0].Index = i
			grants = append(grants, gs[0])
		}
		def := &tool.Definition{Name: "t"}
		def.Security.RequiredPermissions = perms
		pl := planOf("landlock", 0, 0)
		if proxyPort > 0 {
			pl.Egress = &isolation.Egress{ProxyPort: proxyPort}
		}
		return Explain(ExplainInput{Def: def, Grants: grants, Decision: policy.Decision{Verdict: policy.Allow}, Policy: PolicyInfo{Source: "built-in default"},
			Plan: pl, Planned: true})
	}
	e := explain([]string{"network:external:example.com"}, 3128)
	base := e.Network[len(e.Network)-1]
	got := mechs(base)
	for _, want := range []string{"seccomp=: every connect() waits for the run's init", "127.0.0.1:3128 alone", "every Unix socket fail", "tier=landlock: Landlock (ABI 4)", "proxy=:"} {
		if !strings.Contains(got, want) {
			t.Errorf("network point lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "namespace") && !strings.Contains(base.Reason, "no network namespace") {
		t.Errorf("network point speaks of a namespace: %+v", base)
	}
	e = explain([]string{"network:localhost:8080"}, 3128)
	if got := mechs(e.Network[0]); !strings.Contains(got, "forward=8080: the tool's connect() to 127.0.0.1:8080 is answered by the run's init") {
		t.Errorf("localhost grant: %s", got)
	}
	e = explain(nil, 0)
	if got := mechs(e.Network[len(e.Network)-1]); !strings.Contains(got, "socket() fails for every family") {
		t.Errorf("no network: %s", got)
	}
}

// The landlock tier's isolation and privilege points say what runs there:
// no namespaces, and the plan's uid (as root one of the run's own), the
// same on the host.
func TestExplainLandlockPrivilege(t *testing.T) {
	def := &tool.Definition{Name: "t"}
	pl := planOf("landlock", 0, 0)
	pl.Spec.Process.NoNewPrivileges = true
	pl.Spec.Process.User = specs.User{UID: 1526726700, GID: 1526726700}
	e := Explain(ExplainInput{Def: def, Decision: policy.Decision{Verdict: policy.Allow}, Policy: PolicyInfo{Source: "built-in default"},
		Plan: pl, Planned: true})
	var iso, priv string
	for _, p := range e.Privilege {
		for _, m := range p.Mechanisms {
			switch p.Subject {
			case "isolation":
				iso += m.Detail + "\n"
			case "execution-privilege":
				priv += m.Detail + "\n"
			}
		}
	}
	if !strings.Contains(iso, "landlock tier: no namespaces") || strings.Contains(iso, "process tier") {
		t.Errorf("isolation point: %s", iso)
	}
	if !strings.Contains(priv, "uid 1526726700, gid 1526726700, the same ids on the host") || !strings.Contains(priv, "uid and gid of the run's own") {
		t.Errorf("execution-privilege point: %s", priv)
	}
}

// The landlock tier has no tmpfs: explain says its /tmp size caps each
// file (RLIMIT_FSIZE), not the scratch directory — the spec's rlimit,
// not the number the plan's Limits keep.
func TestExplainLandlockScratchSize(t *testing.T) {
	def := &tool.Definition{Name: "t"}
	pl := planOf("landlock", 0, 0)
	pl.Limits.TmpfsBytes = 32 << 20
	pl.Spec.Process.Rlimits = []specs.POSIXRlimit{{Type: "RLIMIT_FSIZE", Hard: 64 << 20, Soft: 64 << 20}}
	e := Explain(ExplainInput{Def: def, Decision: policy.Decision{Verdict: policy.Allow}, Policy: PolicyInfo{Source: "built-in default"},
		Plan: pl, Planned: true})
	var got string
	for _, p := range e.Filesystem {
		if p.Subject != "host filesystem" {
			continue
		}
		for _, m := range p.Mechanisms {
			got += string(m.Kind) + "=" + m.Value + ": " + m.Detail + "\n"
		}
	}
	if !strings.Contains(got, "rlimit=RLIMIT_FSIZE=67108864") || !strings.Contains(got, "not for all of them together") {
		t.Errorf("host filesystem point: %s", got)
	}
	found := false
	for _, p := range e.Resources {
		if p.Subject == "limits.tmpfs" {
			found = p.Mechanisms[0].Value == "RLIMIT_FSIZE=67108864" && strings.Contains(p.Meaning, "files of up to 64MiB each")
		}
	}
	if !found {
		t.Errorf("no limits.tmpfs point of the spec's rlimit: %+v", e.Resources)
	}
}

// A pod's isolation point says it is a pod on the cluster, not a Docker
// container of this host's engine.
func TestExplainKubernetesIsolation(t *testing.T) {
	def := &tool.Definition{Name: "t"}
	pl := planOf("container", 65534, 65534)
	pl.Backend, pl.Image, pl.Runtime = "kubernetes", "runner:1", "gvisor"
	e := Explain(ExplainInput{Def: def, Decision: policy.Decision{Verdict: policy.Allow}, Policy: PolicyInfo{Source: "built-in default"},
		Plan: pl, Planned: true})
	var got string
	for _, p := range e.Privilege {
		if p.Subject == "isolation" {
			for _, m := range p.Mechanisms {
				got += m.Detail + "\n"
			}
		}
	}
	if !strings.Contains(got, "a pod of its own on the operator's cluster from image runner:1 (RuntimeClass gvisor)") || strings.Contains(got, "Docker") {
		t.Errorf("isolation point of a pod: %s", got)
	}
}

// What a write grant lets the tool plant (a shell start-up file, a
// directory on PATH, the user's programs) and whether a grant reaches the
// Docker socket is checked against the plan's masks, that is against the
// policy in force: a rule of the policy lowers the note and names itself;
// without it, or for a path the plan does not mask, the note stands.
func TestRiskNotesCheckThePolicyInForce(t *testing.T) {
	home := permissions.Grant{Kind: permissions.KindMount, Mount: &permissions.Mount{HostPath: "/home/ada", Write: true}}
	root := permissions.Grant{Kind: permissions.KindMount, Mount: &permissions.Mount{HostPath: "/"}}
	bashrc := isolation.MaskedPath{Source: "/home/ada/.bashrc", Hide: true, Rule: "paths.deny[12] ~/.bashrc"}
	allStartup := []isolation.MaskedPath{{Source: "/home/ada/.bashrc", Hide: true, Rule: "paths.deny[12] ~/.bashrc"}}
	for _, rc := range append(append([]string(nil), shellStartup[1:]...), "bin", ".local/bin") {
		allStartup = append(allStartup, isolation.MaskedPath{Source: "/home/ada/" + rc, Rule: "paths.deny-write[0] ~/" + rc})
	}
	for _, c := range []struct {
		name     string
		g        permissions.Grant
		hostPath []string
		masked   []isolation.MaskedPath
		cat, sev string
		want     string
	}{
		{"startup, no rule", home, nil, nil, RiskCodeExecution, "high", "writable /home/ada/.bashrc, which runs at log-in or shell start: code planted there runs on the host outside the sandbox (the plan does not keep /home/ada/.bashrc read-only)"},
		{"startup, one of them masked", home, nil, []isolation.MaskedPath{bashrc}, RiskCodeExecution, "high", "writable /home/ada/.bash_profile, which runs at log-in or shell start: code planted there runs on the host outside the sandbox (the plan does not keep /home/ada/.bash_profile read-only)"},
		{"startup, every one masked", home, nil, allStartup, RiskCodeExecution, "low", "covers /home/ada/.bashrc, which runs at log-in or shell start, but the policy hides it (paths.deny[12] ~/.bashrc): nothing can be planted there"},
		{"PATH, no rule", home, []string{"/home/ada/go/bin"}, allStartup, RiskCodeExecution, "high", "writable /home/ada/go/bin, a directory on PATH: a program planted there runs the next time the user types its name (the plan does not keep /home/ada/go/bin read-only)"},
		{"docker socket, no rule", root, nil, nil, RiskHostRoot, "high", "reaches /var/run/docker.sock: whoever can talk to the Docker daemon is root on the host (the plan does not hide it)"},
		{"docker socket, read-only", root, nil, []isolation.MaskedPath{{Source: "/var/run", Rule: "paths.deny-write[9] /var/run"}, {Source: "/run", Rule: "paths.deny-write[8] /run"}}, RiskHostRoot, "high", "which does not stop a connect())"},
		{"docker socket, hidden", root, nil, []isolation.MaskedPath{{Source: "/var/run", Hide: true, Rule: "paths.deny[30] /var/run"}, {Source: "/run", Hide: true, Rule: "paths.deny[29] /run"}}, RiskHostRoot, "low", "covers /var/run/docker.sock, the Docker daemon's socket (root on the host), but the policy hides it (paths.deny[30] /var/run): the tool cannot connect to it"},
	} {
		x := &explainer{in: ExplainInput{Plan: &isolation.Plan{Masked: c.masked}, HostPath: c.hostPath}, e: &Explanation{}}
		x.mountRisks(c.g, "/home/ada")
		var got *Risk
		for i, r := range x.e.Risks {
			if r.Category == c.cat {
				got = &x.e.Risks[i]
			}
		}
		if got == nil || got.Severity != c.sev || !strings.HasSuffix(got.Note, c.want) {
			t.Errorf("%s: risks %+v, want %s %s ending %q", c.name, x.e.Risks, c.sev, c.cat, c.want)
		}
	}
}

// The elevated risk says what the spec gives the tool, not a fixed story.
func TestElevatedRiskReadsTheSpec(t *testing.T) {
	pl := planOf("process", 0, 0)
	pl.Privilege = privilege.Elevated
	pl.Spec.Process.Capabilities = &specs.LinuxCapabilities{Effective: []string{"CAP_CHOWN", "CAP_KILL"}}
	pl.Spec.Linux = &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.UserNamespace}}}
	e := Explain(ExplainInput{Def: &tool.Definition{Name: "t", Tags: []string{"run"}}, Plan: pl, Planned: true})
	for _, r := range e.Risks {
		if r.Category == RiskElevated {
			if want := "elevated: root with 2 capabilities (the execution-privilege point lists them) inside a user namespace"; !strings.HasPrefix(r.Note, want) {
				t.Errorf("elevated risk %q, want it to start %q", r.Note, want)
			}
			return
		}
	}
	t.Errorf("no elevated risk in %+v", e.Risks)
}

// The untagged and isolation-none notes say what the policy in force
// decided, with its rule, not what the built-in policy would.
func TestRiskNotesNameThePolicysRule(t *testing.T) {
	def := &tool.Definition{Name: "t"}
	def.Security.Isolation = tool.IsolationNone
	e := Explain(ExplainInput{Def: def, Plan: planOf("process", 1000, 1000), Planned: true, Decision: policy.Decision{
		Verdict: policy.Allow, Tier: policy.TierUnknown, Items: []policy.Item{
			{Kind: policy.ItemTool, Subject: "tool", Verdict: policy.Allow, Risk: policy.RiskLow, Rule: "approval.auto-approve[0] tier:unknown"},
			{Kind: policy.ItemIsolation, Subject: "isolation", Verdict: policy.Allow, Rule: "sources[0].isolation.minimum process"},
		}}})
	got := map[string]string{}
	for _, r := range e.Risks {
		got[r.Category] = r.Note
	}
	for cat, want := range map[string]string{
		RiskUntagged:    "; the policy in force: tier unknown allowed, low risk (approval.auto-approve[0] tier:unknown)",
		RiskNoIsolation: "asks for isolation none: the policy runs it in process here (sources[0].isolation.minimum process), but wherever a policy lets it run in none, no grant would be enforced",
	} {
		if !strings.HasSuffix(got[cat], want) {
			t.Errorf("%s note %q, want it to end %q", cat, got[cat], want)
		}
	}
}

// A mask of the policy over a path that did not exist when the run was
// planned has nothing mounted over it: in a write grant the review says
// the tool may create it, where it said the path was hidden.
func TestMaskNotThereInAWriteGrant(t *testing.T) {
	gs, err := permissions.Resolve([]string{"filesystem:write:/w"}, "/w", "/home/u")
	if err != nil {
		t.Fatal(err)
	}
	def := &tool.Definition{Name: "t", Tags: []string{"write"}}
	def.Security.RequiredPermissions = []string{"filesystem:write:/w"}
	pl := planOf("process", 1000, 1000)
	pl.Spec.Mounts = []specs.Mount{{Source: "/w", Destination: "/w", Type: "bind", Options: []string{"bind", "rw"}}}
	pl.Masked = []isolation.MaskedPath{{Path: "/w/.ssh", Source: "/w/.ssh", Hide: true, Rule: "paths.deny[0] /w/.ssh"}}
	masks := []policy.PathMask{
		{Path: "/w/.ssh", Under: "/w", Hide: true, Rule: "paths.deny[0] /w/.ssh"},
		{Path: "/w/.aws", Under: "/w", Hide: true, Rule: "paths.deny[1] /w/.aws"},
		{Path: "/w/**/.env", Under: "/w", Hide: true, Rule: "secrets.mask[0] .env"},
	}
	for _, planned := range []bool{true, false} {
		e := Explain(ExplainInput{Def: def, Grants: gs, Plan: pl, Planned: planned, Decision: policy.Decision{Verdict: policy.Allow, Masks: masks}})
		got := map[string]string{}
		for _, m := range e.Filesystem[0].Mechanisms {
			if m.Kind == MechMask {
				got[m.Target] = m.Detail
			}
		}
		for path, want := range map[string]string{
			"/w/.ssh":    "is hidden (empty, unreadable)",
			"/w/.aws":    "did not exist when the run was planned, so nothing is mounted over it",
			"/w/**/.env": "is hidden (empty, unreadable)",
		} {
			if !planned && path == "/w/.aws" {
				// A review's plan may leave masks out; it is not judged.
				want = "is hidden (empty, unreadable)"
			}
			if !strings.Contains(got[path], want) {
				t.Errorf("planned %v: mask %s: %q, want %q", planned, path, got[path], want)
			}
		}
	}
}

// What an inherited environment leaves out is read from the policy in
// force: its environment.deny, or nothing when it has none.
func TestInheritedEnvironmentReadsThePolicy(t *testing.T) {
	def := &tool.Definition{Name: "t", Tags: []string{"read"}, Environment: &tool.Environment{Inherit: true}}
	for _, c := range []struct {
		deny []string
		want string
	}{
		{[]string{"LD_PRELOAD", "AWS_*"}, "the host environment is passed in, minus the names the policy's environment.deny matches (LD_PRELOAD, AWS_*): "},
		{nil, "the host environment is passed in, all of it (the policy's environment.deny is empty): "},
	} {
		pol := policy.Default()
		pol.Environment.Deny = c.deny
		e := Explain(ExplainInput{Def: def, Plan: planOf("process", 1000, 1000), Planned: true, Rules: pol})
		found := false
		for _, r := range e.Risks {
			if r.Subject == "environment.inherit" {
				found = strings.HasPrefix(r.Note, c.want)
			}
		}
		if !found {
			t.Errorf("deny %v: risks %+v, want one starting %q", c.deny, e.Risks, c.want)
		}
	}
}

// Where a landlock-tier run's spec names no cgroup, explain's limits are
// what each command gets: RLIMIT_DATA, and RLIMIT_NPROC of the spec's
// pids limit, the tool's own.
func TestExplainLandlockRlimits(t *testing.T) {
	def := &tool.Definition{Name: "t"}
	pl := planOf("landlock", 1000, 1000)
	pl.Spec.Linux = &specs.Linux{Resources: &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: ptr(96 << 20)}, Pids: &specs.LinuxPids{Limit: ptr(40)}}}
	pl.Limits.Pids = 40
	e := Explain(ExplainInput{Def: def, Decision: policy.Decision{Verdict: policy.Allow}, Policy: PolicyInfo{Source: "built-in default"},
		Plan: pl, Planned: true})
	got := map[string]Mechanism{}
	for _, p := range e.Resources {
		if len(p.Mechanisms) > 0 {
			got[p.Subject] = p.Mechanisms[0]
		}
	}
	if m := got["limits.pids"]; m.Kind != MechRlimit || m.Value != "40" || !strings.Contains(m.Detail, "RLIMIT_NPROC") {
		t.Errorf("pids: %+v", m)
	}
	if m := got["limits.memory"]; m.Kind != MechRlimit || m.Value != strconv.Itoa(96<<20) || !strings.Contains(m.Detail, "RLIMIT_DATA") {
		t.Errorf("memory: %+v", m)
	}
}

// The CPU point reads the spec's quota and period, not the tool's number:
// the cgroup's value as cpu.max says it, a pod's as the kubelet makes it
// of thousandths of a CPU, and none where no cgroup holds the run.
func TestCPUPointReadsTheSpec(t *testing.T) {
	for _, c := range []struct {
		name          string
		tier, backend string
		cgroup        string
		quota         int64
		period        uint64
		kind, value   string
		detail        string
	}{
		{"process", "process", "", "", 50000, 100000, MechCgroup, "50000 100000", "cgroup CPU quota 50ms in each 100ms period"},
		{"another period", "process", "", "", 25000, 50000, MechCgroup, "25000 50000", "cgroup CPU quota 25ms in each 50ms period"},
		{"container", "container", "", "", 150000, 100000, MechCgroup, "150000 100000", "the container's cgroup CPU quota 150ms"},
		{"pod", "process", isolation.BackendKubernetes, "", 33333, 100000, MechCgroup, "33300 100000", "the pod's CPU limit 333m"},
		{"landlock in a cgroup", "landlock", "", "/sandboxed/r", 50000, 100000, MechCgroup, "50000 100000", "cgroup CPU quota"},
		{"landlock without a cgroup", "landlock", "", "", 50000, 100000, MechNone, "", "the run is refused when it starts"},
	} {
		pl := planOf(c.tier, 1000, 1000)
		pl.Backend = c.backend
		pl.Spec.Linux = &specs.Linux{CgroupsPath: c.cgroup, Resources: &specs.LinuxResources{
			Memory: &specs.LinuxMemory{Limit: ptr(96 << 20)}, Pids: &specs.LinuxPids{Limit: ptr(40)},
			CPU: &specs.LinuxCPU{Quota: ptr(c.quota), Period: &c.period}}}
		def := &tool.Definition{Name: "t", Sandboxed: &tool.SandboxedExt{CPUs: 0.5}}
		e := Explain(ExplainInput{Def: def, Decision: policy.Decision{Verdict: policy.Allow}, Plan: pl, Planned: true})
		var p *Point
		for i := range e.Resources {
			if e.Resources[i].Subject == "limits.cpus" {
				p = &e.Resources[i]
			}
		}
		if p == nil {
			t.Errorf("%s: no limits.cpus point", c.name)
			continue
		}
		m := p.Mechanisms[0]
		if m.Kind != c.kind || m.Value != c.value || !strings.Contains(m.Detail, c.detail) || p.Requested != "sandboxed.cpus: 0.5" {
			t.Errorf("%s: %+v", c.name, p)
		}
	}
	pl := planOf("process", 1000, 1000)
	pl.Spec.Linux = &specs.Linux{Resources: &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: ptr(96 << 20)}, Pids: &specs.LinuxPids{Limit: ptr(40)}}}
	e := Explain(ExplainInput{Def: &tool.Definition{Name: "t"}, Decision: policy.Decision{Verdict: policy.Allow}, Plan: pl, Planned: true})
	for _, p := range e.Resources {
		if p.Subject == "limits.cpus" {
			t.Errorf("a spec without a CPU quota: %+v", p)
		}
	}
}
