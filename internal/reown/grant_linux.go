package reown

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Back hands g back by do (nil: Reown in this process): what its To owns
// in the grant goes to its From, by Reown's rules (never following a
// link, never leaving the grant), and the folder's mode and ACLs are
// restored. A path that no longer names the folder handed over is left
// alone (ErrGrantGone). Only for a grant no run holds: its tool is gone.
// A grant handed over at a bind of the run's that is gone is handed back
// at its Origin.
func (g Grant) Back(do Func) error {
	err := g.back(do)
	if errors.Is(err, ErrGrantGone) && g.Origin != "" && g.Origin != g.Path {
		g.Path, g.Folder.Path, g.Origin = g.Origin, g.Origin, ""
		return g.back(do)
	}
	return err
}

func (g Grant) back(do Func) error {
	if do == nil {
		do = reownHere
	}
	var st unix.Stat_t
	err := unix.Lstat(g.Path, &st)
	if errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("%s: %w", g.Path, ErrGrantGone)
	}
	if err != nil {
		return &ReownError{Path: g.Path, Op: "stat", Err: err}
	}
	if st.Dev != g.Folder.Dev || st.Ino != g.Folder.Ino || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return fmt.Errorf("%s: %w", g.Path, ErrGrantGone)
	}
	if err := do([]string{g.Path}, g.To, g.From); err != nil {
		return err
	}
	return g.Folder.Restore()
}
