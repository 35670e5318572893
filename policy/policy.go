package policy

import (
	"strconv"
	"time"

	"github.com/sandboxed-dev/sandboxed/tool"
)

// Policy is the operator's policy: what any tool may get on this host, and
// what needs an explicit approval. It is loaded from YAML (Load) or built
// in (Default); the YAML keys are the yaml tags below, documented key by
// key in DefaultYAML.
//
// A Policy is read-only after Load; Decide does not modify it.
type Policy struct {
	// Version is the policy file format; only 1 exists.
	Version int `yaml:"version"`
	// Sources sets trust and isolation per source of the definition. The
	// first rule that matches wins; when none matches, the built-in
	// untrusted fallback (UntrustedSource) applies.
	Sources []SourceRule `yaml:"sources"`
	// Limits are the defaults and caps of the resources a run may use.
	Limits Limits `yaml:"limits"`
	// Paths are the filesystem rules.
	Paths PathRules `yaml:"paths"`
	// Secrets are the names of secret files and folders, masked inside
	// every grant (masks.go).
	Secrets SecretRules `yaml:"secrets"`
	// Commands are the rules on commands that come from a tool's caller
	// (cmdrules.go).
	Commands CommandRules `yaml:"commands"`
	// Network are the egress rules.
	Network NetworkRules `yaml:"network"`
	// Quotas cap the requests and bytes a run may send to hosts
	// (quotas.go).
	Quotas []QuotaRule `yaml:"quotas"`
	// Undo bounds the change records of write grants (undo.go).
	Undo UndoRules `yaml:"undo"`
	// Environment are the rules for env: grants.
	Environment EnvRules `yaml:"environment"`
	// Credentials are the rules for sandboxed.credentials.
	Credentials CredentialRules `yaml:"credentials"`
	// Approval are the tool-level auto-approve/auto-deny rules and the
	// standing approvals.
	Approval ApprovalRules `yaml:"approval"`

	// Pool is the warm pool of a resident controller (sandboxed mcp,
	// sandboxed serve); their --pool-size and --pool-idle override it.
	Pool PoolSettings `yaml:"pool"`

	// File is where the policy was loaded from; "" for the built-in one.
	File string `yaml:"-"`
}

// MaxPoolSize bounds PoolSettings.Size.
const MaxPoolSize = 64

// PoolSettings are the warm pool settings of a resident controller.
type PoolSettings struct {
	// Size is how many warm sandboxes each kind (tier, privilege, user
	// namespace) keeps ready; 0 turns the pool off.
	Size int `yaml:"size"`
	// Idle is how long a kind's warm sandboxes wait for a run before
	// they are given back; 0 keeps them.
	Idle Duration `yaml:"idle"`
}

// SourceScope names a source of definitions in a SourceRule: the scopes of
// tool.Scope, "unknown" (a definition with no recorded scope) and "any".
type SourceScope string

// The source scopes a SourceRule may name.
const (
	SourceLocal   SourceScope = "local"
	SourceUser    SourceScope = "user"
	SourceGlobal  SourceScope = "global"
	SourcePath    SourceScope = "path"
	SourceUnknown SourceScope = "unknown"
	SourceAny     SourceScope = "any"
)

// SourceRule sets trust and isolation for definitions from one source.
type SourceRule struct {
	// Scope matches the definition's scope; "" or "any" matches every scope.
	Scope SourceScope `yaml:"scope"`
	// Path is a glob matched against the definition file's absolute path
	// (internal/pathglob: `*` within one path element, `**` across
	// elements, `[` literal; `~` is the home directory); "" matches any
	// path. With Scope set, both must match.
	Path Glob `yaml:"path"`
	// Trusted sources may reach named hosts without approval. Untrusted
	// ones need an approval (or a network.allow entry) for every
	// network:external grant and for env grants of secret-looking names.
	Trusted bool `yaml:"trusted"`
	// Isolation bounds the tier the tool runs in.
	Isolation IsolationRule `yaml:"isolation"`
}

// IsolationRule bounds the isolation tier: a requested tier below Minimum
// is raised to it; a tier not in Allowed is raised to the next allowed one,
// and denied when there is none.
type IsolationRule struct {
	Allowed []tool.Isolation `yaml:"allowed"`
	Minimum tool.Isolation   `yaml:"minimum"`
	// Landlock says whether the process tier may run where the kernel
	// cannot raise every Landlock wall; empty means best-effort.
	Landlock LandlockRule `yaml:"landlock"`
	// WithoutNamespaces is what a run of the process tier does where the
	// process tier cannot run (namespaces cannot be made, or no cgroup
	// can be written: a container with Docker's defaults):
	// StandInApprove (the default, also "" and StandInRefuse) refuses it
	// with the way out, an approval for the run; StandInNever refuses it,
	// and no approval lifts that; StandInLandlock runs it in the landlock
	// tier, which enforces the same plan as far as Landlock, seccomp and
	// rlimits reach.
	WithoutNamespaces StandIn `yaml:"without-namespaces"`
	// LandlockGaps are the gaps of the landlock tier (tier.LandlockGaps)
	// the source's runs may go without; any other gap refuses the run.
	LandlockGaps []string `yaml:"landlock-gaps"`
	// Runtime is the container runtime every container-tier run of the
	// source uses, whatever the definition asks for (RuntimeRunsc: gVisor);
	// RuntimeDefinition, the default, leaves it to the definition.
	Runtime RuntimeRule `yaml:"runtime"`
	// Backend is where every run of the source goes, whatever the
	// operator's --backend says: BackendKubernetes (a pod of its own) or
	// BackendLocal (this host). BackendOperator, the default, leaves it to
	// the operator's setting.
	Backend BackendRule `yaml:"backend"`
}

// BackendRule is the backend a policy forces.
type BackendRule string

// Backend rules.
const (
	// BackendOperator runs where the operator's --backend says.
	BackendOperator BackendRule = "operator"
	// BackendLocal runs on this host (process, container or none tier).
	BackendLocal BackendRule = "local"
	// BackendKubernetes runs every run of the source as a pod of its own.
	BackendKubernetes BackendRule = "kubernetes"
)

// RuntimeRule is the container runtime a policy forces.
type RuntimeRule string

// Runtime rules.
const (
	// RuntimeDefinition runs the runtime the definition asks for
	// (sandboxed.runtime), else the engine's default.
	RuntimeDefinition RuntimeRule = "definition"
	// RuntimeRunsc runs every container-tier run under gVisor's runsc.
	RuntimeRunsc RuntimeRule = "runsc"
)

// StandIn is what stands in for the process tier where it cannot run.
type StandIn string

// Stand-ins.
const (
	// StandInApprove (the default) runs it in the landlock tier only with
	// --approve isolation-landlock, and refuses it saying so otherwise.
	StandInApprove StandIn = "approve"
	// StandInRefuse is the earlier name of StandInApprove, which policy
	// files written by `sandboxed policy init` before it hold: it means
	// the same.
	StandInRefuse StandIn = "refuse"
	// StandInNever refuses it: no approval lifts that, and --isolation
	// landlock is denied too.
	StandInNever StandIn = "never"
	// StandInLandlock runs it in the landlock tier.
	StandInLandlock StandIn = "landlock"
)

// LandlockRule is how much of Landlock the process tier must have.
type LandlockRule string

// Landlock rules.
const (
	// LandlockBestEffort enforces what the kernel's Landlock covers.
	LandlockBestEffort LandlockRule = "best-effort"
	// LandlockRequired refuses a run of the process tier on a kernel
	// without Landlock ABI 6 (files, TCP and IPC scopes).
	LandlockRequired LandlockRule = "required"
)

// Limits are the resource defaults and caps. A request above a cap is
// clamped to the cap (and the decision says so); no request means Default.
// They are the only place a run's limits are decided: the planner copies
// the decision (Effective), a definition only asks.
type Limits struct {
	Memory  SizeLimit     `yaml:"memory"`
	Timeout DurationLimit `yaml:"timeout"`
	Pids    CountLimit    `yaml:"pids"`
	Output  SizeLimit     `yaml:"output"` // per stream (stdout, stderr)
	// CPUs is a CPU quota: a Default of 0 is no limit, a Max of 0 no
	// cap; under a cap every run has a quota (the default, else the cap).
	CPUs CPULimit `yaml:"cpus"`
	// Tmpfs is the size of the run's private /tmp (in the landlock tier,
	// which has none, the largest file the tool may write).
	Tmpfs SizeLimit `yaml:"tmpfs"`
}

// SizeLimit is a default and a cap in bytes.
type SizeLimit struct {
	Default Size `yaml:"default"`
	Max     Size `yaml:"max"`
}

// DurationLimit is a default and a cap.
type DurationLimit struct {
	Default Duration `yaml:"default"`
	Max     Duration `yaml:"max"`
}

// CountLimit is a default and a cap.
type CountLimit struct {
	Default int64 `yaml:"default"`
	Max     int64 `yaml:"max"`
}

// CPULimit is a default and a cap in CPUs; 0 is none of either.
type CPULimit struct {
	Default CPUs `yaml:"default"`
	Max     CPUs `yaml:"max"`
}

// CPUs is a number of CPUs' worth of time, as sandboxed.cpus asks for it
// (0.5 is half of one CPU): 0 for none, else tool.MinCPUs to
// tool.MaxCPUs.
type CPUs float64

// String formats c as a definition writes it: 0.5, 2.
func (c CPUs) String() string { return strconv.FormatFloat(float64(c), 'f', -1, 64) }

// PathRules are the filesystem rules. Patterns are absolute paths, `~/…`
// paths, or `**/…` patterns that match anywhere; `*`, `?` and `**` globs
// are allowed (internal/pathglob's grammar, where `[` is literal, shared
// with the masks the plan applies). A pattern matches a path equal to it or under it. Every rule is
// checked against both the declared and the resolved (symlink-free) path
// of a grant. Deny wins over everything; approvals never override a deny.
type PathRules struct {
	// Deny: reads and writes are denied.
	Deny []PathPattern `yaml:"deny"`
	// DenyWrite: writes are denied; reads follow the other rules.
	DenyWrite []PathPattern `yaml:"deny-write"`
	// Approve: reads and writes need an approval.
	Approve []PathPattern `yaml:"approve"`
	// AllowWrite: writes need no approval even outside the working directory.
	AllowWrite []PathPattern `yaml:"allow-write"`
}

// NetworkRules are the egress rules. Host patterns are names, IP literals,
// "*.example.com" (subdomains, not the apex) or "*" (any host).
type NetworkRules struct {
	// Allow: egress to these hosts needs no approval, from any source.
	Allow []HostPattern `yaml:"allow"`
	// Deny: grants to these hosts are denied, and the egress proxy refuses
	// them even under a wider grant.
	Deny []HostPattern `yaml:"deny"`
	// LocalhostAllow: network:localhost ports that need no approval.
	LocalhostAllow []int `yaml:"localhost-allow"`
	// ExtraCA: files of CA certificates (PEM) the egress proxy trusts,
	// besides the host's system roots, when it verifies the servers of
	// hosts whose TLS it terminates (credentials, HTTP rules).
	ExtraCA []string `yaml:"extra-ca"`
}

// CredentialRules are the rules for sandboxed.credentials, by the name of
// the variable that holds the stand-in (patterns as environment.deny).
type CredentialRules struct {
	// Deny: these credentials are refused.
	Deny []string `yaml:"deny"`
	// Approve: these credentials need an approval (credential:NAME) even
	// from a trusted source.
	Approve []string `yaml:"approve"`
}

// EnvRules are the rules for env: grants.
type EnvRules struct {
	// Deny: env grants of these variable names are denied (exact names,
	// case-sensitive; `*` is any run of characters and `?` one: EnvDenied).
	Deny []string `yaml:"deny"`
}

// ApprovalRules are the tool-level rules and standing approvals.
type ApprovalRules struct {
	// AutoApprove: a tool matching any of these (tool:TAG, tier:TIER,
	// name:TOOL) needs no tool-level approval. It approves the tool's risk
	// tier only; every grant and security field is still decided on its own.
	AutoApprove []Matcher `yaml:"auto-approve"`
	// AutoDeny: a tool matching any of these is denied. Deny wins.
	AutoDeny []Matcher `yaml:"auto-deny"`
	// Standing: approvals given to every run, in the words of --approve.
	Standing []Approval `yaml:"standing"`
}

// Size is a byte count; in YAML a number of bytes or a string with a unit,
// read by units.ParseSize exactly as a tool definition's sizes are (every
// unit binary: 512MB = 512MiB).
type Size int64

// Duration is a time span; in YAML milliseconds or number+unit pairs
// ("90s", "5m", "1h30m", "30d", "2w"), read by units.ParseDuration exactly
// as a tool definition's durations are.
type Duration time.Duration

// Glob is a path glob (see SourceRule.Path).
type Glob string

// PathPattern is a path rule pattern (see PathRules).
type PathPattern string

// HostPattern is a host pattern (see NetworkRules).
type HostPattern string

// Matcher selects tools for tool-level rules: "tool:TAG" (any tag, as in
// `cycod --auto-approve tool:read`), "tier:TIER" (a security tier), or
// "name:TOOL".
type Matcher string

// Approval is one approval, in the words of `--approve`: "elevated",
// "isolation-none", "env-inherit", "tier:TIER", a permission string
// (filesystem:write:/x covers paths under /x), or "all".
type Approval string

// UntrustedSource is the rule applied to a definition no SourceRule
// matches: untrusted, process or container isolation.
var UntrustedSource = SourceRule{
	Scope:   SourceAny,
	Trusted: false,
	Isolation: IsolationRule{
		Allowed:           []tool.Isolation{tool.IsolationProcess, tool.IsolationContainer},
		Minimum:           tool.IsolationProcess,
		Landlock:          LandlockBestEffort,
		WithoutNamespaces: StandInApprove,
		Runtime:           RuntimeDefinition,
		Backend:           BackendOperator,
	},
}

const (
	kib = 1 << 10
	mib = 1 << 20
	gib = 1 << 30
)

// Built-in limits other packages name.
const (
	// DefaultTmpfsBytes is the built-in limits.tmpfs.default: the /tmp of
	// a run whose tool asks for no size.
	DefaultTmpfsBytes = 64 * mib
	// ReducedPids is the pids default of a run of reduced privilege,
	// where limits.pids.default is higher: a tool that gave up its
	// identity gets fewer processes unless it asks for more.
	ReducedPids = 64
)

// Default returns the built-in policy, safe for untrusted tools. It is
// what DefaultYAML loads to; POLICY.md explains each choice.
func Default() *Policy {
	trusted := func(s SourceScope) SourceRule {
		return SourceRule{
			Scope:   s,
			Trusted: true,
			Isolation: IsolationRule{
				Allowed:           []tool.Isolation{tool.IsolationNone, tool.IsolationProcess, tool.IsolationContainer},
				Minimum:           tool.IsolationNone,
				Landlock:          LandlockBestEffort,
				WithoutNamespaces: StandInApprove,
				Runtime:           RuntimeDefinition,
				Backend:           BackendOperator,
			},
		}
	}
	untrusted := func(s SourceScope) SourceRule {
		r := UntrustedSource
		r.Scope = s
		r.Isolation.Allowed = []tool.Isolation{tool.IsolationProcess, tool.IsolationContainer}
		return r
	}
	return &Policy{
		Version: 1,
		Sources: []SourceRule{
			trusted(SourceUser),
			trusted(SourceGlobal),
			untrusted(SourceLocal),
			untrusted(SourcePath),
			untrusted(SourceUnknown),
		},
		Pool: PoolSettings{Size: 2, Idle: Duration(time.Minute)},
		Limits: Limits{
			Memory:  SizeLimit{Default: 512 * mib, Max: 8 * gib},
			Timeout: DurationLimit{Default: Duration(5 * time.Minute), Max: Duration(time.Hour)},
			Pids:    CountLimit{Default: 256, Max: 4096},
			Output:  SizeLimit{Default: 10 * mib, Max: 100 * mib},
			CPUs:    CPULimit{Default: 0, Max: 0},
			Tmpfs:   SizeLimit{Default: DefaultTmpfsBytes, Max: 1 * gib},
		},
		Paths: PathRules{
			Deny: []PathPattern{
				"~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gh", "~/.docker", "~/.kube",
				"~/.azure", "~/.config/gcloud", "~/.netrc", "~/.git-credentials",
				"~/.npmrc", "~/.pypirc",
				"~/.bashrc", "~/.bash_profile", "~/.bash_login", "~/.bash_logout", "~/.profile",
				"~/.zshrc", "~/.zshenv", "~/.zprofile", "~/.zlogin", "~/.config/fish",
				"/etc", "/proc", "/var/run/docker.sock", "/run/docker.sock",
				"/run", "/var/run", "/tmp/.X11-unix", "/tmp/.ICE-unix", "/dev", "/sys", "/boot",
				"/root/.ssh", "/home/*/.ssh", "/home/*/.aws", "/home/*/.gnupg", "/home/*/.kube", "/home/*/.docker",
				"~/.local/state/sandboxed",
			},
			DenyWrite: []PathPattern{
				"**/.git/hooks", "**/.git/config",
				"~/.gitconfig", "~/.config/git",
				"~/.config/sandboxed",
				"~/.config/systemd", "~/.config/autostart",
				"**/.git/modules/**/hooks", "**/.git/modules/**/config",
			},
			Approve:    []PathPattern{},
			AllowWrite: []PathPattern{},
		},
		Secrets: SecretRules{
			Mask:   DefaultSecretNames(),
			Except: []PathPattern{"**/*.pub"},
		},
		Commands: CommandRules{Allow: []CommandRule{}, Deny: DefaultCommandDeny()},
		Quotas:   []QuotaRule{},
		Network: NetworkRules{
			Allow:          []HostPattern{},
			Deny:           []HostPattern{"metadata.google.internal", "169.254.169.254", "fd00:ec2::254"},
			LocalhostAllow: []int{},
			ExtraCA:        []string{},
		},
		Undo: UndoRules{MaxFiles: DefaultUndoMaxFiles, MaxSize: DefaultUndoMaxSize,
			Keep: Duration(DefaultUndoKeep), MaxTotal: DefaultUndoMaxTotal},
		Environment: EnvRules{
			Deny: []string{"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "SSH_AUTH_SOCK", "DOCKER_HOST"},
		},
		Credentials: CredentialRules{Deny: []string{}, Approve: []string{}},
		Approval: ApprovalRules{
			AutoApprove: []Matcher{"tier:read_only", "tier:write", "tier:execute", "tier:external_api"},
			AutoDeny:    []Matcher{},
			Standing:    []Approval{},
		},
	}
}
