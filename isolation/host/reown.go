package host

import "github.com/sandboxed-dev/sandboxed/isolation/internal/reown"

// Owner is a uid and gid on the host.
type Owner = reown.Owner

// Reowned is what Reown did under one root.
type Reowned = reown.Reowned

// ReownError is a failure of Reown on one path.
type ReownError = reown.ReownError

// Reown gives every entry under root owned by from to to (see
// reown.Reown): the one way sandboxed hands a write grant to the uid a
// sandbox runs as, and what is in it back to the invoking user.
func Reown(root string, from, to Owner) (Reowned, error) { return reown.Reown(root, from, to) }
