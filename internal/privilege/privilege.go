package privilege

// Privilege is an execution privilege.
type Privilege string

const (
	// SameAsUser runs as the invoking user's uid and gid, with no
	// capabilities. It is the default.
	SameAsUser Privilege = "same-as-user"
	// Reduced runs as uid and gid 65534, with no capabilities, a tighter
	// seccomp filter and a lower default pids limit.
	Reduced Privilege = "reduced"
	// Elevated runs as root inside a user namespace with Docker's default
	// capability set; never host root; it needs approval.
	Elevated Privilege = "elevated"
)

// NobodyID is the uid and gid of the reduced privilege (nobody), and
// what a backend runs a tool as where root is not allowed: the one
// definition every tier and test reads.
const NobodyID = 65534

// All are the privileges in the order the documentation lists them.
var All = []Privilege{SameAsUser, Reduced, Elevated}
