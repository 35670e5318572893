package hostsetup

import "github.com/sandboxed-dev/sandboxed/internal/reown"

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

// Folder is a write grant folder's mode and ACLs, saved before a run hands
// it to the tool's uid and restored after it is handed back.
type Folder = reown.Folder

// SaveFolder records the mode and ACLs of path (see reown.SaveFolder).
func SaveFolder(path string) (Folder, error) { return reown.SaveFolder(path) }

// GrantHold is one run's hold on a write grant it was handed (see
// reown.Shared): the last run to end hands it back.
type GrantHold = reown.Shared

// GrantHoldsDir names the runtime directory's folder of holds.
const GrantHoldsDir = reown.HoldsDir

// HoldGrant takes a run's hold on the grant at path (see reown.Hold).
func HoldGrant(dir, path string) (*GrantHold, error) { return reown.Hold(dir, path) }

// Grant is a write grant handed over, as its hold records it.
type Grant = reown.Grant

// ReapGrantHolds removes the holds of runs that are gone from the
// runtime directory's folder of holds dir, after handing back by back
// the grants they leave handed over (see reown.ReapHolds).
func ReapGrantHolds(dir string, back func(Grant) error) ([]string, error) {
	return reown.ReapHolds(dir, back)
}
