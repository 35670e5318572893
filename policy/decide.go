package policy

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
	"github.com/sandboxed-dev/sandboxed/internal/tier"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// Verdict is what the policy says about one item or a whole run.
type Verdict string

const (
	Allow         Verdict = "allow"
	Deny          Verdict = "deny"
	NeedsApproval Verdict = "approval" // allowed only with an approval
)

// Risk is how much harm an item could do if the tool is hostile.
type Risk string

const (
	RiskLow    Risk = "low"
	RiskMedium Risk = "medium"
	RiskHigh   Risk = "high"
)

// ItemKind says what an Item is about.
type ItemKind string

const (
	ItemTool        ItemKind = "tool"        // the tool's security tier (tags)
	ItemIsolation   ItemKind = "isolation"   // security.isolation
	ItemPrivilege   ItemKind = "privilege"   // security.execution-privilege
	ItemEnvironment ItemKind = "environment" // environment.inherit
	ItemGrant       ItemKind = "grant"       // one required permission
	ItemLimit       ItemKind = "limit"       // a resource request above its cap
	ItemCredential  ItemKind = "credential"  // one of sandboxed.credentials
)

// Request is everything Decide looks at. Build it with NewRequest and set
// Approvals from --approve.
type Request struct {
	Tool    string
	Version string
	// Tags are the definition's tags (top-level and metadata.tags).
	Tags []string
	// Scope is where the definition was found; "" is an unknown source.
	Scope tool.Scope
	// DefinitionPath is the absolute path of the definition file.
	DefinitionPath string
	// Runtime is the container runtime the definition asks for
	// (sandboxed.runtime), "" for the engine's default.
	Runtime string
	// Isolation is the requested tier (the definition's, or --isolation);
	// "" means process.
	Isolation tool.Isolation
	// Privilege is security.execution-privilege; "" means same-as-user.
	Privilege tool.Privilege
	// InheritEnv is environment.inherit.
	InheritEnv bool
	// Grants come from permissions.Resolve, with Mount.Resolved filled by
	// the host controller. An empty Resolved is decided on the declared
	// path alone (as `permissions explain` does before resolving).
	Grants []permissions.Grant
	// Resource requests; zero means "not requested" (the policy default).
	Memory  int64 // bytes
	Timeout time.Duration
	Pids    int64
	Output  int64   // bytes per stream
	CPUs    float64 // sandboxed.cpus
	Tmpfs   int64   // bytes of /tmp (sandboxed.tmpfs-size)
	// Cwd is the working directory (absolute); CwdResolved is the same
	// with symlinks resolved, when the caller knows it. Home is the
	// invoking user's home directory, for the ~ rules of the policy.
	Cwd, CwdResolved, Home string
	// HomeResolved is Home with symlinks resolved, when the caller knows
	// it and it differs; the ~ rules then match under both.
	HomeResolved string
	// Credentials are the definition's sandboxed.credentials.
	Credentials []tool.Credential
	// Commands are the run's commands that hold the caller's text, for
	// the command rules; the host controller fills them from the bound
	// tool. CallerParams are the definition's parameters substituted
	// unescaped (escape-shell: false), known before binding.
	Commands     []CallerCommand
	CallerParams []string
	// Approvals are the --approve values.
	Approvals []string
	// NoProcessTier, when set, says why the process tier cannot run on
	// this host (namespaces cannot be made, no cgroup can be written):
	// the caller found it out (Decision.LandlockStandIn says when to
	// look). A process-tier run then runs in the landlock tier where the
	// policy or an approval lets it, and is refused otherwise.
	NoProcessTier string
}

// NewRequest fills a Request from a definition and its resolved grants.
// The caller sets Approvals, may override Isolation (--isolation), and
// fills CwdResolved when it resolves the working directory.
func NewRequest(def *tool.Definition, grants []permissions.Grant, cwd, home string) Request {
	r := Request{
		Tool:           def.Name,
		Version:        def.Version,
		Tags:           append([]string(nil), def.Tags...),
		Scope:          def.Source.Scope,
		DefinitionPath: def.Source.Path,
		Isolation:      def.Security.Isolation,
		Privilege:      def.Security.ExecutionPrivilege,
		Grants:         grants,
		Timeout:        def.Timeout,
		Cwd:            cwd,
		Home:           home,
	}
	if def.Metadata != nil {
		r.Tags = append(r.Tags, def.Metadata.Tags...)
	}
	r.CallerParams = callerParams(def)
	if def.Sandboxed != nil {
		r.Runtime = def.Sandboxed.Runtime
	}
	if def.Environment != nil {
		r.InheritEnv = def.Environment.Inherit
	}
	if def.Resources != nil {
		r.Memory = def.Resources.MaxMemory
		if def.Resources.Timeout > 0 {
			r.Timeout = def.Resources.Timeout
		}
	}
	if def.Sandboxed != nil {
		r.Pids = def.Sandboxed.PidsLimit
		r.CPUs = def.Sandboxed.CPUs
		r.Tmpfs = def.Sandboxed.TmpfsSize
		r.Credentials = def.Sandboxed.Credentials
	}
	for _, s := range def.Steps {
		if s.Output != nil && s.Output.BufferLimit > r.Output {
			r.Output = s.Output.BufferLimit
		}
	}
	return r
}

// Item is the policy's verdict on one grant or security field.
type Item struct {
	// Subject is what is decided: "tool", "isolation",
	// "execution-privilege", "environment.inherit", "limits.memory", … or
	// the canonical permission string of a grant.
	Subject string   `json:"subject"`
	Kind    ItemKind `json:"kind"`
	// Grant is the grant decided, for ItemGrant.
	Grant *permissions.Grant `json:"grant,omitempty"`
	// Description says in plain words what the item lets the tool do.
	Description string  `json:"description"`
	Verdict     Verdict `json:"verdict"`
	// Rule names what decided, e.g. "paths.deny[0] ~/.ssh" or
	// "default: writes outside the working directory need approval".
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
	Risk   Risk   `json:"risk"`
	// ApproveFlag is the `--approve` value that allows the item; set when
	// the verdict is (or was, before an approval) Approval.
	ApproveFlag string `json:"approve_flag,omitempty"`
	// PolicyFix is the policy change that would allow the item for good.
	PolicyFix string `json:"policy_fix,omitempty"`
	// ApprovedBy names the approval that turned NeedsApproval into Allow, e.g.
	// "--approve elevated" or "approval.standing[0] elevated".
	ApprovedBy string `json:"approved_by,omitempty"`
}

// PathMask is a path the sandbox must hide or make read-only inside a granted
// mount, because a policy rule protects it and the grant covers it. The
// plan must apply every mask (over-mount an empty read-only directory or
// file to hide; a read-only bind to protect) and refuse to run when it
// cannot. A mask whose path does not exist on the host is skipped.
type PathMask struct {
	// Path is inside the sandbox. It may hold the globs of the rule (`*`,
	// `**`), to be matched against the tree under Under.
	Path string `json:"path"`
	// Under is the target of the mount the mask applies to.
	Under string `json:"under"`
	// Hide is true to hide the path (no read, no write); false to make it
	// read-only.
	Hide bool   `json:"hide"`
	Rule string `json:"rule"`
	// Secret marks a mask of secrets.mask: its matches that
	// Decision.SecretExcept covers stay visible.
	Secret bool `json:"secret,omitempty"`
}

// Effective are the resource limits of the run, after defaults and caps:
// every limit the plan holds, which copies them as they are.
// In JSON: memory_bytes, timeout_ms, pids, output_bytes, cpus, tmpfs_bytes.
type Effective struct {
	MemoryBytes int64
	Timeout     time.Duration
	Pids        int64
	OutputBytes int64
	CPUs        float64 // 0: no CPU quota
	TmpfsBytes  int64
}

type effectiveJSON struct {
	MemoryBytes int64   `json:"memory_bytes"`
	TimeoutMS   int64   `json:"timeout_ms"`
	Pids        int64   `json:"pids"`
	OutputBytes int64   `json:"output_bytes"`
	CPUs        float64 `json:"cpus"`
	TmpfsBytes  int64   `json:"tmpfs_bytes"`
}

// MarshalJSON writes the timeout in milliseconds, as results do.
func (e Effective) MarshalJSON() ([]byte, error) {
	return json.Marshal(effectiveJSON{e.MemoryBytes, e.Timeout.Milliseconds(), e.Pids, e.OutputBytes, e.CPUs, e.TmpfsBytes})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Effective) UnmarshalJSON(b []byte) error {
	var j effectiveJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Effective{j.MemoryBytes, time.Duration(j.TimeoutMS) * time.Millisecond, j.Pids, j.OutputBytes, j.CPUs, j.TmpfsBytes}
	return nil
}

// SourceMatch says which source rule applied.
type SourceMatch struct {
	Scope   string `json:"scope"`
	Path    string `json:"path,omitempty"`
	Rule    string `json:"rule"` // "sources[2]" or "built-in: untrusted source"
	Trusted bool   `json:"trusted"`
}

// Decision is the policy's answer for one run.
type Decision struct {
	Tool       string      `json:"tool"`
	Verdict    Verdict     `json:"verdict"`
	PolicyFile string      `json:"policy_file"` // "" for the built-in policy
	Items      []Item      `json:"items"`
	Source     SourceMatch `json:"source"`
	// Isolation is the tier to run in: the request raised to the source's
	// minimum (and to an allowed tier); Notes say when it was raised.
	Isolation tool.Isolation `json:"isolation"`
	// RaisedFrom is the tier the request asked for where the policy
	// raised it (the source's isolation.minimum or isolation.allowed); ""
	// where it did not. RaiseNote, one of Notes, says how and by which
	// rule (the first raise, where both rules raised it).
	RaisedFrom tool.Isolation `json:"raised_from,omitempty"`
	RaiseNote  string         `json:"raise_note,omitempty"`
	// RequireLandlock: the source's isolation.landlock is required (the
	// process tier refuses a kernel that cannot raise every Landlock wall).
	RequireLandlock bool `json:"require_landlock,omitempty"`
	// LandlockStandIn: the landlock tier may stand in for this run's
	// process tier, by the source's isolation.without-namespaces or an
	// --approve isolation-landlock, where the process tier cannot run;
	// the caller looks whether it can (Request.NoProcessTier).
	LandlockStandIn bool `json:"landlock_stand_in,omitempty"`
	// LandlockRefused: the source's isolation.without-namespaces is
	// never, so where the process tier cannot run, the run is refused
	// with no way out but another host or policy.
	LandlockRefused bool `json:"landlock_refused,omitempty"`
	// AcceptGaps are the gaps of the landlock tier the source's policy
	// accepts (isolation.landlock-gaps), for a landlock-tier run.
	AcceptGaps []string `json:"accept_gaps,omitempty"`
	// Runtime is the container runtime the source's policy forces on a
	// container-tier run ("" leaves the definition's).
	Runtime string `json:"runtime,omitempty"`
	// Backend is the backend the source's policy forces ("local" or
	// "kubernetes"; "" leaves it to the operator).
	Backend string `json:"backend,omitempty"`
	// Tier is the tool's security tier (ToolTier).
	Tier   Tier      `json:"tier"`
	Limits Effective `json:"limits"`
	// Masks must be applied inside the granted mounts.
	Masks []PathMask `json:"masks,omitempty"`
	// SecretExcept are the policy's secrets.except patterns, ~ expanded:
	// what they match is not masked (SecretExcepted).
	SecretExcept []string `json:"secret_except,omitempty"`
	// EgressDeny are host patterns the egress proxy must refuse even when
	// a grant covers them (deny wins).
	EgressDeny []string `json:"egress_deny,omitempty"`
	// ExtraCA are the policy's network.extra-ca files.
	ExtraCA []string `json:"extra_ca,omitempty"`
	// Quotas cap the requests and bytes of hosts at the egress proxy.
	Quotas []Quota  `json:"quotas,omitempty"`
	Notes  []string `json:"notes,omitempty"`
}

var isoRank = map[tool.Isolation]int{tool.IsolationNone: 0, tool.IsolationProcess: 1, tool.IsolationContainer: 2}

// Decide applies the policy to a request. It never fails: what it cannot
// allow is a Deny or a NeedsApproval item, and the overall Verdict is Deny if
// any item is denied, else NeedsApproval if any item still needs an approval,
// else Allow. Approvals (req.Approvals and approval.standing) turn
// NeedsApproval items into Allow; nothing turns a Deny into Allow.
func (p *Policy) Decide(req Request) Decision {
	d := Decision{Tool: req.Tool, PolicyFile: p.File}
	src := p.source(req)
	d.Source = src.match

	d.Tier = ToolTier(req.Tags, req.Grants)
	d.Items = append(d.Items, p.decideTool(req, d.Tier))
	// --isolation landlock asks for the landlock tier in the process
	// tier's place: the process tier's bounds decide, then the stand-in.
	askedLandlock := req.Isolation == tier.Landlock
	isoReq := req
	if askedLandlock {
		isoReq.Isolation = tool.IsolationProcess
	}
	iso, isoItem, notes := decideIsolation(isoReq, src)
	if want := isoRequested(isoReq); iso != "" && iso != want && len(notes) > 0 {
		d.RaisedFrom, d.RaiseNote = want, notes[0]
	}
	if iso == tool.IsolationProcess && isoItem.Verdict == Allow {
		standIn := src.rule.Isolation.WithoutNamespaces
		d.LandlockStandIn = standIn == StandInLandlock ||
			standIn != StandInNever && (slices.Contains(req.Approvals, ApproveIsolationLandlock) || slices.Contains(req.Approvals, ApproveAll))
		d.LandlockRefused = standIn == StandInNever
		if askedLandlock || req.NoProcessTier != "" {
			iso, isoItem = landlockStandIn(req, src, askedLandlock)
			d.AcceptGaps = append([]string(nil), src.rule.Isolation.LandlockGaps...)
			notes = append(notes, LandlockNotes...)
		}
	}
	d.Isolation = iso
	d.RequireLandlock = src.rule.Isolation.Landlock == LandlockRequired
	if rt := src.rule.Isolation.Runtime; rt != "" && rt != RuntimeDefinition && iso == tool.IsolationContainer {
		d.Runtime = string(rt)
		if req.Runtime != string(rt) {
			d.Notes = append(d.Notes, fmt.Sprintf("container runtime %s: forced for %s definitions (%s.isolation.runtime)", rt, src.match.Scope, src.match.Rule))
		}
	}
	if be := src.rule.Isolation.Backend; be == BackendLocal || be == BackendKubernetes {
		d.Backend = string(be)
	}
	d.Notes = append(d.Notes, notes...)
	d.Items = append(d.Items, isoItem, decidePrivilege(req, iso))
	if iso == tool.IsolationNone {
		d.Notes = append(d.Notes, "isolation none: the grants below are not enforced; the tool can read, write and reach whatever the user can")
	}
	if req.InheritEnv {
		d.Items = append(d.Items, Item{
			Subject: "environment.inherit", Kind: ItemEnvironment, Verdict: NeedsApproval, Risk: RiskHigh,
			Description: "may read every environment variable of the host (tokens and keys included)",
			Rule:        "default: environment.inherit needs approval",
			Reason:      "the host environment often holds credentials; only PATH, HOME, LANG and env: grants are passed otherwise",
			ApproveFlag: ApproveEnvInherit, PolicyFix: "approval.standing: [env-inherit]",
		})
	}
	homes := []string{req.Home}
	if req.HomeResolved != "" && req.HomeResolved != req.Home {
		homes = append(homes, req.HomeResolved)
	}
	rules := p.compilePaths(homes)
	if !filepath.IsAbs(req.Home) && p.hasHomeRules() && hasMounts(req.Grants) {
		// Fail closed: without a home directory the ~ rules (credentials,
		// shell start-up files) could not match anything.
		d.Items = append(d.Items, Item{
			Subject: "home directory", Kind: ItemGrant, Verdict: Deny, Risk: RiskHigh,
			Description: "checks filesystem grants against the policy's ~ rules",
			Rule:        "default: filesystem grants need a known home directory",
			Reason:      fmt.Sprintf("the home directory %q is not an absolute path, so the ~ rules cannot be checked", req.Home),
			PolicyFix:   "none: set HOME to the user's home directory",
		})
	}
	for i := range req.Grants {
		g := req.Grants[i]
		it, masks := p.decideGrant(req, src, rules, g)
		d.Items = append(d.Items, it)
		d.Masks = append(d.Masks, masks...)
	}
	for _, mk := range d.Masks {
		if mk.Secret {
			d.SecretExcept = secretExcepts(rules.secretExcept)
			d.Notes = append(d.Notes, SecretMaskGaps)
			break
		}
	}
	for _, c := range req.Credentials {
		d.Items = append(d.Items, p.decideCredential(src, c))
	}
	cmdItems := p.decideCommands(req.Commands)
	d.Items = append(d.Items, cmdItems...)
	d.Notes = append(d.Notes, p.commandNotes(req, cmdItems)...)
	for _, h := range p.Network.Deny {
		d.EgressDeny = append(d.EgressDeny, string(h))
	}
	d.ExtraCA = append(d.ExtraCA, p.Network.ExtraCA...)
	d.Quotas = p.decideQuotas()
	var limitItems []Item
	d.Limits, limitItems = p.decideLimits(req)
	d.Items = append(d.Items, limitItems...)

	d.Notes = append(d.Notes, p.applyApprovals(&d, req)...)
	d.Verdict = Allow
	for _, it := range d.Items {
		switch {
		case it.Verdict == Deny:
			d.Verdict = Deny
		case it.Verdict == NeedsApproval && d.Verdict == Allow:
			d.Verdict = NeedsApproval
		}
	}
	return d
}

type sourceRule struct {
	rule  SourceRule
	match SourceMatch
}

func (p *Policy) source(req Request) sourceRule {
	scope := SourceScope(req.Scope)
	if scope == "" {
		scope = SourceUnknown
	}
	for i, r := range p.Sources {
		if r.Scope != "" && r.Scope != SourceAny && r.Scope != scope {
			continue
		}
		if r.Path != "" && !globMatch(r.Path, req.DefinitionPath, req.Home) {
			continue
		}
		return sourceRule{r, SourceMatch{Scope: string(scope), Path: req.DefinitionPath,
			Rule: fmt.Sprintf("sources[%d]", i), Trusted: r.Trusted}}
	}
	return sourceRule{UntrustedSource, SourceMatch{Scope: string(scope), Path: req.DefinitionPath,
		Rule: "built-in: a source no rule names is untrusted", Trusted: false}}
}

func (p *Policy) decideTool(req Request, tier Tier) Item {
	it := Item{Subject: "tool", Kind: ItemTool, Description: fmt.Sprintf("runs %s (security tier %s)", req.Tool, tier)}
	switch tier {
	case TierReadOnly:
		it.Risk = RiskLow
	case TierWrite:
		it.Risk = RiskMedium
	default:
		it.Risk = RiskHigh
	}
	for i, m := range p.Approval.AutoDeny {
		if m.matches(req.Tool, req.Tags, tier) {
			it.Verdict, it.Rule = Deny, fmt.Sprintf("approval.auto-deny[%d] %s", i, m)
			it.Reason = "the policy denies tools matching " + string(m)
			return it
		}
	}
	for i, m := range p.Approval.AutoApprove {
		if m.matches(req.Tool, req.Tags, tier) {
			it.Verdict, it.Rule = Allow, fmt.Sprintf("approval.auto-approve[%d] %s", i, m)
			it.Reason = "the policy approves tools matching " + string(m)
			return it
		}
	}
	it.Verdict = NeedsApproval
	it.ApproveFlag = "tier:" + string(tier)
	it.PolicyFix = "approval.auto-approve: [tier:" + string(tier) + "]"
	if tier == TierUnknown {
		it.Rule = "default: a tool with no security tag needs approval"
		it.Reason = "the tool has none of the security tags read, write, run, so it is treated as high risk (spec 000)"
	} else {
		it.Rule = "default: tools not matched by approval.auto-approve need approval"
		it.Reason = "no approval.auto-approve entry matches security tier " + string(tier)
	}
	return it
}

// decideIsolation is the tier req runs in by the source's rule, its item,
// and the notes of its raises (none, one, or the minimum's then the
// allowed's), in that order.
func decideIsolation(req Request, src sourceRule) (tool.Isolation, Item, []string) {
	want := isoRequested(req)
	it := Item{Subject: "isolation", Kind: ItemIsolation, Verdict: Allow, Risk: RiskLow}
	var notes []string
	eff := want
	rule := src.match.Rule + ".isolation"
	if src.match.Rule != "" && !strings.HasPrefix(src.match.Rule, "sources[") {
		rule = "built-in untrusted source"
	}
	if _, ok := isoRank[eff]; !ok {
		it.Verdict, it.Risk, it.Rule = Deny, RiskHigh, "default: unknown isolation tier"
		it.Reason = fmt.Sprintf("isolation %q is not none, process or container", eff)
		it.Description = "runs in an unknown isolation tier"
		return "", it, nil
	}
	if isoRank[eff] < isoRank[src.rule.Isolation.Minimum] {
		eff = src.rule.Isolation.Minimum
		it.Rule = rule + ".minimum " + string(eff)
		notes = append(notes, fmt.Sprintf("isolation raised from %s to %s: the minimum for %s definitions (%s)",
			want, eff, src.match.Scope, it.Rule))
	}
	if !slices.Contains(src.rule.Isolation.Allowed, eff) {
		raised := tool.Isolation("")
		for _, t := range []tool.Isolation{tool.IsolationNone, tool.IsolationProcess, tool.IsolationContainer} {
			if isoRank[t] > isoRank[eff] && slices.Contains(src.rule.Isolation.Allowed, t) {
				raised = t
				break
			}
		}
		if raised == "" {
			it.Verdict, it.Risk, it.Rule = Deny, RiskHigh, rule+".allowed"
			it.Reason = fmt.Sprintf("isolation %s is not allowed for %s definitions and no stronger tier is", eff, src.match.Scope)
			it.Description = "runs with isolation " + string(eff)
			it.PolicyFix = rule + ".allowed: add " + string(eff)
			return eff, it, notes
		}
		notes = append(notes, fmt.Sprintf("isolation raised from %s to %s: %s is not allowed for %s definitions (%s.allowed)",
			eff, raised, eff, src.match.Scope, rule))
		eff = raised
		it.Rule = rule + ".allowed"
	}
	switch eff {
	case tool.IsolationNone:
		it.Verdict, it.Risk, it.ApproveFlag = NeedsApproval, RiskHigh, ApproveIsolationNone
		it.Description = "runs directly on the host, unsandboxed, with everything the user can reach"
		it.Rule = "default: isolation none needs approval"
		it.Reason = "without a sandbox no grant is enforced"
		it.PolicyFix = "approval.standing: [isolation-none]"
	case tool.IsolationProcess:
		it.Description = "runs in the process sandbox (namespaces, seccomp, cgroup limits)"
	case tool.IsolationContainer:
		it.Description = "runs in a container"
	}
	if it.Rule == "" {
		it.Rule = rule + ".allowed"
		it.Reason = fmt.Sprintf("isolation %s is allowed for %s definitions", eff, src.match.Scope)
	} else if it.Reason == "" {
		it.Reason = fmt.Sprintf("requested %s, runs in %s", want, eff)
	}
	return eff, it, notes
}

// isoRequested is the tier req asks for: the process tier where it names
// none.
func isoRequested(req Request) tool.Isolation {
	if req.Isolation == "" {
		return tool.IsolationProcess
	}
	return req.Isolation
}

// LandlockNotes say what the landlock tier does not enforce or hide,
// in every decision that runs in it. How it holds the limits is the
// plan's to say (isolation.Plan.Approximations).
var LandlockNotes = []string{
	"landlock tier: no namespaces — the tool sees this host's (or container's) process list, hostname, network interfaces and mounts; Landlock keeps the environment and memory of processes outside the run from it",
	"landlock tier: no network namespace — without network grants no socket can be made; with them every connect() of the tool waits for the run's init, which connects 127.0.0.1 at the proxy port (and at a network:localhost port, forwarded by the proxy) to the egress proxy and refuses every other address and every Unix socket (socket options the tool set before connect are not carried over); credentials and HTTP rules are refused in this tier",
	"landlock tier: Landlock does not confine chmod and file times: run as a non-root user, the tool can change the mode and times of that user's files it can name; chown and extended attributes are refused",
	"landlock tier: as root the tool runs as an unprivileged uid of its own (the plan's), and each write grant is handed to that uid for the run and back after it; one whose owner could not write it is refused",
}

// landlockStandIn is the isolation item of a process-tier run that runs
// in the landlock tier: asked for with --isolation landlock, or because
// the process tier cannot run here (req.NoProcessTier). The source's
// isolation.without-namespaces allows it (landlock) or refuses it
// (never); otherwise (approve) it needs approval (isolation-landlock),
// which is the way out a refused run shows.
func landlockStandIn(req Request, src sourceRule, asked bool) (tool.Isolation, Item) {
	it := Item{Subject: "isolation", Kind: ItemIsolation, Risk: RiskMedium,
		Description: "runs in the landlock tier: no namespaces, mounts or cgroup of its own; Landlock, seccomp, no_new_privs and rlimits confine it (the notes say where they stop)"}
	why := "--isolation landlock asks for the landlock tier in place of the process tier"
	if !asked {
		why = "the process tier cannot run here (" + req.NoProcessTier + ")"
	}
	rule := src.match.Rule + ".isolation.without-namespaces"
	if !strings.HasPrefix(src.match.Rule, "sources[") {
		rule = "isolation.without-namespaces (in a sources rule that matches this definition)"
	}
	switch src.rule.Isolation.WithoutNamespaces {
	case StandInLandlock:
		it.Verdict, it.Rule = Allow, rule+" landlock"
		it.Reason = why + "; the policy lets the landlock tier stand in"
		return tier.Landlock, it
	case StandInNever:
		it.Verdict, it.Rule = Deny, rule+" never"
		it.Reason = why + "; the policy refuses the landlock tier, and no approval lifts that"
		it.PolicyFix = rule + ": approve (or landlock), or run on a host where the process tier can run"
		return tier.Landlock, it
	}
	it.Verdict, it.ApproveFlag = NeedsApproval, ApproveIsolationLandlock
	it.Rule = "default: the landlock tier stands in for the process tier only with approval"
	it.Reason = why + "; the landlock tier enforces less (no namespaces)"
	it.PolicyFix = rule + ": landlock"
	return tier.Landlock, it
}

func decidePrivilege(req Request, iso tool.Isolation) Item {
	priv := req.Privilege
	if priv == "" {
		priv = tool.PrivilegeSameAsUser
	}
	it := Item{Subject: "execution-privilege", Kind: ItemPrivilege, Verdict: Allow, Risk: RiskLow}
	switch priv {
	case tool.PrivilegeSameAsUser:
		it.Description = "runs as the invoking user, with no capabilities"
		it.Rule, it.Reason = "default: same-as-user is allowed", "no privilege beyond the user's own"
	case tool.PrivilegeReduced:
		it.Description = "runs as nobody (65534), with no capabilities"
		it.Rule, it.Reason = "default: reduced is allowed", "less privilege than the user's own"
	case tool.PrivilegeElevated:
		it.Description = "runs as root inside a user namespace, with Docker's default capabilities"
		it.Risk = RiskHigh
		if iso == tool.IsolationNone || iso == tier.Landlock {
			it.Verdict, it.Rule = Deny, "default: elevated with isolation "+string(iso)+" is denied"
			it.Reason = "without a user namespace, elevated would be root on the host"
			it.PolicyFix = "none: run it with isolation process or container"
			return it
		}
		it.Verdict, it.ApproveFlag = NeedsApproval, ApproveElevated
		it.Rule = "default: elevated needs approval"
		it.Reason = "root in the sandbox widens the kernel surface a hostile tool can attack"
		it.PolicyFix = "approval.standing: [elevated]"
	default:
		it.Verdict, it.Risk, it.Rule = Deny, RiskHigh, "default: unknown execution privilege"
		it.Reason = fmt.Sprintf("execution-privilege %q is not same-as-user, reduced or elevated", priv)
		it.Description = "runs with an unknown privilege"
	}
	return it
}

type compiledPaths struct {
	deny, denyWrite, approve, allowWrite []pathRule
	secrets                              []secretRule // secrets.mask (masks.go)
	secretExcept                         []pathRule
}

func (p *Policy) compilePaths(homes []string) compiledPaths {
	c := compiledPaths{
		deny:       compileRules("paths.deny", p.Paths.Deny, homes),
		denyWrite:  compileRules("paths.deny-write", p.Paths.DenyWrite, homes),
		approve:    compileRules("paths.approve", p.Paths.Approve, homes),
		allowWrite: compileRules("paths.allow-write", p.Paths.AllowWrite, homes),
	}
	c.secrets, c.secretExcept = p.compileSecrets(homes)
	return c
}

func (p *Policy) decideGrant(req Request, src sourceRule, rules compiledPaths, g permissions.Grant) (Item, []PathMask) {
	it := Item{Subject: g.String(), Kind: ItemGrant, Grant: &g, Description: g.Describe(), Verdict: Allow}
	switch g.Kind {
	case permissions.KindMount:
		return decideMount(req, rules, it, g.Mount)
	case permissions.KindEgress:
		return p.decideEgress(src, it, g.Egress), nil
	case permissions.KindLocalhost:
		if slices.Contains(p.Network.LocalhostAllow, g.Localhost.Port) {
			it.Risk, it.Rule = RiskMedium, "network.localhost-allow"
			it.Reason = fmt.Sprintf("the policy allows loopback port %d", g.Localhost.Port)
			return it, nil
		}
		it.Verdict, it.Risk, it.ApproveFlag = NeedsApproval, RiskHigh, g.String()
		it.Rule = "default: network:localhost needs approval"
		it.Reason = "services on the host's loopback (databases, daemons) often trust every local client"
		it.PolicyFix = fmt.Sprintf("network.localhost-allow: [%d]", g.Localhost.Port)
		return it, nil
	case permissions.KindEnv:
		if i := EnvDenied(p.Environment.Deny, g.Env.Name); i >= 0 {
			it.Verdict, it.Risk = Deny, RiskHigh
			it.Rule = fmt.Sprintf("environment.deny[%d] %s", i, p.Environment.Deny[i])
			it.Reason = "the policy denies passing " + g.Env.Name + " into a sandbox"
			return it, nil
		}
		if !permissions.LooksSecret(g.Env.Name) {
			it.Risk, it.Rule, it.Reason = RiskLow, "default: env grants are allowed", "only this one variable is passed"
			return it, nil
		}
		it.Risk = RiskMedium
		if src.match.Trusted {
			it.Rule = "default: env grants are allowed for trusted sources"
			it.Reason = g.Env.Name + " looks like a credential; the source is trusted"
			return it, nil
		}
		it.Verdict, it.ApproveFlag = NeedsApproval, g.String()
		it.Rule = "default: secret-looking env grants from untrusted sources need approval"
		it.Reason = g.Env.Name + " looks like a credential and the definition's source is untrusted"
		it.PolicyFix = "sources: trust the definition's source, or approval.standing: [" + g.String() + "]"
		return it, nil
	}
	it.Verdict, it.Risk, it.Rule, it.Reason = Deny, RiskHigh, "default: unknown grant", "the grant kind is unknown"
	return it, nil
}

// decideMount decides a mount grant: the deny rules (1), the protected
// paths inside the grant (2, masked in any case), the approval rules (3),
// then reads (4) and writes (5) by where they are. Each stage is a function
// of its own below.
func decideMount(req Request, rules compiledPaths, it Item, m *permissions.Mount) (Item, []PathMask) {
	paths := mountPaths(m)
	// 1. Deny rules matched by the declared or the resolved path.
	if r, p, what := deniedMount(rules, m.Write, paths); r != nil {
		it.Verdict, it.Risk, it.Rule = Deny, RiskHigh, r.name()
		it.Reason = fmt.Sprintf("%s %s %s; %s", viaPath(m, p), "under", r.raw, what)
		it.PolicyFix = "remove " + r.raw + " from " + r.list + " (not recommended)"
		return it, nil
	}
	// 2. Protected paths inside the grant: they are masked in any case, and
	// a grant holding a whole protected path needs approval.
	pm := protectedMasks(rules, m, paths)
	if pm.unmaskable != nil {
		it.Verdict, it.Risk, it.Rule = Deny, RiskHigh, pm.unmaskable.name()
		it.Reason = fmt.Sprintf("%s may match paths inside %s that the sandbox cannot mask (a ** inside a path element)", pm.unmaskable.raw, m.HostPath)
		it.PolicyFix = "grant a narrower path, or write the rule with ** as a whole element (" + pm.unmaskable.raw + ")"
		return it, nil
	}
	secretMasks, namedSecret := decideSecrets(m, paths, rules.secrets, rules.secretExcept)
	masks := dedupMasks(append(pm.masks, secretMasks...))
	if len(pm.holds) > 0 {
		return holdsProtectedItem(it, m, pm.holds), masks
	}
	// A grant that names a secret (secrets.mask) asks for what masks
	// hide everywhere else.
	if namedSecret != nil {
		return namedSecretItem(it, m, namedSecret), masks
	}
	// 3. Paths the policy marks for approval.
	for _, p := range paths {
		for _, r := range rules.approve {
			if r.matches(p) {
				it.Verdict, it.Risk, it.ApproveFlag = NeedsApproval, RiskMedium, it.Subject
				it.Rule = r.name()
				it.Reason = fmt.Sprintf("%s under %s, which the policy marks for approval", viaPath(m, p), r.raw)
				it.PolicyFix = "approval.standing: [" + it.Subject + "]"
				return it, masks
			}
		}
	}
	return decideMountAccess(req, rules, it, m, paths), masks
}

// mountPaths are the paths the rules are matched against: the declared
// host path and, when it differs, the path it resolves to.
func mountPaths(m *permissions.Mount) []string {
	paths := []string{m.HostPath}
	if m.Resolved != "" && m.Resolved != m.HostPath {
		paths = append(paths, m.Resolved)
	}
	return paths
}

// viaPath says which path a rule matched, when it was the resolved one.
func viaPath(m *permissions.Mount, p string) string {
	if p != m.HostPath {
		return m.HostPath + " resolves to " + p + ", which is"
	}
	return p + " is"
}

// deniedMount returns the first deny rule (paths.deny, then for a write
// paths.deny-write) that one of paths matches, the path it matched and what
// the rule denies; a nil rule when none does.
func deniedMount(rules compiledPaths, write bool, paths []string) (*pathRule, string, string) {
	for _, p := range paths {
		for i := range rules.deny {
			if rules.deny[i].matches(p) {
				return &rules.deny[i], p, "reads and writes there are denied"
			}
		}
		if write {
			for i := range rules.denyWrite {
				if rules.denyWrite[i].matches(p) {
					return &rules.denyWrite[i], p, "writes there are denied"
				}
			}
		}
	}
	return nil, "", ""
}

// mountProtection is what the deny rules leave inside a granted path.
type mountProtection struct {
	masks []PathMask // what the sandbox hides (deny) or keeps read-only (deny-write)
	holds []pathRule // rules whose whole protected path lies inside the grant
	// unmaskable is a rule that may match inside the grant in a way no
	// mask can express (a ** inside a path element).
	unmaskable *pathRule
}

// protectedMasks lists the masks a mount grant gets from the deny rules
// (and, for a write, the deny-write rules) that match inside it.
func protectedMasks(rules compiledPaths, m *permissions.Mount, paths []string) mountProtection {
	var pm mountProtection
	add := func(list []pathRule, hide bool) {
		for _, r := range list {
			for _, p := range paths {
				mask := func(rel string) PathMask {
					return PathMask{Path: filepath.Join(m.Target, rel), Under: m.Target, Hide: hide, Rule: r.name()}
				}
				if r.anywhere {
					pm.masks = append(pm.masks, mask(string(r.raw)))
					break
				}
				if r.literal {
					if r.inside(p) {
						rel, _ := filepath.Rel(p, r.prefix)
						pm.masks = append(pm.masks, mask(rel))
						pm.holds = append(pm.holds, r)
						break
					}
					continue
				}
				rels, ok := r.masksUnder(p)
				if !ok && pm.unmaskable == nil {
					pm.unmaskable = &r
				}
				for _, rel := range rels {
					pm.masks = append(pm.masks, mask(rel))
				}
				if len(rels) > 0 {
					pm.holds = append(pm.holds, r)
					break
				}
			}
		}
	}
	add(rules.deny, true)
	if m.Write {
		add(rules.denyWrite, false)
	}
	return pm
}

// holdsProtectedItem is the verdict on a grant that holds whole protected
// paths: it needs approval, and those that exist when the run starts stay
// masked.
func holdsProtectedItem(it Item, m *permissions.Mount, holds []pathRule) Item {
	it.Verdict, it.Risk, it.ApproveFlag = NeedsApproval, RiskHigh, it.Subject
	it.Rule = holds[0].name() + " (inside the granted path)"
	var names []string
	for _, r := range holds {
		if !slices.Contains(names, r.raw) {
			names = append(names, r.raw)
		}
	}
	if len(names) > 4 {
		names = append(names[:3], fmt.Sprintf("and %d more", len(names)-3))
	}
	// Nothing is mounted over a path that does not exist when the run
	// starts: a write grant may create it, which the run reports after.
	it.Reason = fmt.Sprintf("%s holds protected paths (%s); even when approved, those that exist when the run starts stay masked (hidden, or read-only where only writes are denied), and one created during the run is not masked but reported in the run's result; a grant this wide is rarely needed",
		m.HostPath, strings.Join(names, ", "))
	it.PolicyFix = "grant a narrower path, or approval.standing: [" + it.Subject + "]"
	return it
}

// decideMountAccess decides a grant no rule denies or marks: reads are
// allowed (4); writes inside the working directory are allowed, elsewhere
// they need approval unless paths.allow-write names them (5).
func decideMountAccess(req Request, rules compiledPaths, it Item, m *permissions.Mount, paths []string) Item {
	allInCwd, broadCwd := inWorkingDir(req, paths)
	if !m.Write {
		if allInCwd {
			it.Risk, it.Rule, it.Reason = RiskLow, "default: reads are allowed", "inside the working directory"
		} else {
			it.Risk, it.Rule, it.Reason = RiskMedium, "default: reads are allowed", "outside the working directory, and no rule protects it"
		}
		return it
	}
	if allInCwd {
		it.Risk, it.Rule, it.Reason = RiskMedium, "default: writes inside the working directory are allowed", "inside the working directory "+req.Cwd
		return it
	}
	if r := allowedWrite(rules.allowWrite, paths); r != nil {
		it.Risk, it.Rule, it.Reason = RiskMedium, r.name(), "the policy allows writes under "+r.raw
		return it
	}
	it.Verdict, it.Risk, it.ApproveFlag = NeedsApproval, RiskMedium, it.Subject
	it.Rule = "default: writes outside the working directory need approval"
	where := m.HostPath
	if m.Resolved != "" && m.Resolved != m.HostPath {
		where += " (resolved " + m.Resolved + ")"
	}
	it.Reason = where + " is outside the working directory " + req.Cwd
	if broadCwd {
		it.Reason = "the working directory " + req.Cwd + " is / or holds the home directory, so no write counts as inside it"
	}
	it.PolicyFix = "paths.allow-write: [" + m.HostPath + "]"
	return it
}

// inWorkingDir says whether every one of paths is inside the request's
// working directory (declared or resolved), and whether the working
// directory was too broad to count. It counts only when it is narrower than
// the home directory: run from / or from ~, "inside the working directory"
// would be everything (or every credential).
func inWorkingDir(req Request, paths []string) (all, broad bool) {
	var cwds []string
	for _, c := range []string{req.Cwd, req.CwdResolved} {
		switch {
		case c == "":
		case c == "/" || under(req.Home, c) || req.HomeResolved != "" && under(req.HomeResolved, c):
			broad = true
		default:
			cwds = append(cwds, c)
		}
	}
	all = true
	for _, p := range paths {
		all = all && slices.ContainsFunc(cwds, func(c string) bool { return under(p, c) })
	}
	return all, broad
}

// allowedWrite returns the paths.allow-write rule that allows writes to
// paths: every path (declared and resolved) must be under one; the rule
// returned is the declared path's. Nil when some path is under none.
func allowedWrite(allow []pathRule, paths []string) *pathRule {
	var allowedBy *pathRule
	for _, p := range paths {
		i := slices.IndexFunc(allow, func(r pathRule) bool { return r.matches(p) })
		if i < 0 {
			return nil
		}
		if allowedBy == nil {
			allowedBy = &allow[i]
		}
	}
	return allowedBy
}

func dedupMasks(ms []PathMask) []PathMask {
	var out []PathMask
	seen := map[PathMask]bool{}
	for _, m := range ms {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

func (p *Policy) decideEgress(src sourceRule, it Item, e *permissions.Egress) Item {
	it.Risk = RiskMedium
	// First what the proxy refuses whatever the policy says, so the reason
	// and the fix are the ones that hold (netrule is the proxy's own rule).
	if refused, why := netrule.RefusedHost(e.Host); refused {
		it.Verdict, it.Risk = Deny, RiskHigh
		it.Rule = "default: network:external cannot reach this machine, a private or reserved network or a cloud metadata service"
		it.Reason = why
		it.PolicyFix = "none: the egress proxy refuses it whatever a grant or the policy says"
		return it
	}
	for i, h := range p.Network.Deny {
		if hostCovers(string(h), e.Host) {
			it.Verdict, it.Risk = Deny, RiskHigh
			it.Rule = fmt.Sprintf("network.deny[%d] %s", i, h)
			it.Reason = "the policy denies egress to " + string(h)
			it.PolicyFix = "remove " + string(h) + " from network.deny"
			return it
		}
	}
	for i, h := range p.Network.Allow {
		if hostCovers(string(h), e.Host) {
			it.Rule = fmt.Sprintf("network.allow[%d] %s", i, h)
			it.Reason = "the policy allows egress to " + string(h)
			if e.Any() {
				it.Risk = RiskHigh
			}
			return it
		}
	}
	it.ApproveFlag = it.Subject
	switch {
	case e.Any():
		it.Verdict, it.Risk = NeedsApproval, RiskHigh
		it.Rule = "default: egress to any host (*) needs approval"
		it.Reason = "the tool could send what it reads to any server"
		it.PolicyFix = "network.allow: [\"*\"] (not recommended)"
	case !src.match.Trusted:
		it.Verdict = NeedsApproval
		it.Rule = "default: egress from an untrusted source needs approval"
		it.Reason = fmt.Sprintf("the definition's source (%s) is untrusted, and what it reads could leave the machine", src.match.Scope)
		it.PolicyFix = "network.allow: [" + e.Host + "]"
	default:
		it.ApproveFlag = ""
		it.Rule = "default: egress to named hosts is allowed for trusted sources"
		it.Reason = "the host is named and the source is trusted"
	}
	return it
}

// decideLimits decides every limit of the run: what the definition asks
// for (req), else the policy's default, clamped to the policy's cap with
// an item that says so. A reduced-privilege run's pids default is at most
// ReducedPids. A CPU quota of 0 is none: under a cap, a run that asks for
// none gets the default, else the cap, so that every run has a quota.
func (p *Policy) decideLimits(req Request) (Effective, []Item) {
	var items []Item
	pick := func(name string, requested, def, max int64, format func(int64) string) int64 {
		v := requested
		if v <= 0 {
			v = def
		}
		if max > 0 && v > max {
			if requested > max { // else a default above the cap, which Parse brings down
				items = append(items, clampItem(name, fmt.Sprintf("may use %s of %s", format(max), name), format(requested), format(max)))
			}
			v = max
		}
		return v
	}
	size := func(v int64) string { return Size(v).String() }
	pidsDefault := p.Limits.Pids.Default
	if req.Privilege == tool.PrivilegeReduced && pidsDefault > ReducedPids {
		pidsDefault = ReducedPids
	}
	e := Effective{
		MemoryBytes: pick("memory", req.Memory, int64(p.Limits.Memory.Default), int64(p.Limits.Memory.Max), size),
		Timeout: time.Duration(pick("timeout", int64(req.Timeout), int64(p.Limits.Timeout.Default), int64(p.Limits.Timeout.Max),
			func(v int64) string { return Duration(v).String() })),
		Pids:        pick("pids", req.Pids, pidsDefault, p.Limits.Pids.Max, func(v int64) string { return fmt.Sprint(v) }),
		OutputBytes: pick("output", req.Output, int64(p.Limits.Output.Default), int64(p.Limits.Output.Max), size),
	}
	// Written so that a NaN (which no loader lets through) falls to the
	// default and the cap, never past them.
	cpus := CPUs(req.CPUs)
	if !(cpus > 0) {
		cpus = p.Limits.CPUs.Default
	}
	if max := p.Limits.CPUs.Max; max > 0 && !(cpus > 0 && cpus <= max) {
		if CPUs(req.CPUs) > max {
			items = append(items, clampItem("cpus", fmt.Sprintf("may use %s CPUs' worth of time", max), CPUs(req.CPUs).String(), max.String()))
		}
		cpus = max
	}
	e.CPUs = float64(cpus)
	e.TmpfsBytes = pick("tmpfs", req.Tmpfs, int64(p.Limits.Tmpfs.Default), int64(p.Limits.Tmpfs.Max), size)
	return e, items
}

// clampItem is the item of a request above the cap of limits.NAME, which
// the run gets instead; requested and max are written as the policy
// file writes them, so PolicyFix is a line the file takes.
func clampItem(name, description, requested, max string) Item {
	return Item{
		Subject: "limits." + name, Kind: ItemLimit, Verdict: Allow, Risk: RiskLow,
		Description: description,
		Rule:        "limits." + name + ".max",
		Reason:      fmt.Sprintf("requested %s, clamped to the cap %s", requested, max),
		PolicyFix:   fmt.Sprintf("limits.%s.max: %s", name, requested),
	}
}

// approvalGiven is one approval and where it came from.
type approvalGiven struct {
	value string
	from  string // "--approve X" or "approval.standing[i] X"
	perm  *permissions.Grant
	used  bool
}

func (p *Policy) applyApprovals(d *Decision, req Request) []string {
	var notes []string
	var given []*approvalGiven
	add := func(v, from string) {
		if err := ValidateApprovals([]string{v}); err != nil {
			notes = append(notes, fmt.Sprintf("ignored %s: %v", from, err))
			return
		}
		a := &approvalGiven{value: v, from: from}
		if gs, err := permissions.Resolve([]string{v}, req.Cwd, req.Home); err == nil && len(gs) == 1 {
			a.perm = &gs[0]
		}
		given = append(given, a)
	}
	for i, s := range p.Approval.Standing {
		add(string(s), fmt.Sprintf("approval.standing[%d] %s", i, s))
	}
	for _, s := range req.Approvals {
		add(s, "--approve "+s)
	}
	for i := range d.Items {
		it := &d.Items[i]
		if it.Verdict != NeedsApproval {
			continue
		}
		for _, a := range given {
			if a.covers(it) {
				it.Verdict, it.ApprovedBy, a.used = Allow, a.from, true
				break
			}
		}
	}
	for _, a := range given {
		if !a.used && strings.HasPrefix(a.from, "--approve") {
			notes = append(notes, a.from+" matched nothing that needed approval")
		}
	}
	return notes
}

// covers reports whether the approval allows the item.
func (a *approvalGiven) covers(it *Item) bool {
	if a.value == ApproveAll {
		return true
	}
	if a.perm == nil || it.Grant == nil || a.perm.Kind != it.Grant.Kind {
		return a.value == it.ApproveFlag
	}
	if it.Grant.Kind == permissions.KindMount {
		// A filesystem approval covers the path and the paths under it, of
		// the same access — both as declared and as resolved on the host,
		// so a symlink planted under an approved path cannot carry the
		// approval somewhere else.
		m := it.Grant.Mount
		if a.perm.Mount.Write != m.Write || !under(m.HostPath, a.perm.Mount.HostPath) {
			return false
		}
		return m.Resolved == "" || under(m.Resolved, a.perm.Mount.HostPath)
	}
	return a.perm.String() == it.Grant.String()
}

// MissingApprovals returns the --approve values that would allow every
// item still needing approval, in item order. It is empty when the
// decision is Allow, and does not help when it is Deny.
func (d Decision) MissingApprovals() []string {
	var out []string
	for _, it := range d.Items {
		if it.Verdict == NeedsApproval && !slices.Contains(out, it.ApproveFlag) {
			out = append(out, it.ApproveFlag)
		}
	}
	return out
}

// Denied returns the denied items.
func (d Decision) Denied() []Item {
	var out []Item
	for _, it := range d.Items {
		if it.Verdict == Deny {
			out = append(out, it)
		}
	}
	return out
}

// Hint says what would let the run go ahead: for a denial, which rule
// denied what and that only a policy change can allow it; for approvals,
// the exact --approve flags, and the policy lines that would allow them
// for good. It is "" when the decision is Allow.
func (d Decision) Hint() string {
	var b strings.Builder
	policy := d.PolicyFile
	if policy == "" {
		policy = "the built-in policy (write your own with `sandboxed policy init`)"
	}
	switch d.Verdict {
	case Deny:
		fmt.Fprintf(&b, "denied by %s:\n", policy)
		for _, it := range d.Denied() {
			fmt.Fprintf(&b, "  %s: %s (%s)\n", it.Subject, it.Reason, it.Rule)
			if it.PolicyFix != "" {
				fmt.Fprintf(&b, "    to allow it: %s\n", it.PolicyFix)
			}
		}
		b.WriteString("approvals cannot override a denial; change the definition or the policy.\n")
	case NeedsApproval:
		b.WriteString("needs approval:\n")
		for _, it := range d.Items {
			if it.Verdict == NeedsApproval {
				fmt.Fprintf(&b, "  %s: %s (%s)\n", it.Subject, it.Reason, it.Rule)
			}
		}
		b.WriteString("to approve this run:\n  ")
		for i, a := range d.MissingApprovals() {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString("--approve " + tool.ShellWord(a))
		}
		fmt.Fprintf(&b, "\nto allow it for good, in %s:\n", policy)
		for _, it := range d.Items {
			if it.Verdict == NeedsApproval && it.PolicyFix != "" {
				fmt.Fprintf(&b, "  %s\n", it.PolicyFix)
			}
		}
	}
	return b.String()
}

func (p *Policy) hasHomeRules() bool {
	for _, list := range [][]PathPattern{p.Paths.Deny, p.Paths.DenyWrite, p.Paths.Approve} {
		for _, pat := range list {
			if pat == "~" || strings.HasPrefix(string(pat), "~/") {
				return true
			}
		}
	}
	return false
}

func hasMounts(gs []permissions.Grant) bool {
	for _, g := range gs {
		if g.Kind == permissions.KindMount {
			return true
		}
	}
	return false
}

// decideCredential decides one of sandboxed.credentials. The sandbox never
// holds the value, but the tool may use it against its hosts: from an
// untrusted source that needs approval; a value read by running a host
// command needs approval whatever the source, as the command runs outside
// any sandbox.
func (p *Policy) decideCredential(src sourceRule, c tool.Credential) Item {
	name := c.VarName()
	it := Item{Subject: ApproveCredentialPrefix + name, Kind: ItemCredential, Verdict: Allow, Risk: RiskMedium,
		Description: CredentialDescription(c)}
	if i := EnvDenied(p.Credentials.Deny, name); i >= 0 {
		it.Verdict, it.Risk = Deny, RiskHigh
		it.Rule = fmt.Sprintf("credentials.deny[%d] %s", i, p.Credentials.Deny[i])
		it.Reason = "the policy denies the credential " + name
		return it
	}
	ask := func(risk Risk, rule, reason, fix string) Item {
		it.Verdict, it.Risk, it.ApproveFlag = NeedsApproval, risk, it.Subject
		it.Rule, it.Reason, it.PolicyFix = rule, reason, fix
		return it
	}
	if c.SourceKind() == "command" {
		return ask(RiskHigh, "default: a credential read by running a host command needs approval",
			fmt.Sprintf("%s runs on the host as you, outside any sandbox, when the run starts", tool.ShellWord(strings.Join(c.Command, " "))),
			"approval.standing: ["+it.Subject+"]")
	}
	if i := EnvDenied(p.Credentials.Approve, name); i >= 0 {
		return ask(RiskMedium, fmt.Sprintf("credentials.approve[%d] %s", i, p.Credentials.Approve[i]),
			"the policy asks for approval of the credential "+name, "approval.standing: ["+it.Subject+"]")
	}
	if !src.match.Trusted {
		return ask(RiskMedium, "default: credentials of untrusted sources need approval",
			"the definition's source is untrusted; the tool could use the credential against "+strings.Join(c.Hosts, ", ")+" as it likes",
			"sources: trust the definition's source, or approval.standing: ["+it.Subject+"]")
	}
	it.Rule = "default: credentials are allowed for trusted sources"
	it.Reason = "the sandbox holds a stand-in; the real value goes only to " + strings.Join(c.Hosts, ", ")
	return it
}

// CredentialDescription says in plain words what a credential lets the
// tool do.
func CredentialDescription(c tool.Credential) string {
	var from string
	switch c.SourceKind() {
	case "file":
		from = "the file " + c.File
	case "command":
		from = "the output of the host command " + tool.ShellWord(strings.Join(c.Command, " "))
	default:
		from = "the host variable " + c.Env
	}
	return fmt.Sprintf("%s holds a stand-in; the egress proxy swaps in the real value (from %s) in requests to %s only",
		c.VarName(), from, strings.Join(c.Hosts, ", "))
}
