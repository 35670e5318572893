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
)
