package isolation

// AccessOp is what a process did to a path.
type AccessOp string

// The operations an observed run reports.
const (
	// AccessRead: opened for reading (a directory: listed).
	AccessRead AccessOp = "read"
	// AccessWrite: opened for writing, created, truncated, removed or
	// renamed, or a directory made or removed in it.
	AccessWrite AccessOp = "write"
	// AccessExec: executed.
	AccessExec AccessOp = "exec"
)

// Access is one path an observed run touched, as the sandbox saw it (an
// absolute path inside the sandbox, which is the host path for every
// bind of the host). Dir says the path is a directory: listed
// (O_DIRECTORY), made or removed.
type Access struct {
	Op   AccessOp `json:"op"`
	Path string   `json:"path"`
	Dir  bool     `json:"dir,omitempty"`
}

// ObserveUnsupported is the refusal of an observed plan (Plan.Observe) by a
// tier that cannot observe.
func ObserveUnsupported(t Tier) error {
	return &UnsupportedError{
		What: "observing a run (permissions learn) in the " + string(t) + " tier",
		Fix:  "learning runs in the process tier",
	}
}
