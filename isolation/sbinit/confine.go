package sbinit

// Confine is how the landlock tier confines each command of a run whose
// init has no namespaces and stays outside the confinement: the init runs
// unconfined (so that the commands cannot signal it, and it can kill every
// one of their descendants as their child subreaper), and each command
// starts as the init binary again, which confines itself and executes the
// command in its place (same pid):
//
//	init --fork+exec(fd 3: Confine as JSON)--> /proc/self/exe __sandboxed-init --confine PATH ARGV...
//	                 read fd 3; close every descriptor from 3 up
//	                 setgroups, setresgid, setresuid (UID, GID; as root only)
//	                 rlimits (NprocLimit per uid), no_new_privs, dumpable 0
//	                 Landlock (Paths, no TCP, scopes), seccomp (Seccomp)
//	                 execve(PATH, ARGV, environ)
//
// Every step that fails ends the command with status 126 before it
// executes anything: nothing runs less confined than the Confine says.
type Confine struct {
	// SetID makes the command take UID and GID (and no supplementary
	// group): the init runs as root, the command as an unprivileged uid
	// of its own.
	SetID bool   `json:"set_id,omitempty"`
	UID   uint32 `json:"uid"`
	GID   uint32 `json:"gid"`
	// Rlimits are set, soft and hard, before the Landlock domain.
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	// NprocLimit, when positive, bounds the tasks of the command's real
	// uid with RLIMIT_NPROC: NprocLimit plus the tasks that uid runs
	// already when the command starts (SharedUID; with a uid of its own,
	// NprocLimit alone). RLIMIT_NPROC counts a uid's tasks across the
	// whole kernel.
	NprocLimit int64 `json:"nproc_limit,omitempty"`
	SharedUID  bool  `json:"shared_uid,omitempty"`
	// Landlock are the file hierarchies the command may use (on a kernel
	// of ABI 4 no TCP port, on ABI 6 signals and abstract Unix sockets
	// scoped to the run). Its ConnectTCP must be empty. Required unless
	// LimitsOnly.
	Landlock *Landlock `json:"landlock,omitempty"`
	// Seccomp is the compiled filter (Setup.Seccomp's encoding); required
	// unless LimitsOnly.
	Seccomp []byte `json:"seccomp,omitempty"`
	// LimitsOnly applies the identity and the limits alone: the none
	// tier, which confines nothing else, where no cgroup holds its limits.
	LimitsOnly bool `json:"limits_only,omitempty"`
}

// confineFlag is argv[2] of a command started through Confine.
const confineFlag = "--confine"

// confineArgs is the argv of the init binary that confines itself and
// executes path with argv.
func confineArgs(path string, argv []string) []string {
	return append([]string{"sandboxed-init", InitArg, confineFlag, path}, argv...)
}
