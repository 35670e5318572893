package isolation

import "context"

// Prestarter is a Backend that can start sandboxes ahead of the runs that
// will use them, for the warm pools of a resident controller (sandboxed mcp,
// sandboxed serve).
//
// A warm sandbox holds everything that cannot change once it is started
// (namespaces and user namespace, init, cgroup or container, image,
// runtime, privilege) and nothing of any run: no grant, no limit beyond the
// backend's idle floor, no environment, no egress rule, no file. A run
// claims it, which applies the run's parts; it then serves exactly that
// one run and is destroyed with the run's Close. A warm sandbox is never
// handed to a second run.
type Prestarter interface {
	Backend
	// WarmKey is the pool a plan draws from: a string naming everything of
	// the plan a sandbox fixes at start. Two plans with the same key can
	// use the same warm sandbox. ok is false for a plan no warm sandbox
	// can serve (the run starts cold). It has no side effects.
	WarmKey(p *Plan) (key string, ok bool)
	// Prestart starts a warm sandbox for plans of key. runID is the run id
	// the sandbox is born with: every host resource it makes carries it
	// (cgroup, container name, labels, HostDir), so gc reaps an unclaimed
	// sandbox of a crashed controller like any run's, and the run that
	// claims it takes this id. hostDir is the private directory the
	// planner names for runID (Plan.HostDir); the caller has created it.
	// On error nothing is left behind.
	Prestart(ctx context.Context, key, runID, hostDir string) (Warm, error)
}

// Warm is a started sandbox that no run has claimed yet.
type Warm interface {
	// RunID is the run id the sandbox was born with.
	RunID() string
	// Key is the pool key it was started for.
	Key() string
	// Claim applies p to the sandbox and returns it started, as Start
	// would: p.RunID must be RunID(), WarmKey(p) must be Key(), and the
	// Check of p must have passed. The warm sandbox is consumed whatever
	// the outcome: on error it is destroyed, and the caller may start
	// the run cold.
	Claim(ctx context.Context, p *Plan) (Sandbox, error)
	// Discard destroys a sandbox that was never claimed (idle lifetime
	// over, pool shrinking, controller stopping). It is idempotent and
	// leaves nothing behind; call it with a context that is not already
	// cancelled.
	Discard(ctx context.Context) error
}
