package tier

// Tier names an isolation tier.
type Tier string

const (
	// None runs the tool on the host, with no sandbox.
	None Tier = "none"
	// Process runs the tool in namespaces, cgroups and seccomp made by
	// sandboxed's own init. It is the default.
	Process Tier = "process"
	// Container runs the tool in a container of the Docker engine.
	Container Tier = "container"
	// Landlock runs the tool with no namespaces, mounts or cgroup of its
	// own, confined by what an unprivileged process may do to itself
	// (Landlock, seccomp, no_new_privs, rlimits). A tool never asks for
	// it: the operator's policy may let it stand in for Process where
	// namespaces cannot be made (a container with Docker's defaults).
	Landlock Tier = "landlock"
)

// Gaps of the landlock tier: protections a plan may need that the tier
// cannot give on some hosts, which a run goes without only where the
// operator's policy accepts them by name (isolation.landlock-gaps).
const (
	// GapMasks: a mask inside a write grant (paths.deny, the protected
	// .git/hooks, a secret mask, a read grant nested in it). Landlock
	// rights are inherited down a hierarchy and cannot exclude a
	// subtree; a read grant is split into a rule per entry around its
	// masks, a write grant cannot be (its tool could not create files),
	// so accepted, its masked paths stay as reachable as the rest of it.
	GapMasks = "masks"
	// GapSignals: a kernel whose Landlock cannot scope signals (ABI < 6)
	// while the tool runs as the invoking user's own uid, so it can
	// signal that user's other processes.
	GapSignals = "signals"
)

// LandlockGaps are the gaps of the landlock tier a policy may accept.
var LandlockGaps = []string{GapMasks, GapSignals}
