package isolation

import (
	"context"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/internal/tier"
)

// Tier names an isolation tier (internal/tier owns the values; the names
// below are the same constants).
type Tier = tier.Tier

// The isolation tiers a backend may implement.
const (
	TierNone      = tier.None
	TierProcess   = tier.Process
	TierContainer = tier.Container
	TierLandlock  = tier.Landlock
)

// BackendKubernetes names the Kubernetes backend (Plan.Backend), and is
// its key among a controller's backends.
const BackendKubernetes = "kubernetes"

// Annotation keys every backend copies onto the host resources it makes
// (Docker labels, cgroup paths, socket names), so gc can find leftovers.
const (
	AnnotationRunID = "dev.sandboxed.run-id"
	AnnotationTool  = "dev.sandboxed.tool"
)

// RunIDPattern is the shape of a run id (sandbox.NewRunID: UTC time, then
// 12 hex digits: ^[0-9]{8}T[0-9]{6}-[0-9a-f]{12}$), which also names a
// run's host directory. It is matched by hand: the init links this
// package, and regexp would cost every sandbox start its initialisation.
var RunIDPattern runIDShape

// runIDShape matches RunIDPattern.
type runIDShape struct{}

// MatchString reports whether s has the shape of a run id.
func (runIDShape) MatchString(s string) bool {
	if len(s) != 8+1+6+1+12 || s[8] != 'T' || s[15] != '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case i == 8 || i == 15:
		case i < 15 && (c < '0' || c > '9'):
			return false
		case i > 15 && (c < '0' || c > '9') && (c < 'a' || c > 'f'):
			return false
		}
	}
	return true
}

// Plan is everything a backend needs to build one sandbox. It is data only:
// building a Plan has no side effects, and the same Plan is printed by
// `run --dump-plan`, rendered by `permissions explain`, stored in the run
// record and given to the backend. No field is filled in after planning.
//
// One run is one sandbox (one cgroup, one set of namespaces or one
// container) in which the init runs any number of commands (steps), one after
// another or at once.
type Plan struct {
	RunID string `json:"run_id"`
	Tool  string `json:"tool"`
	Tier  Tier   `json:"tier"`
	// Privilege is same-as-user, reduced or elevated.
	Privilege privilege.Privilege `json:"privilege"`

	// Spec is the OCI runtime spec of the sandbox: Process holds the
	// credentials, capabilities, no_new_privs, rlimits, base environment and
	// working directory every command gets; Mounts, Linux.Namespaces,
	// Linux.Resources, Linux.Seccomp, Linux.MaskedPaths/ReadonlyPaths and
	// Linux.CgroupsPath describe the sandbox. Process.Args is unused: commands
	// come through Sandbox.Exec.
	Spec *specs.Spec `json:"spec"`

	// Limits repeats the resource limits in plain units for results and
	// explain: what the tool gets. Spec.Linux.Resources holds what the
	// mechanism is set to, which backends apply; the two differ where the
	// init shares a limit with the tool (Pids: the tool's processes, and
	// InitSpareThreads above them in the spec).
	Limits Limits `json:"limits"`

	// Container tier, and every run of the Kubernetes backend (there
	// Runtime is the pod's RuntimeClass, "" for the cluster's default).
	Image   string `json:"image,omitempty"`
	Runtime string `json:"runtime,omitempty"`
	// Backend is "" for this host's tiers, or BackendKubernetes: the run
	// is a pod of its own, whichever tier it asked for.
	Backend string `json:"backend,omitempty"`

	// Egress is nil when the run has no network at all.
	Egress *Egress `json:"egress,omitempty"`

	// Masked are the paths inside the run's grants that the policy hides
	// (secrets.mask, paths.deny) or makes read-only (paths.deny-write);
	// Spec.Mounts holds the mount over each. A tier that cannot mount
	// over a path inside a grant must refuse a plan with any: a grant is
	// never wider than the plan says.
	Masked []MaskedPath `json:"masked,omitempty"`

	// Changes, when set, is how the controller records what the run
	// changes under its write grants (so that `sandboxed undo` can put
	// them back) or has it write into working copies for review. It is
	// host-side work before and after the sandbox: backends only see the
	// mounts, whose sources are the working copies in a review.
	Changes *Changes `json:"changes,omitempty"`

	// RequireLandlock refuses a process-tier run on a kernel whose Landlock
	// cannot raise every wall of the sandbox (files, TCP, IPC scopes:
	// Landlock ABI 6); without it the tier enforces what the kernel has.
	RequireLandlock bool `json:"require_landlock,omitempty"`
	// Scratch is, in the landlock tier, the run's private writable
	// directory on the host (the commands' TMPDIR and HOME): the backend
	// creates it for the tool's uid when the run starts and removes it
	// with the sandbox. The planner names it inside HostDir.
	Scratch string `json:"scratch,omitempty"`
	// AcceptGaps names what the landlock tier may leave unenforced on
	// this run because the operator's policy accepts it
	// (policy.LandlockGap values); a gap not named here refuses the run.
	AcceptGaps []string `json:"accept_gaps,omitempty"`
	// HostDir is a private, run-labelled host directory (mode 0700) the
	// backend may use for sockets and bookkeeping. The planner names it;
	// the controller creates it when the run starts, before Start, and
	// removes it after Close.
	HostDir string `json:"host_dir"`
	// GrantOwner is the host uid and gid that own what the write grants
	// hold, before the run and after it: the invoking user (root when
	// sandboxed runs as root with no user behind sudo). Where the tool
	// runs as another uid (reduced), the backend makes each write grant
	// writable to it for the run and what it writes there this owner's
	// (WriteGrants); nil is the uid sandboxed runs as.
	GrantOwner *ID `json:"grant_owner,omitempty"`
	// Approximations are the spec's fields this run's tier honours only
	// in part, and how (specconv.Review of Spec): explain and the run's
	// result say so. Every other field the spec sets is enforced as
	// written, or the backend refuses the plan.
	Approximations []Approximation `json:"approximations,omitempty"`
	// Observe makes the backend record the paths the run's processes
	// open, create, remove and execute (Stats.Accesses), for `permissions
	// learn`. It observes and changes no verdict. An observed run
	// changes nothing on the host either: its read-only grants of
	// directories take writes into a throwaway layer. Only the process
	// tier can; the others refuse such a plan.
	Observe bool `json:"observe,omitempty"`
}

// ID is a host uid and gid.
type ID struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

// WriteGrants are the host sources of p's writable binds that are grants
// (not sandboxed's own: what is in the run's host directory).
func WriteGrants(p *Plan) []string {
	if p == nil || p.Spec == nil {
		return nil
	}
	var out []string
	for _, m := range p.Spec.Mounts {
		bind := m.Type == "bind" || slices.Contains(m.Options, "bind") || slices.Contains(m.Options, "rbind")
		if !bind || slices.Contains(m.Options, "ro") || m.Source == "" || m.Source == "/dev/null" {
			continue
		}
		if p.HostDir != "" && (m.Source == p.HostDir || strings.HasPrefix(m.Source, p.HostDir+"/")) {
			continue
		}
		if !slices.Contains(out, m.Source) {
			out = append(out, m.Source)
		}
	}
	return out
}

// Approximation is a field of a plan's spec that its tier honours only in
// part: Field is its path in the spec ("Linux.Resources.Memory.Limit"),
// How what the tier does instead and what that leaves.
type Approximation struct {
	Field string `json:"field"`
	How   string `json:"how"`
}

// MaskedPath is one path the policy masks inside a grant.
type MaskedPath struct {
	// Path is inside the sandbox; Source the host path it hides.
	Path   string `json:"path"`
	Source string `json:"source"`
	// Dir is true for a folder (an empty tmpfs over it), false for a
	// file (an empty file over it).
	Dir bool `json:"dir,omitempty"`
	// Hide is true when the path is hidden; false when it is read-only.
	Hide bool `json:"hide"`
	// Rule is the policy rule that masks it.
	Rule string `json:"rule"`
}

// Docker's defaults, which every tier follows: the capability set an
// elevated run gets at most (inside its user namespace), and the paths
// hidden and made read-only in every sandbox (Docker 20.10's lists and
// /proc/interrupts). The planner writes them into the spec; the
// container tier checks a plan against them.
var (
	DockerDefaultCaps = []string{
		"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
		"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
		"CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
	}
	DockerMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	DockerReadonlyPaths = []string{
		"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
	}
)

// DefaultImage is the runner image: the container tier's and a pod's
// image unless the definition names one; images builds it.
const DefaultImage = "sandboxed-runner:latest"

// InitSpareThreads is how many idle threads the sandbox's init keeps for
// its Go runtime beyond those it made by itself, before its first command:
// it shares the run's pids limit with the commands, and a runtime that
// cannot start a thread dies. Where the init shares the limit (the tiers
// that start it inside the run's cgroup or container) the planner puts the
// tool's pids plus these into the spec, so they are not the tool's loss.
const InitSpareThreads = 2

// SpecPids is the spec's pids limit (Linux.Resources.Pids.Limit), the
// value the mechanism is set to; 0 when the spec has none.
func SpecPids(s *specs.Spec) int64 {
	if s == nil || s.Linux == nil || s.Linux.Resources == nil || s.Linux.Resources.Pids == nil || s.Linux.Resources.Pids.Limit == nil {
		return 0
	}
	return *s.Linux.Resources.Pids.Limit
}

// CPUPeriod is the period, in microseconds, over which the planner sets a
// CPU quota (Linux.Resources.CPU.Period): the kernel's and Docker's
// default, 100ms.
const CPUPeriod = 100000

// CPUQuota is the quota, in microseconds of each CPUPeriod, of a limit of
// cpus CPUs: the one conversion of sandboxed.cpus.
func CPUQuota(cpus float64) int64 { return int64(math.Round(cpus * CPUPeriod)) }

// Limits are the run's resource limits. Zero means "no limit" only where
// noted; the planner always sets memory and pids.
type Limits struct {
	MemoryBytes int64         `json:"memory_bytes"`
	Pids        int64         `json:"pids"`
	CPUs        float64       `json:"cpus,omitempty"` // 0: no cpu limit
	TmpfsBytes  int64         `json:"tmpfs_bytes"`
	Timeout     time.Duration `json:"timeout"`
	KillGrace   time.Duration `json:"kill_grace"`
}

// Egress is the network a run may use, through the per-run proxy.
type Egress struct {
	// ProxySocket is the host path of the proxy's Unix socket. Backends
	// bind-mount it at SandboxSocket inside the sandbox.
	ProxySocket string `json:"proxy_socket"`
	// ProxyPort is the loopback port inside the sandbox on which the init
	// relays to the proxy; the tool's *_PROXY variables point at it.
	ProxyPort int `json:"proxy_port"`
	// LocalhostPorts are host 127.0.0.1 ports reachable at the same port
	// inside the sandbox (network:localhost:PORT).
	LocalhostPorts []int `json:"localhost_ports,omitempty"`
	// Allow and Deny are the proxy's rules, typed (netrule.Rule; JSON
	// shows each as its permission string, "network:external:HOST[:PORT]"):
	// the run's network grants and the policy's denied hosts. Deny wins
	// over Allow. The controller starts the proxy from these fields, as
	// they are: nothing parses them again.
	Allow []netrule.Rule `json:"allow,omitempty"`
	Deny  []netrule.Rule `json:"deny,omitempty"`

	// Credentials are the run's credentials: the variable inside the
	// sandbox that holds the stand-in, the stand-in, where the real value
	// comes from on the host and the hosts it may go to. The real value is
	// never in the plan: the controller reads it from Source when the run
	// starts and gives it to the proxy alone.
	Credentials []Credential `json:"credentials,omitempty"`
	// HTTP are the method and path rules of hosts.
	HTTP []HTTPRule `json:"http,omitempty"`
	// CABundle, set when the proxy terminates TLS (for the hosts of
	// Credentials and HTTP), is the host path, in HostDir, of the trust
	// bundle the controller writes when the run starts: the host's system
	// bundle and the run CA's certificate. The spec binds it read-only at
	// the sandbox's system bundle path (SandboxCABundle in a container;
	// the host's own in the process tier).
	CABundle string `json:"ca_bundle,omitempty"`
	// ExtraCA are files of CA certificates (the policy's network.extra-ca)
	// the proxy trusts, besides the host's system roots, when it verifies
	// the servers of the hosts whose TLS it terminates.
	ExtraCA []string `json:"extra_ca,omitempty"`
	// Quotas cap the requests and bytes of hosts (the policy's quotas):
	// the proxy answers a request over a cap with HTTP 429.
	Quotas []Quota `json:"quotas,omitempty"`
}

// SandboxCABundle is where a run's trust bundle appears inside a
// container: the system bundle path of Debian and its derivatives (the
// runner image's); SSL_CERT_FILE and the like point at it too.
const SandboxCABundle = "/etc/ssl/certs/ca-certificates.crt"

// Credential is one credential of a run (see Egress.Credentials).
type Credential struct {
	// Name is the variable that holds StandIn inside the sandbox.
	Name    string `json:"name"`
	StandIn string `json:"stand_in"`
	// Source is where the real value comes from: exactly one field is set.
	Source CredentialSource `json:"source"`
	// Hosts are the host patterns whose requests may carry the value.
	Hosts []string `json:"hosts"`
}

// CredentialSource is where a credential's real value is read when the
// run starts.
type CredentialSource struct {
	// Env is a variable of sandboxed's own environment.
	Env string `json:"env,omitempty"`
	// File is an absolute host path; its content, one trailing newline
	// removed.
	File string `json:"file,omitempty"`
	// Command is run on the host as the invoking user (argv, no shell);
	// its standard output, one trailing newline removed.
	Command []string `json:"command,omitempty"`
}

// HTTPRule admits requests to Host with one of Methods (any when empty)
// on a path under one of Paths (any when empty); netrule owns its checks
// and matching.
type HTTPRule = netrule.HTTPRule

// SandboxSocket is where the egress socket appears inside every sandbox.
const SandboxSocket = "/.sandboxed/egress.sock"

// Command is one command to run inside a started sandbox.
type Command struct {
	Name string   `json:"name"` // step name, for records
	Args []string `json:"args"`
	// Env is the complete environment of the command (already scrubbed).
	Env []string `json:"env"`
	// Cwd is the working directory inside the sandbox.
	Cwd string `json:"cwd"`
}

// Stdio connects a command to the controller. Nil Stdin reads /dev/null;
// nil Stdout/Stderr discard. Backends copy into the writers as data arrives
// and never buffer more than a pipe's worth themselves.
type Stdio struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Exit is how a command ended.
type Exit struct {
	Code   int `json:"exit_code"`        // 128+signal when killed by a signal
	Signal int `json:"signal,omitempty"` // 0 if it exited normally
}

// Stats are what the backend measured of the whole sandbox.
type Stats struct {
	PeakMemoryBytes int64 `json:"peak_memory_bytes"`
	OOMKilled       bool  `json:"oom_killed"`
	PidsLimitHit    bool  `json:"pids_limit_hit,omitempty"`
	// Accesses are what an observed run (Plan.Observe) touched, in the
	// order first seen, each path and operation once.
	Accesses []Access `json:"accesses,omitempty"`
}

// Backend makes sandboxes of one tier.
type Backend interface {
	// Tier reports the tier this backend implements.
	Tier() Tier
	// Check refuses a plan the host cannot enforce in full, with an error
	// wrapping ErrUnsupported that says what is missing and how to fix it.
	// It has no side effects.
	Check(ctx context.Context, p *Plan) error
	// Start builds the sandbox and its init. On error nothing is left behind.
	// The caller must Close the returned Sandbox.
	Start(ctx context.Context, p *Plan) (Sandbox, error)
	// GC removes what crashed runs of this tier left behind (processes,
	// cgroups, containers, mounts, sockets) and returns what it removed.
	// Runs in keep are live and are not touched; keep is authoritative,
	// so a run it reports not live is reaped whatever its age. With a nil
	// keep the backend spares anything that may still be in use.
	GC(ctx context.Context, keep func(runID string) bool) ([]string, error)
}

// Sandbox is one started sandbox.
type Sandbox interface {
	// Exec runs cmd inside the sandbox and waits for it to exit. When ctx is
	// done, the command's process group gets SIGTERM, then SIGKILL after the
	// plan's KillGrace; Exec then returns the exit and ctx.Err().
	Exec(ctx context.Context, cmd Command, stdio Stdio) (Exit, error)
	// Kill sends SIGTERM to every process of the sandbox, waits up to grace,
	// then kills everything left (cgroup.kill, freeze-kill-thaw, or the
	// container). Safe to call concurrently with Exec.
	Kill(ctx context.Context, grace time.Duration) error
	// Stats reports peak memory and whether the OOM killer struck.
	Stats(ctx context.Context) (Stats, error)
	// Close kills whatever still runs and removes every host resource of the
	// sandbox. It is idempotent and must be called with a context that is
	// not already cancelled (context.WithoutCancel plus a deadline).
	Close(ctx context.Context) error
}

// Quota caps the requests (or, where the proxy cannot see requests, the
// tunnels) and the bytes the hosts a pattern matches may be sent, per run
// or per time window across runs. The egress proxy enforces it.
type Quota struct {
	// Host is a host pattern (a name, *.suffix or *).
	Host string `json:"host"`
	// Requests caps requests and tunnels; 0 is no cap.
	Requests int64 `json:"requests,omitempty"`
	// Bytes caps bytes up and down; 0 is no cap.
	Bytes int64 `json:"bytes,omitempty"`
	// Window is the sliding window the caps hold over, across every run
	// that shares Config.QuotaDir; 0 counts this run alone.
	Window time.Duration `json:"window,omitempty"`
	// Rule names the policy rule, for records and messages.
	Rule string `json:"rule"`
	// Counts says what the proxy counts for the host (QuotaCounts): the
	// planner fills it for reviewers; the proxy does not read it.
	Counts string `json:"counts,omitempty"`
}

// Changes is a plan's record of its write grants (Plan.Changes).
type Changes struct {
	// Review: the tool writes into working copies (Grants[i].Work, the
	// mounts' sources), and the change reaches the grants only once
	// approved.
	Review bool `json:"review,omitempty"`
	// Store is where records are kept (STATE/changes).
	Store  string         `json:"store"`
	Grants []ChangesGrant `json:"grants"`
	// MaxFiles and MaxBytes bound each grant's scan; over them the run
	// cannot be undone (and a review cannot start).
	MaxFiles int   `json:"max_files"`
	MaxBytes int64 `json:"max_bytes"`
	// Rule is where the bounds come from (the policy's undo section).
	Rule string `json:"rule"`
	// SecretExcept are the policy's secrets.except patterns (host paths):
	// what they match is not protected by a Secret pattern.
	SecretExcept []string `json:"secret_except,omitempty"`
}

// ChangesGrant is one recorded write grant.
type ChangesGrant struct {
	Host   string `json:"host"`           // the grant's directory on the host
	Target string `json:"target"`         // where the sandbox sees it
	Work   string `json:"work,omitempty"` // review: the working copy mounted there
	// File is set for a grant of one file: Host and Target are then its
	// directory, of which only File is recorded (and, in a review, copied:
	// Work/File is mounted at Target/File).
	File string `json:"file,omitempty"`
	// Protected are, in a review, the policy's masks under the grant
	// (paths.deny, paths.deny-write, secrets.mask): a change to what they
	// match, or to what is beneath it, is never applied.
	Protected []ProtectedPattern `json:"protected,omitempty"`
	// Skip are sandboxed's own directories under Host (its state, runtime
	// and cache directories), relative: a recorded run leaves them out,
	// since what changes there during the run is sandboxed's own doing
	// (the run's pre-images among it), which an undo must not put back.
	Skip []string `json:"skip,omitempty"`
}

// ProtectedPattern is one policy mask under a recorded write grant.
type ProtectedPattern struct {
	// Pattern is relative to the grant, in the policy's glob grammar; a
	// "**/…" pattern is matched as the masks match it (sandbox/maskwalk.go).
	Pattern string `json:"pattern"`
	Rule    string `json:"rule"`
	Secret  bool   `json:"secret,omitempty"`
}
