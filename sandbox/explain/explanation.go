package explain

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/pathglob"
	"github.com/sandboxed-dev/sandboxed/internal/tier"
	"github.com/sandboxed-dev/sandboxed/internal/units"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/landlock"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// ExplainSchemaVersion is the version of the Explanation document
// (docs/explain.schema.json). It changes only when a field changes meaning
// or is removed. 2: a CPU limit's mechanism value is its quota and period
// in microseconds ("50000 100000"), no longer a number of CPUs.
const ExplainSchemaVersion = 2

// Verdict words of an Explanation and its points. They are the policy's
// verdicts (allow, deny, approval) plus "depends" for a permission whose
// path or host comes from an argument that was not given.
const (
	VerdictAllow    = "allow"
	VerdictDeny     = "deny"
	VerdictApproval = "approval"
	VerdictDepends  = "depends"
)

// Decision words of the overall verdict.
const (
	DecisionAllowed       = "allowed"
	DecisionNeedsApproval = "needs_approval"
	DecisionDenied        = "denied"
)

// ExplainInput is everything Explain needs: the definition, its grants,
// the policy's decision and the sandbox plan, as the policy and the planner
// made them. Tool fills it from sandbox.Prepare (or, when the tool cannot
// be bound, from the definition's raw strings).
type ExplainInput struct {
	Def *tool.Definition
	// Grants are the resolved grants, Mount.Resolved filled when known.
	Grants []permissions.Grant
	// Templated are the required-permissions that still hold a {PARAM}
	// reference because the argument was not given.
	Templated []TemplatedPermission
	// Unresolvable are permissions that do not resolve (a bad path),
	// with the reason.
	Unresolvable []TemplatedPermission
	// Decision is the policy's decision: its items, verdict, source rule
	// and the tool's security tier.
	Decision policy.Decision
	// Policy says which policy decided.
	Policy PolicyInfo
	// Plan is the sandbox the run gets (sandbox.Prepare), or for a run
	// that could not be planned the one the planner would make for it
	// (sandbox.ReviewPlan, Planned false); nil when not even that could
	// be made.
	Plan *isolation.Plan
	// Planned is true when Plan is the run's own.
	Planned bool
	// HostID is the host uid and gid the plan's user runs as, where a
	// user namespace maps it (nil: the backend cannot say).
	HostID *isolation.ID
	// Rules is the policy in force (nil: none to read), for what the
	// decision does not carry: undo's bounds, environment.deny.
	Rules *policy.Policy
	// Arguments says which arguments were given and which were missing.
	Arguments ArgumentsInfo
	// HostPath are the directories of the host's PATH, for the risk of a
	// writable directory on it; Home is the invoking user's home.
	HostPath []string
	Home     string
	// Notes are the policy's and planner's notes.
	Notes []string
}

// TemplatedPermission is a required permission that could not be
// resolved: its parameters were not given, or its value is invalid.
type TemplatedPermission struct {
	Index      int      `json:"index"`
	Permission string   `json:"permission"`
	Params     []string `json:"params,omitempty"`
	Reason     string   `json:"reason,omitempty"`
}

// PolicyInfo names the policy in force.
type PolicyInfo struct {
	// Source is "built-in default" or the policy file's path.
	Source string `json:"source"`
	// File is the policy file ("" for the built-in default).
	File string `json:"file"`
}

// SourceInfo is the source rule that matched the definition.
type SourceInfo struct {
	Scope   string `json:"scope"`
	Rule    string `json:"rule"`
	Trusted bool   `json:"trusted"`
}

// ArgumentsInfo records the arguments of the review.
type ArgumentsInfo struct {
	// Given are the NAME=VALUE names given.
	Given []string `json:"given"`
	// Missing are the required parameters that were not given.
	Missing []string `json:"missing"`
	// Approvals are the --approve values the review assumes.
	Approvals []string `json:"approvals"`
	// Bound is true when the tool was bound with the arguments and planned
	// by the sandbox; false when the explanation uses the definition's raw
	// strings.
	Bound bool `json:"bound"`
	// Note says how the arguments were used.
	Note string `json:"note,omitempty"`
}

// Explanation is the security review of one tool: the overall verdict,
// one point per permission and security field with what it means, the
// mechanism that enforces it and the policy's verdict, and risk notes.
// Its JSON form is documented by docs/explain.schema.json.
type Explanation struct {
	SchemaVersion int           `json:"schema_version"`
	Tool          ToolInfo      `json:"tool"`
	Policy        PolicyInfo    `json:"policy"`
	Source        SourceInfo    `json:"source"`
	Verdict       Verdict       `json:"verdict"`
	Arguments     ArgumentsInfo `json:"arguments"`
	Filesystem    []Point       `json:"filesystem"`
	Network       []Point       `json:"network"`
	Environment   []Point       `json:"environment"`
	Privilege     []Point       `json:"privilege_isolation"`
	Resources     []Point       `json:"resources"`
	Risks         []Risk        `json:"risks"`
	Notes         []string      `json:"notes"`
}

// ToolInfo identifies the tool reviewed.
type ToolInfo struct {
	Name          string   `json:"name"`
	Version       string   `json:"version"`
	Description   string   `json:"description"`
	Path          string   `json:"path"`
	SHA256        string   `json:"sha256"`
	Tags          []string `json:"tags"`
	SecurityTier  string   `json:"security_tier"`
	Justification string   `json:"justification"`
	// RequiredPermissions are security.required-permissions as written.
	RequiredPermissions []string `json:"required_permissions"`
}

// Verdict is the overall verdict.
type Verdict struct {
	// Decision is allowed, needs_approval or denied.
	Decision string `json:"decision"`
	// Summary is the one-line verdict, e.g. "ALLOWED: runs in process
	// isolation as uid 1000; reads 1 path, writes 1 path, no network".
	Summary string `json:"summary"`
	// ApproveFlags are the exact flags that approve the run, e.g.
	// "--approve 'network:external:*'".
	ApproveFlags []string `json:"approve_flags"`
	// Denied are the subjects the policy denies.
	Denied []string `json:"denied"`
	// DependsOnArguments is true when permissions hold parameters whose
	// values were not given: the policy decides them at run time.
	DependsOnArguments bool `json:"depends_on_arguments"`
}

// Point is one permission or security field, explained.
type Point struct {
	// Subject is the permission string or the field, e.g.
	// "filesystem:read:/home/u/p" or "execution-privilege".
	Subject string `json:"subject"`
	// Requested is what the definition says, as written.
	Requested string `json:"requested"`
	// Meaning says in plain words what it lets the tool do.
	Meaning string `json:"meaning"`
	// Mechanisms are what enforces it.
	Mechanisms []Mechanism `json:"mechanisms"`
	// Verdict is allow, deny, approval or depends.
	Verdict     string `json:"verdict"`
	Rule        string `json:"rule"`
	Reason      string `json:"reason"`
	Risk        string `json:"risk"`
	ApproveFlag string `json:"approve_flag"`
	PolicyFix   string `json:"policy_fix"`
	ApprovedBy  string `json:"approved_by"`
	// Templated is true when the subject still holds {PARAM} references.
	Templated bool `json:"templated"`
}

// Mechanism kinds.
const (
	MechBind      = "bind"          // a bind mount
	MechMask      = "mask"          // a policy mask inside a bind
	MechTmpfs     = "tmpfs"         // a private tmpfs
	MechRootfs    = "rootfs"        // the read-only root
	MechProxy     = "proxy"         // the egress proxy
	MechForward   = "forward"       // a loopback forward
	MechNamespace = "namespace"     // kernel namespaces
	MechEnv       = "env"           // the environment
	MechUser      = "user"          // uid, gid, capabilities
	MechSeccomp   = "seccomp"       // the seccomp filter
	MechCgroup    = "cgroup"        // a cgroup limit
	MechRlimit    = "rlimit"        // a resource limit of the commands
	MechTier      = "tier"          // the isolation tier
	MechTimer     = "timer"         // the controller's deadline
	MechCapture   = "capture"       // output capture caps
	MechNone      = "none"          // nothing enforces it
	MechApprox    = "approximation" // the tier holds it in part (the plan says how)
	MechRecord    = "record"        // the host-side change record (undo, review)
)

// Mechanism is one thing that enforces a point.
type Mechanism struct {
	// Kind is one of bind, mask, tmpfs, rootfs, proxy, forward, namespace,
	// env, user, seccomp, cgroup, tier, timer, capture, none.
	Kind string `json:"kind"`
	// Detail says it in words, e.g. "bind /h/p -> /h/p read-only".
	Detail string `json:"detail"`
	// Source, Target, Access (read-only, read-write) and Options are set
	// for mounts; Value for limits and identities.
	Source  string   `json:"source,omitempty"`
	Target  string   `json:"target,omitempty"`
	Access  string   `json:"access,omitempty"`
	Options []string `json:"options,omitempty"`
	Value   string   `json:"value,omitempty"`
}

// Risk categories.
const (
	RiskExfiltration     = "exfiltration"
	RiskCodeExecution    = "code_execution"
	RiskHostRoot         = "host_root"
	RiskCommandInjection = "command_injection"
	RiskSecretLeak       = "secret_leak"
	RiskUntagged         = "untagged"
	RiskCallerPath       = "caller_chosen_path"
	RiskElevated         = "elevated_privilege"
	RiskNoIsolation      = "no_isolation"
	RiskHostServices     = "host_services"
	RiskBroadAccess      = "broad_access"
)

// Risk is one risk note.
type Risk struct {
	// Severity is high, medium or low.
	Severity string `json:"severity"`
	// Category is one of the Risk* constants.
	Category string `json:"category"`
	// Subject is the permission, parameter or field it is about.
	Subject string `json:"subject"`
	Note    string `json:"note"`
}

// shellStartup are files a shell runs at start-up (relative to home).
var shellStartup = []string{
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".config/fish",
	".config/autostart", ".config/systemd", ".gitconfig", ".config/git",
}

// dockerSockets are the Docker daemon's sockets: access to one is root on
// the host.
var dockerSockets = []string{"/var/run/docker.sock", "/run/docker.sock"}

// Explain builds the review of one tool from in. It is pure.
func Explain(in ExplainInput) Explanation {
	def := in.Def
	e := Explanation{
		SchemaVersion: ExplainSchemaVersion,
		Tool: ToolInfo{
			Name: def.Name, Version: def.Version, Description: def.Description,
			Path: def.Source.Path, SHA256: def.Source.SHA256, Tags: allTags(def),
			SecurityTier: string(in.Decision.Tier), Justification: def.Security.Justification,
			RequiredPermissions: append([]string{}, def.Security.RequiredPermissions...),
		},
		Policy:    in.Policy,
		Source:    SourceInfo{Scope: in.Decision.Source.Scope, Rule: in.Decision.Source.Rule, Trusted: in.Decision.Source.Trusted},
		Arguments: in.Arguments,
		Notes:     append([]string{}, in.Notes...),
	}
	if e.Tool.Tags == nil {
		e.Tool.Tags = []string{}
	}
	if e.Arguments.Given == nil {
		e.Arguments.Given = []string{}
	}
	if e.Arguments.Missing == nil {
		e.Arguments.Missing = []string{}
	}
	if e.Arguments.Approvals == nil {
		e.Arguments.Approvals = []string{}
	}
	x := explainer{in: in, e: &e}
	x.filesystem()
	x.network()
	x.environment()
	x.privilege()
	x.resources()
	x.risks()
	x.verdict()
	for _, list := range []*[]Point{&e.Filesystem, &e.Network, &e.Environment, &e.Privilege, &e.Resources} {
		if *list == nil {
			*list = []Point{}
		}
		for i := range *list {
			if (*list)[i].Mechanisms == nil {
				(*list)[i].Mechanisms = []Mechanism{}
			}
		}
	}
	if e.Risks == nil {
		e.Risks = []Risk{}
	}
	return e
}

type explainer struct {
	in ExplainInput
	e  *Explanation
}

func allTags(def *tool.Definition) []string {
	tags := append([]string(nil), def.Tags...)
	if def.Metadata != nil {
		for _, t := range def.Metadata.Tags {
			if !slices.Contains(tags, t) {
				tags = append(tags, t)
			}
		}
	}
	return tags
}

func (x *explainer) unsandboxed() bool { return x.tier() == string(tool.IsolationNone) }

// item returns the policy item with subject (and, for grants, index).
func (x *explainer) item(kind policy.ItemKind, subject string, grantIndex int) (policy.Item, bool) {
	for _, it := range x.in.Decision.Items {
		if it.Kind != kind {
			continue
		}
		if kind == policy.ItemGrant && it.Grant != nil && it.Grant.Index == grantIndex {
			return it, true
		}
		if kind != policy.ItemGrant && (subject == "" || it.Subject == subject) {
			return it, true
		}
	}
	return policy.Item{}, false
}

func (p *Point) decide(it policy.Item) {
	p.Verdict, p.Rule, p.Reason, p.Risk = string(it.Verdict), it.Rule, it.Reason, string(it.Risk)
	p.ApproveFlag, p.PolicyFix, p.ApprovedBy = it.ApproveFlag, it.PolicyFix, it.ApprovedBy
	if p.Meaning == "" {
		p.Meaning = it.Description
	}
}

func (x *explainer) notEnforced() Mechanism {
	return Mechanism{Kind: MechNone, Detail: "isolation none: nothing enforces this; the tool runs on the host with everything the user can reach"}
}

func denied() Mechanism {
	return Mechanism{Kind: MechNone, Detail: "not granted: the policy denies it, so the run is refused and nothing is set up"}
}

func access(write bool) string {
	if write {
		return "read-write"
	}
	return "read-only"
}

func (x *explainer) filesystem() {
	pl := x.plan()
	for _, g := range x.in.Grants {
		if g.Kind != permissions.KindMount {
			continue
		}
		m := g.Mount
		p := Point{Subject: g.String(), Requested: x.requested(g.Index, g.Permission), Meaning: g.Describe()}
		it, decided := x.item("grant", "", g.Index)
		switch {
		case decided && it.Verdict == policy.Deny:
			p.Mechanisms = append(p.Mechanisms, denied())
		case x.unsandboxed():
			p.Mechanisms = append(p.Mechanisms, x.notEnforced())
		default:
			found := false
			for _, mf := range pl.Spec.Mounts {
				if mf.Type == "bind" && mf.Destination == m.Target && (readOnly(mf) != m.Write) {
					found = true
					would := ""
					if !x.in.Planned {
						would = "would be a "
					}
					d := fmt.Sprintf("%sbind mount %s -> %s, %s (%s)", would, mf.Source, mf.Destination, access(m.Write), strings.Join(mf.Options, ","))
					if x.tier() == string(tier.Landlock) {
						// The plan's bind is a Landlock rule there: nothing
						// is mounted, the tool uses the host path.
						d = fmt.Sprintf("the plan's bind of %s, %s, as a Landlock rule of each command at its host path (this tier mounts nothing)", mf.Source, access(m.Write))
					}
					p.Mechanisms = append(p.Mechanisms, Mechanism{
						Kind: MechBind, Source: mf.Source, Target: mf.Destination, Access: access(m.Write), Options: mf.Options, Detail: d,
					})
				}
			}
			if !found {
				src := m.Resolved
				if src == "" {
					src = m.HostPath
				}
				p.Mechanisms = append(p.Mechanisms, Mechanism{
					Kind: MechBind, Source: src, Target: m.Target, Access: access(m.Write),
					Detail: fmt.Sprintf("would be a %s bind mount %s -> %s (not planned: %s)", access(m.Write), src, m.Target, x.whyUnplanned()),
				})
			}
			for _, mk := range x.in.Decision.Masks {
				if mk.Under != m.Target {
					continue
				}
				what := "made read-only"
				if mk.Hide {
					what = "hidden (empty, unreadable)"
				}
				detail := fmt.Sprintf("policy mask: %s is %s inside this mount (%s)", mk.Path, what, mk.Rule)
				if how, ok := approximation(pl, "masks"); ok && mk.Hide {
					detail = fmt.Sprintf("policy mask: %s inside this mount (%s): %s", mk.Path, mk.Rule, how)
				}
				if m.Write && x.notThere(mk) {
					detail = fmt.Sprintf("policy mask: %s (%s) did not exist when the run was planned, so nothing is mounted over it: the tool may create it, and the run's result warns when it did", mk.Path, mk.Rule)
				}
				p.Mechanisms = append(p.Mechanisms, Mechanism{Kind: MechMask, Target: mk.Path, Detail: detail})
			}
		}
		if decided {
			p.decide(it)
		}
		x.e.Filesystem = append(x.e.Filesystem, p)
	}
	x.e.Filesystem = append(x.e.Filesystem, x.templated(tool.PermFSRead, tool.PermFSWrite)...)
	// What the tool sees of the host besides its grants.
	base := Point{Subject: "host filesystem", Requested: "(not requested)", Verdict: VerdictAllow, Risk: "low",
		Rule: "default: closed", Reason: "nothing of the host is visible unless a permission grants it"}
	if x.unsandboxed() {
		base.Meaning = "the whole host filesystem, with the user's own rights"
		base.Mechanisms = []Mechanism{x.notEnforced()}
		base.Risk, base.Rule, base.Reason = "high", "isolation none", "no sandbox"
	} else if x.tier() == string(tier.Landlock) {
		base.Meaning = "system directories read-only, the parts of /etc programs need and /proc readable, a private scratch directory as TMPDIR and HOME; nothing else of the host (its /tmp included)"
		base.Mechanisms = []Mechanism{{Kind: MechTier, Value: string(tier.Landlock),
			Detail: "Landlock, applied by each command to itself: reads and execution only beneath the system directories and the grants, writes only beneath the write grants and the scratch directory (removed after the run); nothing is mounted"}}
		if m, _, ok := tmpfsMechanism(pl); ok {
			base.Mechanisms = append(base.Mechanisms, m)
		}
	} else {
		base.Meaning = "system directories read-only, a private /tmp, a minimal /dev and a fresh /proc; nothing else of the host"
		if pl.Spec.Root != nil && pl.Spec.Root.Readonly {
			base.Mechanisms = append(base.Mechanisms, Mechanism{Kind: MechRootfs, Access: "read-only", Detail: "root filesystem mounted read-only"})
		}
		if m, _, ok := tmpfsMechanism(pl); ok {
			base.Mechanisms = append(base.Mechanisms, m)
		}
		for _, mf := range pl.Spec.Mounts {
			if mf.Type == "tmpfs" && mf.Destination != "/tmp" && mf.Destination != "/dev" && mf.Destination != "/dev/shm" && readOnly(mf) && !x.isMask(mf.Destination) {
				base.Mechanisms = append(base.Mechanisms, Mechanism{Kind: MechTmpfs, Target: mf.Destination, Access: "read-only",
					Detail: fmt.Sprintf("%s exists as an empty read-only directory (the working directory, not granted)", mf.Destination)})
			}
		}
	}
	x.e.Filesystem = append(x.e.Filesystem, base)
}

// tmpfsMechanism is what holds the tool's scratch space, read from the
// spec: the size of its /tmp mount, or in the landlock tier, which mounts
// nothing, the RLIMIT_FSIZE each command gets. None: the tool has no
// scratch space of its own (the none tier).
func tmpfsMechanism(pl *isolation.Plan) (Mechanism, int64, bool) {
	if pl.Tier == isolation.TierLandlock {
		for _, r := range pl.Spec.Process.Rlimits {
			if r.Type == "RLIMIT_FSIZE" {
				n := int64(r.Hard)
				return Mechanism{Kind: MechRlimit, Value: "RLIMIT_FSIZE=" + strconv.FormatInt(n, 10),
					Detail: fmt.Sprintf("no tmpfs holds the scratch directory: it is on the host's temporary directory, and what caps it is RLIMIT_FSIZE, %s for each file the tool writes (there or in a write grant), not for all of them together", units.FormatSize(n))}, n, true
			}
		}
		return Mechanism{}, 0, false
	}
	n, err := specconv.TmpfsBytes(pl.Spec)
	if err != nil || n <= 0 {
		return Mechanism{}, 0, false
	}
	return Mechanism{Kind: MechTmpfs, Target: "/tmp", Access: "read-write", Value: strconv.FormatInt(n, 10),
		Detail: fmt.Sprintf("/tmp is a private tmpfs of %s, gone after the run", units.FormatSize(n))}, n, true
}

// notThere reports whether the policy's mask mk names one path that the
// run's own plan masks nothing over: it did not exist when the run was
// planned, and a mask covers only what exists (a pattern's later matches
// are looked for after the run, so only a literal path is judged).
func (x *explainer) notThere(mk policy.PathMask) bool {
	if !x.in.Planned || pathglob.HasMeta(mk.Path) {
		return false
	}
	for _, pm := range x.plan().Masked {
		if covers(pm.Path, mk.Path) {
			return false
		}
	}
	return true
}

func (x *explainer) isMask(target string) bool {
	for _, mk := range x.in.Decision.Masks {
		if mk.Path == target {
			return true
		}
	}
	return false
}

func (x *explainer) whyUnplanned() string {
	if x.in.Decision.Verdict == policy.Deny {
		return "the policy denies the run"
	}
	if !x.in.Arguments.Bound {
		return "the tool could not be bound"
	}
	return "the run could not be planned"
}

// requested returns the permission as the definition writes it.
func (x *explainer) requested(index int, fallback string) string {
	perms := x.in.Def.Security.RequiredPermissions
	if index >= 0 && index < len(perms) {
		return perms[index]
	}
	return fallback
}

// templated returns points for the templated permissions of the kinds.
func (x *explainer) templated(kinds ...tool.PermKind) []Point {
	var out []Point
	add := func(t TemplatedPermission, unresolvable bool) {
		kind := permKind(t.Permission)
		if !slices.Contains(kinds, kind) {
			return
		}
		p := Point{Subject: t.Permission, Requested: x.requested(t.Index, t.Permission), Templated: !unresolvable,
			Verdict: VerdictDepends, Risk: "medium"}
		switch kind {
		case tool.PermFSRead:
			p.Meaning = "may read files under a path the caller chooses (" + strings.Join(t.Params, ", ") + ")"
		case tool.PermFSWrite:
			p.Meaning = "may read, create, change and delete files under a path the caller chooses (" + strings.Join(t.Params, ", ") + ")"
			p.Risk = "high"
		case tool.PermNetExternal:
			p.Meaning = "may connect to a host the caller chooses (" + strings.Join(t.Params, ", ") + ")"
			p.Risk = "high"
		default:
			p.Meaning = "depends on " + strings.Join(t.Params, ", ")
		}
		if unresolvable {
			p.Verdict, p.Risk = VerdictDeny, "high"
			p.Rule = "grammar"
			p.Reason = t.Reason
			p.Meaning = "does not resolve: " + t.Reason
		} else {
			p.Rule = "decided at run time"
			p.Reason = "the path or host comes from " + strings.Join(t.Params, ", ") +
				", which was not given; the policy decides it when the tool runs (pass NAME=VALUE to review a concrete value)"
		}
		switch {
		case x.unsandboxed():
			p.Mechanisms = []Mechanism{x.notEnforced()}
		case kind == tool.PermFSRead || kind == tool.PermFSWrite:
			p.Mechanisms = []Mechanism{{Kind: MechBind, Access: access(kind == tool.PermFSWrite),
				Detail: fmt.Sprintf("a %s bind mount of the path given, symlinks resolved on the host first", access(kind == tool.PermFSWrite))}}
		case kind == tool.PermNetExternal:
			p.Mechanisms = []Mechanism{{Kind: MechProxy, Detail: "an egress proxy allow rule for the host given"}}
		}
		out = append(out, p)
	}
	for _, t := range x.in.Templated {
		add(t, false)
	}
	for _, t := range x.in.Unresolvable {
		add(t, true)
	}
	return out
}

// permKind returns the kind of a permission string by its prefix.
func permKind(perm string) tool.PermKind {
	for _, k := range []tool.PermKind{tool.PermFSRead, tool.PermFSWrite, tool.PermNetExternal, tool.PermNetLocalhost, tool.PermEnv} {
		if strings.HasPrefix(perm, string(k)+":") {
			return k
		}
	}
	return ""
}

func (x *explainer) network() {
	var egress, local int
	for _, g := range x.in.Grants {
		if g.Kind != permissions.KindEgress && g.Kind != permissions.KindLocalhost {
			continue
		}
		p := Point{Subject: g.String(), Requested: x.requested(g.Index, g.Permission), Meaning: g.Describe()}
		it, decided := x.item("grant", "", g.Index)
		switch {
		case decided && it.Verdict == policy.Deny:
			p.Mechanisms = []Mechanism{denied()}
		case x.unsandboxed():
			p.Mechanisms = []Mechanism{x.notEnforced()}
		case g.Kind == permissions.KindEgress:
			egress++
			ports := make([]string, 0, 2)
			for _, pt := range g.Egress.Ports() {
				ports = append(ports, strconv.Itoa(pt))
			}
			p.Mechanisms = []Mechanism{{Kind: MechProxy, Value: g.Egress.Host + ":" + strings.Join(ports, ","),
				Detail: fmt.Sprintf("egress proxy allow rule %s on %s; the proxy refuses loopback, private, link-local and metadata addresses", g.Egress.Host, permissions.DescribePorts(g.Egress.Ports()))}}
		case x.tier() == string(tier.Landlock):
			local++
			p.Mechanisms = []Mechanism{{Kind: MechForward, Value: strconv.Itoa(g.Localhost.Port),
				Detail: fmt.Sprintf("the tool's connect() to 127.0.0.1:%d is answered by the run's init with a connection through the egress proxy to this host's 127.0.0.1:%d (there is no network namespace: the tool's own connect never reaches the kernel), and nothing else of the loopback", g.Localhost.Port, g.Localhost.Port)}}
		default:
			local++
			p.Mechanisms = []Mechanism{{Kind: MechForward, Value: strconv.Itoa(g.Localhost.Port),
				Detail: fmt.Sprintf("127.0.0.1:%d in the sandbox is forwarded over the egress bridge to the host's 127.0.0.1:%d, and nothing else of the host's loopback", g.Localhost.Port, g.Localhost.Port)}}
		}
		if decided {
			p.decide(it)
		}
		x.e.Network = append(x.e.Network, p)
	}
	x.e.Network = append(x.e.Network, x.templated(tool.PermNetExternal, tool.PermNetLocalhost)...)
	x.inspection()
	base := Point{Subject: "network", Requested: "(not requested)", Verdict: VerdictAllow, Risk: "low", Rule: "default: no network"}
	switch {
	case x.unsandboxed():
		base.Meaning = "the host's network, unrestricted"
		base.Mechanisms = []Mechanism{x.notEnforced()}
		base.Risk, base.Rule, base.Reason = "high", "isolation none", "no sandbox"
	case egress+local == 0 && len(x.e.Network) == 0 && x.tier() == string(tier.Landlock):
		base.Meaning = "no network at all: no socket can be made"
		base.Reason = "the tool asks for no network permission"
		base.Mechanisms = []Mechanism{
			{Kind: MechSeccomp, Detail: "socket() fails for every family, Unix included (no socket of the host can be reached); connect, bind and listen are refused"},
			{Kind: MechTier, Value: string(tier.Landlock), Detail: "Landlock (ABI 4): no TCP connect or bind"},
		}
	case egress+local == 0 && len(x.e.Network) == 0:
		base.Meaning = "no network at all: no interface but loopback, no resolver, no route out"
		base.Reason = "the tool asks for no network permission"
		base.Mechanisms = []Mechanism{{Kind: MechNamespace, Value: "network", Detail: "an empty network namespace (--network none for the container tier)"}}
	case x.tier() == string(tier.Landlock):
		proxyPort, alsoLocal := "PORT", ""
		if port := egressPort(x.plan()); port > 0 {
			proxyPort = strconv.Itoa(port)
		}
		if local > 0 {
			alsoLocal = " (and 127.0.0.1 at the network:localhost ports above)"
		}
		base.Requested = "(network permissions above)"
		base.Rule = "default: egress only through the proxy"
		base.Meaning = "only the hosts and ports granted above, through the per-run egress proxy; every connection is recorded"
		base.Reason = "there is no network namespace, so every connect() of the tool is the run's init's to answer; HTTP_PROXY, HTTPS_PROXY and ALL_PROXY point at 127.0.0.1:" + proxyPort
		base.Mechanisms = []Mechanism{
			{Kind: MechSeccomp, Detail: fmt.Sprintf("every connect() waits for the run's init (seccomp user notification), which reads the address and answers 127.0.0.1:%s%s alone, with a socket of its own connected to the proxy; any other address, IPv6 and every Unix socket fail (ECONNREFUSED), and the tool's own connect never reaches the kernel. Sockets: TCP over IPv4 or IPv6 only; bind and listen are refused", proxyPort, alsoLocal)},
			{Kind: MechTier, Value: string(tier.Landlock), Detail: "Landlock (ABI 4): no TCP connect or bind of the tool's own"},
			{Kind: MechProxy, Detail: "deny wins over allow; names are resolved on the host, checked, and the checked address is dialled"},
		}
	default:
		base.Requested = "(network permissions above)"
		base.Rule = "default: egress only through the proxy"
		base.Meaning = "only the hosts and ports granted above, through the per-run egress proxy; every connection is recorded"
		base.Reason = "the sandbox has no resolver and no route; HTTP_PROXY, HTTPS_PROXY and ALL_PROXY point at the proxy"
		base.Mechanisms = []Mechanism{
			{Kind: MechNamespace, Value: "network", Detail: "an empty network namespace; the proxy is reached over a bind-mounted Unix socket"},
			{Kind: MechProxy, Detail: "deny wins over allow; names are resolved on the host, checked, and the checked address is dialled"},
		}
	}
	x.e.Network = append(x.e.Network, base)
}

func (x *explainer) environment() {
	def := x.in.Def
	inherit := def.Environment != nil && def.Environment.Inherit
	p := Point{Subject: "environment.inherit", Requested: "environment.inherit: " + strconv.FormatBool(inherit)}
	if inherit {
		p.Meaning = "may read every environment variable of the host (tokens and keys included), except those environment.deny names"
		p.Mechanisms = []Mechanism{{Kind: MechEnv, Detail: "the host environment is copied into every command, " + x.envWithheld()}}
		if it, ok := x.item("environment", "environment.inherit", -1); ok {
			p.decide(it)
		}
	} else {
		names := envNames(x.plan().Spec)
		p.Meaning = "a scrubbed environment: only PATH, HOME, LANG, the tool's own variables and granted ones"
		detail := "the environment is built from scratch"
		if len(names) > 0 {
			detail += ": " + strings.Join(names, ", ")
		}
		p.Mechanisms = []Mechanism{{Kind: MechEnv, Detail: detail}}
		p.Verdict, p.Risk, p.Rule, p.Reason = VerdictAllow, "low", "default: scrubbed environment", "nothing of the host environment is passed unless granted"
	}
	if x.unsandboxed() {
		p.Mechanisms = append(p.Mechanisms, Mechanism{Kind: MechNone, Detail: "isolation none: the tool can still read the user's files, so scrubbing the environment does not keep secrets from it"})
	}
	x.e.Environment = append(x.e.Environment, p)
	for _, g := range x.in.Grants {
		if g.Kind != permissions.KindEnv {
			continue
		}
		gp := Point{Subject: g.String(), Requested: x.requested(g.Index, g.Permission), Meaning: g.Describe(),
			Mechanisms: []Mechanism{{Kind: MechEnv, Value: g.Env.Name, Detail: "the host's value of " + g.Env.Name + " is passed in; nothing else of the host environment"}}}
		if it, ok := x.item("grant", "", g.Index); ok {
			gp.decide(it)
			if it.Verdict == policy.Deny {
				gp.Mechanisms = []Mechanism{denied()}
			}
		}
		x.e.Environment = append(x.e.Environment, gp)
	}
	x.e.Environment = append(x.e.Environment, x.templated(tool.PermEnv)...)
	if def.Environment != nil && len(def.Environment.Variables) > 0 {
		var names []string
		for k := range def.Environment.Variables {
			names = append(names, k)
		}
		sort.Strings(names)
		x.e.Environment = append(x.e.Environment, Point{
			Subject: "environment.variables", Requested: "environment.variables: " + strings.Join(names, ", "),
			Meaning:    "the tool sets its own variables " + strings.Join(names, ", ") + " (values from the definition, not the host)",
			Mechanisms: []Mechanism{{Kind: MechEnv, Detail: "set in every command's environment"}},
			Verdict:    VerdictAllow, Risk: "low", Rule: "default: a tool's own variables are allowed", Reason: "they hold nothing of the host",
		})
	}
}

// envWithheld says what an inherited environment leaves out, read from
// the policy in force (environment.deny) and the definition (the
// variables its credentials are read from).
func (x *explainer) envWithheld() string {
	var deny []string
	if x.in.Rules != nil {
		deny = x.in.Rules.Environment.Deny
	}
	w := "minus the names the policy's environment.deny matches (" + strings.Join(deny, ", ") + ")"
	if len(deny) == 0 {
		w = "all of it (the policy's environment.deny is empty)"
	}
	if def := x.in.Def; def.Sandboxed != nil {
		var creds []string
		for _, c := range def.Sandboxed.Credentials {
			if c.Env != "" {
				creds = append(creds, c.Env)
			}
		}
		if len(creds) > 0 {
			w += ", and the credentials' variables " + strings.Join(creds, ", ")
		}
	}
	return w
}

func (x *explainer) privilege() {
	pl, def := x.plan(), x.in.Def
	tr := x.tier()
	uid, gid := user(pl.Spec)
	// Security tier.
	tp := Point{Subject: "security tier", Requested: "tags: " + strings.Join(x.e.Tool.Tags, ", ")}
	if len(x.e.Tool.Tags) == 0 {
		tp.Requested = "tags: (none)"
	}
	tp.Mechanisms = []Mechanism{{Kind: MechTier, Value: string(x.in.Decision.Tier), Detail: "the policy's tool-level rules (approval.auto-approve, approval.auto-deny) on tier " + string(x.in.Decision.Tier)}}
	if it, ok := x.item("tool", "", -1); ok {
		tp.decide(it)
	}
	x.e.Privilege = append(x.e.Privilege, tp)

	// Isolation.
	req := string(def.Security.Isolation)
	if req == "" {
		req = string(tool.IsolationProcess)
	}
	ip := Point{Subject: "isolation", Requested: "isolation: " + req}
	switch {
	case pl.Backend == "kubernetes":
		ip.Mechanisms = []Mechanism{{Kind: MechTier, Value: tr, Detail: "Kubernetes backend: a pod of its own on the operator's cluster from image " + orUnknown(pl.Image) + runtimeClassWords(pl.Runtime) +
			": never as root, a read-only root filesystem, every capability dropped, a NetworkPolicy with no rule; read grants travel in a ConfigMap mounted read-only, write grants are copied in and back (docs/tiers.md, The Kubernetes backend)"}}
	case tr == string(tool.IsolationNone):
		ip.Mechanisms = []Mechanism{{Kind: MechTier, Value: tr, Detail: "none: the commands run directly on the host; no grant is enforced"}}
	case tr == string(tool.IsolationContainer):
		ip.Mechanisms = []Mechanism{{Kind: MechTier, Value: tr, Detail: "container tier: a Docker container from image " + orUnknown(pl.Image) + ", network none, the same mounts, limits and seccomp profile" +
			" (from a CI container whose engine is the host's, through its mounted socket: a read grant the engine cannot see is a read-only copy made when the run starts, without what the masks cover; such a write grant is refused)"}}
	case tr == string(tier.Landlock):
		ip.Mechanisms = []Mechanism{{Kind: MechTier, Value: tr, Detail: "landlock tier: no namespaces, mounts or cgroup of its own; each command confines itself (Landlock over the system directories, the grants and a per-run scratch directory; seccomp; no_new_privs) and the run's init, outside, kills every descendant at the end"}}
	case tr == "":
	default:
		ip.Mechanisms = []Mechanism{{Kind: MechTier, Value: tr, Detail: "process tier: sandboxed's own init in new namespaces, pivoted into a read-only root"}}
	}
	if ns := namespaces(pl.Spec); tr != string(tool.IsolationNone) && len(ns) > 0 {
		ip.Mechanisms = append(ip.Mechanisms, Mechanism{Kind: MechNamespace, Value: strings.Join(ns, ","),
			Detail: "new namespaces: " + strings.Join(ns, ", ")})
	}
	if it, ok := x.item("isolation", "", -1); ok {
		ip.decide(it)
	}
	if tr != "" && tr != req {
		ip.Meaning = strings.TrimSpace(ip.Meaning + fmt.Sprintf(" (requested %s, runs in %s)", req, tr))
	}
	x.e.Privilege = append(x.e.Privilege, ip)

	// Execution privilege.
	priv := string(pl.Privilege)
	if priv == "" {
		priv = string(def.Security.ExecutionPrivilege)
	}
	if priv == "" {
		priv = string(tool.PrivilegeSameAsUser)
	}
	reqPriv := string(def.Security.ExecutionPrivilege)
	if reqPriv == "" {
		reqPriv = string(tool.PrivilegeSameAsUser)
	}
	pp := Point{Subject: "execution-privilege", Requested: "execution-privilege: " + reqPriv}
	if x.unsandboxed() {
		pp.Mechanisms = []Mechanism{{Kind: MechUser, Value: fmt.Sprint(uid), Detail: "runs as the invoking user on the host, with the user's own rights"}}
	} else {
		who := fmt.Sprintf("uid %d, gid %d", uid, gid)
		switch {
		case x.in.HostID != nil && x.in.HostID.UID != uid:
			who += fmt.Sprintf(" inside a user namespace; on the host uid %d, gid %d", x.in.HostID.UID, x.in.HostID.GID)
		case x.in.HostID != nil:
			who += ", the same ids on the host"
		case slices.Contains(namespaces(pl.Spec), string(specs.UserNamespace)):
			who += " inside a user namespace (mapped to an unprivileged host id, never host root)"
		case tr == string(tier.Landlock):
			who += ", the same ids on the host (no user namespace: as root a uid and gid of the run's own, never an account's or 0; else yours)"
		}
		caps := "no capabilities"
		if cs := capabilities(pl.Spec); len(cs) > 0 {
			caps = "capabilities " + strings.Join(cs, ", ")
		}
		pp.Mechanisms = []Mechanism{{Kind: MechUser, Value: fmt.Sprintf("%d:%d", uid, gid), Detail: who + "; " + caps}}
		if pl.Spec.Process != nil && pl.Spec.Process.NoNewPrivileges {
			pp.Mechanisms = append(pp.Mechanisms, Mechanism{Kind: MechUser, Value: "no_new_privs", Detail: "no_new_privs: setuid binaries gain nothing"})
		}
	}
	if it, ok := x.item("privilege", "", -1); ok {
		pp.decide(it)
	}
	x.e.Privilege = append(x.e.Privilege, pp)

	// Seccomp.
	sp := Point{Subject: "seccomp", Requested: "(follows execution-privilege " + priv + ")", Verdict: VerdictAllow, Risk: "low", Rule: "default: seccomp filter per privilege"}
	if x.unsandboxed() {
		sp.Meaning = "no system call filter"
		sp.Mechanisms = []Mechanism{x.notEnforced()}
		sp.Risk, sp.Reason = "high", "isolation none"
	} else {
		sp.Meaning = "system calls that reach kernel attack surface (modules, mounts, namespaces, tracing, bpf, io_uring, keyrings) fail with EPERM"
		sp.Reason = "every sandbox gets a filter; reduced privilege gets a tighter one"
		profile, action, denied := seccomp(pl)
		sp.Mechanisms = []Mechanism{{Kind: MechSeccomp, Value: profile,
			Detail: fmt.Sprintf("seccomp profile %s: default action %s, %d system calls denied, namespace-creating clone denied", profile, action, denied)}}
	}
	x.e.Privilege = append(x.e.Privilege, sp)
}

// runtimeClassWords names a pod's RuntimeClass, "" for the nodes' default.
func runtimeClassWords(rc string) string {
	if rc == "" {
		return " (the nodes' default runtime)"
	}
	return " (RuntimeClass " + rc + ")"
}

func orUnknown(s string) string {
	if s == "" {
		return "(default)"
	}
	return s
}

func (x *explainer) limitPoint(name, requested, meaning string, mech Mechanism) Point {
	p := Point{Subject: "limits." + name, Requested: requested, Meaning: meaning, Mechanisms: []Mechanism{mech},
		Verdict: VerdictAllow, Risk: "low"}
	if requested == "" {
		p.Requested = "(not requested)"
		p.Rule, p.Reason = "limits."+name+".default", "the tool asks for nothing, so the policy's default applies"
	} else {
		p.Rule, p.Reason = "limits."+name+".max", "the request is within the policy's cap"
	}
	if it, ok := x.item("limit", "limits."+name, -1); ok {
		p.decide(it)
	}
	if how, ok := approximation(x.plan(), name); ok {
		p.Mechanisms = append(p.Mechanisms, Mechanism{Kind: MechApprox, Detail: "approximated in the " + x.tier() + " tier: " + how})
	}
	return p
}

func (x *explainer) resources() {
	pl, def := x.plan(), x.in.Def
	mem, swapBytes := memory(pl.Spec)
	out := x.in.Decision.Limits.OutputBytes
	var memReq, toReq, pidsReq, outReq string
	if def.Resources != nil && def.Resources.MaxMemory > 0 {
		memReq = "resources.max-memory: " + units.FormatSize(def.Resources.MaxMemory)
	}
	switch {
	case def.Resources != nil && def.Resources.Timeout > 0:
		toReq = "resources.timeout: " + def.Resources.Timeout.String()
	case def.Timeout > 0:
		toReq = "timeout: " + def.Timeout.String()
	}
	if def.Sandboxed != nil && def.Sandboxed.PidsLimit > 0 {
		pidsReq = "sandboxed.pids-limit: " + strconv.FormatInt(def.Sandboxed.PidsLimit, 10)
	}
	for _, s := range def.Steps {
		if s.Output != nil && s.Output.BufferLimit > 0 {
			outReq = "buffer-limit: " + units.FormatSize(s.Output.BufferLimit)
		}
	}
	swap := "no swap"
	if swapBytes > mem {
		swap = "swap " + units.FormatSize(swapBytes-mem)
	}
	x.e.Resources = append(x.e.Resources,
		x.limitPoint("memory", memReq, "may use up to "+units.FormatSize(mem)+" of memory; beyond it the kernel kills it (status oom, exit 137)",
			memoryMechanism(pl, mem, swapBytes, swap)),
		x.limitPoint("timeout", toReq, "may run for "+durationWords(pl.Limits.Timeout)+"; then it is stopped (status timeout, exit 124)",
			Mechanism{Kind: MechTimer, Value: strconv.FormatInt(pl.Limits.Timeout.Milliseconds(), 10),
				Detail: fmt.Sprintf("controller deadline %s: SIGTERM to the whole tree, %s grace, then SIGKILL of the cgroup", durationWords(pl.Limits.Timeout), durationWords(pl.Limits.KillGrace))}),
		x.limitPoint("pids", pidsReq, fmt.Sprintf("may run up to %d processes and threads at once", toolPids(pl)), pidsMechanism(pl)),
		x.limitPoint("output", outReq, "stdout and stderr are each kept up to "+units.FormatSize(out)+", then truncated with a marker",
			Mechanism{Kind: MechCapture, Value: strconv.FormatInt(out, 10), Detail: fmt.Sprintf("capture cap %s per stream", units.FormatSize(out))}),
	)
	if x.in.Rules != nil {
		b := x.in.Rules.UndoBounds()
		x.e.Resources = append(x.e.Resources, undoPoints(writeGrants(def), &b)...)
	}
	if p, ok := x.cpuPoint(); ok {
		x.e.Resources = append(x.e.Resources, p)
	}
	if m, n, ok := tmpfsMechanism(pl); ok && !x.unsandboxed() {
		var req string
		if def.Sandboxed != nil && def.Sandboxed.TmpfsSize > 0 {
			req = "sandboxed.tmpfs-size: " + units.FormatSize(def.Sandboxed.TmpfsSize)
		}
		meaning := "may keep up to " + units.FormatSize(n) + " in its private /tmp; beyond it a write fails (ENOSPC)"
		if m.Kind == MechRlimit {
			meaning = "may write files of up to " + units.FormatSize(n) + " each; beyond it a write fails (EFBIG)"
		}
		x.e.Resources = append(x.e.Resources, x.limitPoint("tmpfs", req, meaning, m))
	}
}

// cpuPoint is the CPU limit, read from the spec's quota and period (none:
// no point). Its mechanism's value is "QUOTA PERIOD" in microseconds, as
// cgroup v2's cpu.max says it; a pod's is what the node's kubelet makes
// of the pod's limit in thousandths of a CPU.
func (x *explainer) cpuPoint() (Point, bool) {
	pl, def := x.plan(), x.in.Def
	r, err := specconv.ReadResources(pl.Spec)
	if err != nil || r.CPUQuota <= 0 {
		return Point{}, false
	}
	var req string
	if def.Sandboxed != nil && def.Sandboxed.CPUs > 0 {
		req = "sandboxed.cpus: " + strconv.FormatFloat(def.Sandboxed.CPUs, 'f', -1, 64)
	}
	quota, period := r.CPUQuota, int64(r.CPUPeriod)
	detail := fmt.Sprintf("cgroup CPU quota %s in each %s period (cpu.max on cgroup v2; cpu.cfs_quota_us and cpu.cfs_period_us on v1)",
		time.Duration(quota)*time.Microsecond, time.Duration(period)*time.Microsecond)
	mech := Mechanism{Kind: MechCgroup}
	switch {
	case rlimitsHold(pl):
		mech = Mechanism{Kind: MechNone, Detail: "no cgroup sandboxed may use here holds a CPU quota, and no rlimit stands in for it: the run is refused when it starts"}
	case pl.Backend == isolation.BackendKubernetes:
		m := r.MilliCPUs()
		quota, period = m*isolation.CPUPeriod/1000, isolation.CPUPeriod
		detail = fmt.Sprintf("the pod's CPU limit %dm, which the node's kubelet makes a cgroup CPU quota of %s in each %s period", m,
			time.Duration(quota)*time.Microsecond, time.Duration(period)*time.Microsecond)
	case pl.Tier == isolation.TierContainer:
		detail = "the container's " + detail + ", set by the engine"
	}
	if mech.Kind == MechCgroup {
		mech.Value, mech.Detail = fmt.Sprintf("%d %d", quota, period), detail
	}
	cpus := strconv.FormatFloat(float64(quota)/float64(period), 'f', -1, 64)
	meaning := fmt.Sprintf("may use %s CPUs' worth of time: %s in each %s; beyond it its threads wait, nothing is killed", cpus,
		time.Duration(quota)*time.Microsecond, time.Duration(period)*time.Microsecond)
	p := x.limitPoint("cpus", req, meaning, mech)
	if r := x.in.Rules; r != nil {
		switch {
		case r.Limits.CPUs.Max == 0 && p.Rule == "limits.cpus.max":
			p.Reason = "the policy sets no cap (limits.cpus.max: 0): the tool's own request"
		case r.Limits.CPUs.Default == 0 && r.Limits.CPUs.Max > 0 && p.Rule == "limits.cpus.default":
			p.Rule = "limits.cpus.max"
			p.Reason = "the tool asks for none and the policy's default is none (limits.cpus.default: 0); under a cap every run gets the cap"
		}
	}
	return p, true
}

// pidsMechanism is how the pids limit is enforced: the run's cgroup, or
// under gVisor, whose processes the host sees only as the Sentry's tasks,
// the limit on the uid's tasks in gVisor's own kernel that the init gives
// each command, beside a host bound on the sandbox's tasks.
func pidsMechanism(pl *isolation.Plan) Mechanism {
	if rlimitsHold(pl) {
		n := specPids(pl.Spec)
		d := fmt.Sprintf("RLIMIT_NPROC %d on the tool's uid, the run's own: the tool's %d (the init's threads are another uid's), set on each command", n, toolPids(pl))
		if uid, _ := user(pl.Spec); !landlock.IsToolID(uid) {
			d = fmt.Sprintf("RLIMIT_NPROC of the tool's %d above the tasks its uid, %d, runs when each command starts (the init's threads among them), set on each command", toolPids(pl), uid)
		}
		return Mechanism{Kind: MechRlimit, Value: strconv.FormatInt(n, 10), Detail: d + "; no cgroup sandboxed may use here holds it"}
	}
	if pl.Runtime == "runsc" {
		return Mechanism{Kind: MechRlimit, Value: strconv.FormatInt(toolPids(pl), 10),
			Detail: fmt.Sprintf("RLIMIT_NPROC %d in gVisor's kernel (plus the init's own tasks), set on each command; the host's pids limit of the container bounds gVisor's own tasks", toolPids(pl))}
	}
	pids := specPids(pl.Spec)
	d := fmt.Sprintf("cgroup pids.max %d", pids)
	if t := toolPids(pl); t != pids {
		d += fmt.Sprintf(": the tool's %d and %d spare threads of the sandbox's init", t, pids-t)
	}
	return Mechanism{Kind: MechCgroup, Value: strconv.FormatInt(pids, 10), Detail: d}
}

// memoryMechanism is how the memory limit is enforced: the run's cgroup,
// or where a run outside namespaces has none (rlimitsHold), RLIMIT_DATA
// of each process.
func memoryMechanism(pl *isolation.Plan, mem, swapBytes int64, swap string) Mechanism {
	if rlimitsHold(pl) {
		return Mechanism{Kind: MechRlimit, Value: strconv.FormatInt(mem, 10),
			Detail: fmt.Sprintf("RLIMIT_DATA %s for each process of the tool, set on each command; no cgroup sandboxed may use here holds it", units.FormatSize(mem))}
	}
	return Mechanism{Kind: MechCgroup, Value: strconv.FormatInt(mem, 10),
		Detail: fmt.Sprintf("cgroup memory limit %s (memory+swap %s: %s)", units.FormatSize(mem), units.FormatSize(swapBytes), swap)}
}

// rlimitsHold reports whether pl's limits are rlimits: a run started
// outside namespaces (the landlock and none tiers) whose spec names no
// cgroup, the planner having found none sandboxed may use here.
func rlimitsHold(pl *isolation.Plan) bool {
	return pl.Backend != isolation.BackendKubernetes && (pl.Tier == isolation.TierLandlock || pl.Tier == isolation.TierNone) &&
		pl.Spec != nil && pl.Spec.Linux != nil && pl.Spec.Linux.CgroupsPath == ""
}

// hostIDWords names the host uid the sandbox's user is, where a user
// namespace makes it another than the one it has inside (root inside is
// not root on the host).
func (x *explainer) hostIDWords() string {
	uid, _ := user(x.plan().Spec)
	if x.in.HostID == nil || x.in.HostID.UID == uid {
		return ""
	}
	return fmt.Sprintf(" (host uid %d through a user namespace)", x.in.HostID.UID)
}

func durationWords(d time.Duration) string {
	if d <= 0 {
		return "no limit"
	}
	return d.String()
}

func (x *explainer) risk(sev, cat, subject, note string) {
	for _, r := range x.e.Risks {
		if r.Category == cat && r.Subject == subject {
			return
		}
	}
	x.e.Risks = append(x.e.Risks, Risk{Severity: sev, Category: cat, Subject: subject, Note: note})
}

// covers reports whether a grant of dir reaches p: p is dir or under it.
func covers(dir, p string) bool { return pathglob.Within(p, dir) }

func (x *explainer) risks() {
	in, def := x.in, x.in.Def
	home := in.Home
	for _, g := range in.Grants {
		switch g.Kind {
		case permissions.KindMount:
			x.mountRisks(g, home)
		case permissions.KindEgress:
			e := g.Egress
			switch {
			case e.Any():
				x.risk("high", RiskExfiltration, g.String(), "egress to any public host: whatever the tool can read can be sent anywhere")
			case e.Wildcard && !strings.Contains(e.Rule().Domain(), "."):
				x.risk("high", RiskExfiltration, g.String(), "egress to every host under the top-level domain "+e.Rule().Domain()+": anyone can register one and receive what the tool reads")
			case e.Wildcard:
				x.risk("medium", RiskExfiltration, g.String(), "egress to every subdomain of "+e.Rule().Domain()+": fine for a provider's API, but a domain that hosts user content lets data leave")
			}
		case permissions.KindLocalhost:
			x.risk("high", RiskHostServices, g.String(), fmt.Sprintf("exposes the host service on 127.0.0.1:%d; local databases and daemons often trust every local client", g.Localhost.Port))
		case permissions.KindEnv:
			if g.Env.Name == "DOCKER_HOST" {
				x.risk("high", RiskHostRoot, g.String(), "DOCKER_HOST points at the Docker daemon: control of it is root on the host")
			} else if g.Env.Name == "SSH_AUTH_SOCK" {
				x.risk("high", RiskSecretLeak, g.String(), "SSH_AUTH_SOCK names the ssh agent: with the socket the tool could sign in as the user")
			} else if permissions.LooksSecret(g.Env.Name) {
				x.risk("medium", RiskSecretLeak, g.String(), g.Env.Name+" looks like a credential; the tool receives its value")
			}
		}
	}
	for _, t := range in.Templated {
		sev := "medium"
		kind := permKind(t.Permission)
		what := "the path"
		if kind == tool.PermFSWrite {
			sev = "high"
		}
		if kind == tool.PermNetExternal || kind == tool.PermNetLocalhost {
			what, sev = "the host", "high"
		}
		x.risk(sev, RiskCallerPath, t.Permission, fmt.Sprintf("%s of %s comes from %s: the caller (an agent, a prompt) chooses it; the policy checks each value at run time",
			what, t.Permission, strings.Join(t.Params, ", ")))
	}
	for _, g := range in.Grants {
		if ps := permissions.PermissionParams(x.requested(g.Index, "")); len(ps) > 0 {
			sev := "medium"
			if g.Kind == permissions.KindMount && g.Mount.Write || g.Kind == permissions.KindEgress {
				sev = "high"
			}
			x.risk(sev, RiskCallerPath, x.requested(g.Index, ""), fmt.Sprintf("%s comes from the parameter %s: the caller chooses it (here %s); the policy checks each value at run time",
				map[bool]string{true: "the path", false: "the target"}[g.Kind == permissions.KindMount], strings.Join(ps, ", "), g.String()))
		}
	}
	for _, p := range def.Parameters {
		if p.Escapes() || p.Type != tool.TypeString && p.Type != "" {
			continue
		}
		v := p.Validation
		if v != nil && (len(v.Enum) > 0 || v.Pattern != "") {
			continue
		}
		x.risk("high", RiskCommandInjection, "parameter "+p.Name,
			"escape-shell: false on a free string parameter (no enum, no pattern): a value such as '; curl …' runs as a command")
	}
	if def.Sandboxed != nil {
		for _, c := range def.Sandboxed.Credentials {
			subject := "credential:" + c.VarName()
			if c.SourceKind() == "command" {
				x.risk("high", RiskHostRoot, subject, fmt.Sprintf("the value is read by running %q on the host, as you, outside any sandbox, when the run starts",
					strings.Join(c.Command, " ")))
			}
			x.risk("medium", RiskSecretLeak, subject, fmt.Sprintf("the tool can use the secret against %s as it likes (any request the HTTP rules of those hosts allow), though it never holds the value",
				strings.Join(c.Hosts, ", ")))
		}
	}
	if def.Environment != nil && def.Environment.Inherit {
		x.risk("high", RiskSecretLeak, "environment.inherit", "the host environment is passed in, "+x.envWithheld()+": tokens, keys and passwords in it are readable by the tool")
	}
	if in.Decision.Tier == policy.TierUnknown || len(x.e.Tool.Tags) == 0 || !hasSecurityTag(x.e.Tool.Tags) {
		x.risk("high", RiskUntagged, "security tier", "the tool has none of the security tags read, write, run: nothing says what it does"+x.tierVerdict())
	}
	priv := string(x.plan().Privilege)
	if priv == "" {
		priv = string(def.Security.ExecutionPrivilege)
	}
	if priv == string(tool.PrivilegeElevated) {
		x.risk("high", RiskElevated, "execution-privilege", "elevated: "+x.rootWords()+"; a wider kernel surface for a hostile tool")
	}
	switch {
	case x.unsandboxed():
		x.risk("high", RiskNoIsolation, "isolation", "isolation none: no grant is enforced; the tool can read, write and reach whatever the user can")
	case def.Security.Isolation == tool.IsolationNone:
		x.risk("medium", RiskNoIsolation, "isolation", "asks for isolation none: the policy runs it in "+x.tier()+" here"+x.ruleWords(policy.ItemIsolation)+", but wherever a policy lets it run in none, no grant would be enforced")
	}
}

// tierVerdict says what the policy in force does with the tool's
// security tier, from its tool item: ", so it is treated as high risk"
// was a claim of the built-in policy's, which an operator's may not make.
func (x *explainer) tierVerdict() string {
	it, ok := x.item(policy.ItemTool, "", -1)
	if !ok {
		return ""
	}
	verdict := map[policy.Verdict]string{policy.Allow: "allowed", policy.Deny: "denied", policy.NeedsApproval: "needs approval"}[it.Verdict]
	return fmt.Sprintf("; the policy in force: tier %s %s, %s risk%s", x.in.Decision.Tier, verdict, it.Risk, x.ruleWords(policy.ItemTool))
}

// ruleWords names, in parentheses, the rule of the policy's item of kind
// ("" without one).
func (x *explainer) ruleWords(kind policy.ItemKind) string {
	if it, ok := x.item(kind, "", -1); ok && it.Rule != "" {
		return " (" + it.Rule + ")"
	}
	return ""
}

// rootWords says as whom an elevated tool runs, read from the plan's
// spec: its capabilities and whether a user namespace maps its root.
func (x *explainer) rootWords() string {
	pl := x.plan()
	if pl.Spec.Process == nil {
		return "root in the sandbox"
	}
	w := "root with no capabilities"
	if n := len(capabilities(pl.Spec)); n > 0 {
		w = fmt.Sprintf("root with %d capabilities (the execution-privilege point lists them)", n)
	}
	if slices.Contains(namespaces(pl.Spec), string(specs.UserNamespace)) {
		return w + " inside a user namespace"
	}
	return w + " with no user namespace of its own"
}

func hasSecurityTag(tags []string) bool {
	for _, t := range tags {
		if t == "read" || t == "write" || t == "run" {
			return true
		}
	}
	return false
}

func (x *explainer) mountRisks(g permissions.Grant, home string) {
	m := g.Mount
	paths := []string{m.HostPath}
	if m.Resolved != "" && m.Resolved != m.HostPath {
		paths = append(paths, m.Resolved)
	}
	subj := g.String()
	for _, p := range paths {
		for _, s := range dockerSockets {
			if covers(p, s) {
				x.socketRisk(subj, s)
			}
		}
		if p == "/" || (home != "" && p == home) {
			x.risk("medium", RiskBroadAccess, subj, "covers "+p+" as a whole: far more than a tool usually needs "+x.masksUnder(p))
		}
		if !m.Write {
			continue
		}
		held := x.plantRisk(subj, x.runsLater(p, home))
		if strings.Contains(p, "/.git/hooks") || strings.HasSuffix(p, "/.git") {
			hooks := p
			if i := strings.Index(p, "/.git/hooks"); i >= 0 {
				hooks = p[:i] + "/.git/hooks"
			} else {
				hooks = p + "/hooks"
			}
			note := "writable git metadata: hooks run code on the next git command"
			if mk, ok := x.maskOver(hooks); ok && !mk.Hide {
				note += " (the policy keeps " + hooks + " read-only: " + mk.Rule + ")"
			} else if ok {
				note += " (the policy hides " + hooks + ": " + mk.Rule + ")"
			} else {
				note += " (the plan does not keep " + hooks + " read-only)"
			}
			x.risk("high", RiskCodeExecution, subj, note)
		}
		if held != "" {
			// After the notes of what is writable, which it must not
			// hide (one note per category and grant).
			x.risk("low", RiskCodeExecution, subj, held)
		}
	}
}

// socketRisk notes a grant that reaches the Docker daemon's socket s,
// unless the plan hides it: a read-only mask does not stop connect().
func (x *explainer) socketRisk(subj, s string) {
	note := "reaches " + s + ": whoever can talk to the Docker daemon is root on the host"
	switch mk, ok := x.maskOver(s); {
	case ok && mk.Hide:
		x.risk("low", RiskHostRoot, subj, "covers "+s+", the Docker daemon's socket (root on the host), but the policy hides it ("+mk.Rule+"): the tool cannot connect to it")
	case ok:
		x.risk("high", RiskHostRoot, subj, note+" (the policy makes it read-only ("+mk.Rule+"), which does not stop a connect())")
	default:
		x.risk("high", RiskHostRoot, subj, note+" (the plan does not hide it)")
	}
}

// plantable is a host path that runs code later (a directory on PATH, a
// shell start-up file, the user's own programs) under a write grant.
type plantable struct {
	path, what, note string
}

// runsLater are the paths under the write grant p that make the host
// run code later: at most one of each kind, the first the plan leaves
// writable, else the first.
func (x *explainer) runsLater(p, home string) []plantable {
	var out []plantable
	pick := func(cands []plantable) {
		for _, c := range cands {
			if _, masked := x.maskOver(c.path); !masked {
				out = append(out, c)
				return
			}
		}
		if len(cands) > 0 {
			out = append(out, cands[0])
		}
	}
	var onPath, startup, bins []plantable
	for _, dir := range x.in.HostPath {
		if dir != "" && filepath.IsAbs(dir) && covers(p, filepath.Clean(dir)) {
			onPath = append(onPath, plantable{dir, "a directory on PATH", "writable " + dir + ", a directory on PATH: a program planted there runs the next time the user types its name"})
		}
	}
	if home != "" {
		for _, rc := range shellStartup {
			if f := filepath.Join(home, rc); covers(p, f) {
				startup = append(startup, plantable{f, "which runs at log-in or shell start", "writable " + f + ", which runs at log-in or shell start: code planted there runs on the host outside the sandbox"})
			}
		}
		for _, bin := range []string{"bin", ".local/bin"} {
			if f := filepath.Join(home, bin); covers(p, f) {
				bins = append(bins, plantable{f, "where the user's own programs are", "writable " + f + ": programs planted there run when the user calls them"})
			}
		}
	}
	pick(onPath)
	pick(startup)
	pick(bins)
	return out
}

// plantRisk notes the first of ps the plan leaves writable (high); where
// the policy keeps every one read-only or hidden, it returns the note
// that says so (low) for the caller to add last. The claim is read from
// the plan's masks, so an operator policy without the rule, or a path
// that did not exist when the run was planned (a mask covers only what
// exists), leaves the risk standing.
func (x *explainer) plantRisk(subj string, ps []plantable) (held string) {
	for _, c := range ps {
		if _, masked := x.maskOver(c.path); !masked {
			x.risk("high", RiskCodeExecution, subj, c.note+" (the plan does not keep "+c.path+" read-only)")
			return ""
		}
	}
	if len(ps) == 0 {
		return ""
	}
	c := ps[0]
	mk, _ := x.maskOver(c.path)
	how := "keeps it read-only"
	if mk.Hide {
		how = "hides it"
	}
	return "covers " + c.path + ", " + c.what + ", but the policy " + how + " (" + mk.Rule + "): nothing can be planted there"
}

// maskOver is the plan's mask over path (of path or a directory above
// it), if the plan in force masks it.
func (x *explainer) maskOver(path string) (isolation.MaskedPath, bool) {
	for _, mk := range x.plan().Masked {
		if covers(mk.Source, path) {
			return mk, true
		}
	}
	return isolation.MaskedPath{}, false
}

// masksUnder says, in parentheses, what the policy in force hides or
// makes read-only under p: read from the plan's masked paths, not assumed.
func (x *explainer) masksUnder(p string) string {
	var hidden, ro int
	for _, mk := range x.plan().Masked {
		if covers(p, mk.Source) {
			if mk.Hide {
				hidden++
			} else {
				ro++
			}
		}
	}
	if hidden+ro == 0 {
		return "(the plan hides or protects nothing under it)"
	}
	return fmt.Sprintf("(the plan hides %d paths under it and makes %d read-only)", hidden, ro)
}

func (x *explainer) verdict() {
	e, in := x.e, x.in
	v := Verdict{ApproveFlags: []string{}, Denied: []string{}, DependsOnArguments: len(in.Templated) > 0}
	for _, it := range in.Decision.Items {
		switch it.Verdict {
		case policy.Deny:
			v.Denied = append(v.Denied, it.Subject)
		case policy.NeedsApproval:
			f := "--approve " + tool.ShellWord(it.ApproveFlag)
			if it.ApproveFlag != "" && !slices.Contains(v.ApproveFlags, f) {
				v.ApproveFlags = append(v.ApproveFlags, f)
			}
		}
	}
	for _, t := range in.Unresolvable {
		v.Denied = append(v.Denied, t.Permission)
	}
	how := x.howItRuns()
	switch {
	case len(v.Denied) > 0 || in.Decision.Verdict == policy.Deny:
		v.Decision = DecisionDenied
		var why []string
		for _, it := range in.Decision.Items {
			if it.Verdict == policy.Deny {
				why = append(why, it.Subject+" by "+it.Rule)
			}
		}
		for _, t := range in.Unresolvable {
			why = append(why, t.Permission+" ("+t.Reason+")")
		}
		v.Summary = "DENIED: " + strings.Join(why, "; ")
	case in.Decision.Verdict == policy.NeedsApproval || len(v.ApproveFlags) > 0:
		v.Decision = DecisionNeedsApproval
		var subj []string
		for _, it := range in.Decision.Items {
			if it.Verdict == policy.NeedsApproval {
				subj = append(subj, it.Subject)
			}
		}
		v.Summary = "NEEDS APPROVAL: " + strings.Join(subj, ", ") + " (" + strings.Join(v.ApproveFlags, " ") + "); then " + how
	default:
		v.Decision = DecisionAllowed
		v.Summary = "ALLOWED: " + how
	}
	if v.DependsOnArguments {
		var ps []string
		for _, t := range in.Templated {
			for _, p := range t.Params {
				if !slices.Contains(ps, p) {
					ps = append(ps, p)
				}
			}
		}
		v.Summary += "; paths from " + strings.Join(ps, ", ") + " are decided when given"
	}
	e.Verdict = v
}

// howItRuns says in one phrase where and as whom the tool runs and what it
// reaches.
func (x *explainer) howItRuns() string {
	pl, tr := x.plan(), x.tier()
	uid, _ := user(pl.Spec)
	var who string
	switch {
	case tr == string(tool.IsolationNone):
		who = fmt.Sprintf("runs unsandboxed on the host as uid %d", uid)
	case tr == string(tier.Landlock):
		// No user namespace: as root a uid of the run's own, otherwise
		// the invoking user's.
		who = fmt.Sprintf("runs in landlock isolation as uid %d (as root one of the run's own, else yours)", uid)
	case pl.Privilege == tool.PrivilegeElevated:
		who = fmt.Sprintf("runs in %s isolation as root in a user namespace", tr)
	case pl.Privilege == tool.PrivilegeReduced:
		who = fmt.Sprintf("runs in %s isolation as nobody (uid %d)", tr, uid)
	default:
		who = fmt.Sprintf("runs in %s isolation as uid %d", tr, uid)
	}
	who += x.hostIDWords()
	var reads, writes, hosts, local int
	anyHost := false
	for _, g := range x.in.Grants {
		switch g.Kind {
		case permissions.KindMount:
			if g.Mount.Write {
				writes++
			} else {
				reads++
			}
		case permissions.KindEgress:
			hosts++
			anyHost = anyHost || g.Egress.Any()
		case permissions.KindLocalhost:
			local++
		}
	}
	for _, t := range x.in.Templated {
		switch permKind(t.Permission) {
		case tool.PermFSRead:
			reads++
		case tool.PermFSWrite:
			writes++
		case tool.PermNetExternal:
			hosts++
		}
	}
	parts := []string{fmt.Sprintf("reads %s", count(reads, "path")), fmt.Sprintf("writes %s", count(writes, "path"))}
	switch {
	case anyHost:
		parts = append(parts, "reaches any public host")
	case hosts > 0:
		parts = append(parts, "reaches "+count(hosts, "host"))
	case local == 0:
		parts = append(parts, "no network")
	}
	if local > 0 {
		parts = append(parts, "reaches "+count(local, "host loopback port"))
	}
	if x.in.Def.Environment != nil && x.in.Def.Environment.Inherit {
		parts = append(parts, "inherits the host environment")
	}
	return who + "; " + strings.Join(parts, ", ")
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if n == 0 {
		return "no " + what + "s"
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// inspection adds a point for each credential of the definition and
// each HTTP rule the proxy applies (httpRules): what the proxy does
// with the requests to their hosts.
func (x *explainer) inspection() {
	def := x.in.Def
	if def.Sandboxed == nil {
		return
	}
	for _, c := range def.Sandboxed.Credentials {
		name := c.VarName()
		src := "env " + c.Env
		switch c.SourceKind() {
		case "file":
			src = "file " + c.File
		case "command":
			src = "command " + strings.Join(c.Command, " ")
		}
		p := Point{Subject: "credential:" + name, Requested: fmt.Sprintf("sandboxed.credentials: %s from %s for %s", name, src, strings.Join(c.Hosts, ", "))}
		switch it, decided := x.item("credential", p.Subject, -1); {
		case decided && it.Verdict == policy.Deny:
			p.decide(it)
			p.Mechanisms = []Mechanism{denied()}
		case x.unsandboxed():
			p.Mechanisms = []Mechanism{x.notEnforced()}
			if decided {
				p.decide(it)
			}
		default:
			if decided {
				p.decide(it)
			}
			p.Mechanisms = []Mechanism{
				{Kind: MechEnv, Value: name, Detail: "the sandbox holds a per-run stand-in in " + name + ", never the real value"},
				{Kind: MechProxy, Value: strings.Join(c.Hosts, ","), Detail: "the egress proxy terminates TLS for " + strings.Join(c.Hosts, ", ") +
					" with a per-run CA the sandbox trusts, puts the real value where the stand-in is (request headers, Basic credentials, path and query; not bodies), and refuses and records a request that carries the stand-in to any other host"},
			}
		}
		x.e.Network = append(x.e.Network, p)
	}
	rules, reason := x.httpRules()
	for _, r := range rules {
		methods, paths := "any method", "any path"
		if len(r.Methods) > 0 {
			methods = strings.Join(r.Methods, ", ")
		}
		if len(r.Paths) > 0 {
			paths = "paths under " + strings.Join(r.Paths, ", ")
		}
		p := Point{Subject: "http:" + r.Host, Requested: "sandboxed.http: " + r.Host,
			Meaning: fmt.Sprintf("requests to %s only with %s on %s", r.Host, methods, paths),
			Verdict: VerdictAllow, Risk: "low", Rule: "sandboxed.http", Reason: reason}
		if x.unsandboxed() {
			p.Mechanisms = []Mechanism{x.notEnforced()}
		} else {
			p.Mechanisms = []Mechanism{{Kind: MechProxy, Value: r.Host, Detail: "the egress proxy reads each request to " + r.Host +
				" (plain HTTP, or HTTPS it terminates with the run CA) and refuses and records one whose method or path no rule of the host allows; a path with . or .. segments or escaped slashes is refused"}}
		}
		x.e.Network = append(x.e.Network, p)
	}
}

// httpRules are the method and path rules the egress proxy applies: the
// plan's (Egress.HTTP, none where the plan has no egress), or, for a
// review no plan could be made for, the definition's as written, and the
// reason saying which.
func (x *explainer) httpRules() ([]isolation.HTTPRule, string) {
	if pl := x.in.Plan; pl != nil {
		if pl.Egress == nil {
			return nil, ""
		}
		return pl.Egress.HTTP, "the definition narrows its own grant; the plan's egress rules, which the proxy applies"
	}
	var out []isolation.HTTPRule
	for _, r := range x.in.Def.Sandboxed.HTTP {
		out = append(out, isolation.HTTPRule{Host: r.Host, Methods: r.Methods, Paths: r.Paths})
	}
	return out, "the definition narrows its own grant; as the definition writes it: no plan could be made to read the proxy's rules from"
}

// writeGrants are the definition's write grants, as written.
func writeGrants(def *tool.Definition) []string {
	var writes []string
	for _, p := range def.Security.RequiredPermissions {
		if strings.HasPrefix(p, string(tool.PermFSWrite)+":") {
			writes = append(writes, p)
		}
	}
	return writes
}

// undoPoints explain undo and review of the tool's write grants: what
// they cover, per tier, the bounds and the rule.
func undoPoints(writes []string, u *policy.UndoBounds) []Point {
	if len(writes) == 0 || u == nil {
		return nil
	}
	grants := strings.Join(writes, ", ")
	rec := Mechanism{Kind: MechRecord, Value: strconv.FormatInt(u.MaxBytes, 10),
		Detail: fmt.Sprintf("scanned on the host before and after the run, at most %d entries and %s of files per grant; pre-images 0600 under the state directory, kept %s (gc), at most %s in all",
			u.MaxFiles, units.FormatSize(u.MaxBytes), durationWords(u.Keep), units.FormatSize(u.MaxTotal))}
	undo := Point{Subject: "undo", Requested: grants, Verdict: VerdictAllow, Risk: "low", Rule: u.Rule, Mechanisms: []Mechanism{rec},
		Meaning: "what the run creates, modifies and deletes under " + grants + " is recorded, with the pre-images of what it modifies or deletes, so that " +
			"`sandboxed undo RUN_ID` puts it back (refusing, with the list, where a path changed since). The record is host-side: the same in the process, container, " +
			"landlock and none tiers (in the none tier it covers the grants only, as nothing else confines the tool) and on Kubernetes (scanned on this host before the grants are copied into the pod and after they are copied back). A grant over the bounds is not recorded: the run goes on and its notes say so",
		Reason: "restoring opens every path beneath the grant with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) and never writes setuid bits, device files or hard links"}
	if !u.Record {
		undo.Meaning = "runs of this tool are not recorded (undo.disable): `sandboxed undo` cannot put their writes back"
		undo.Mechanisms = []Mechanism{{Kind: MechNone, Detail: "undo.disable: true"}}
		undo.Risk = "medium"
	}
	review := Point{Subject: "review", Requested: "run --review", Verdict: VerdictAllow, Risk: "low", Rule: u.Rule, Mechanisms: []Mechanism{rec},
		Meaning: "with `run --review` the tool writes into working copies of " + grants + " mounted in their place (process and container tiers; the landlock and none tiers mount nothing and refuse it, and so does a run on Kubernetes, whose pod writes copies); " +
			"the change is shown, deletions first, with a diff whose control characters are escaped, and reaches the host only on approval (the terminal prompt, the MCP client's elicitation under `sandboxed mcp --review`, or --approve writes; without any, in --json, it is reported and not applied), recorded so that it can be undone. " +
			"The policy's masks cover the working copies as the grants, and a change to a path the policy protects (paths.deny, paths.deny-write, secrets.mask) is left out and never applied, listed with its rule"}
	return []Point{undo, review}
}
