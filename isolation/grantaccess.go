package isolation

import (
	"fmt"
	"io/fs"
	"syscall"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
)

// GrantAccess says how the reduced tool of a plan reaches one of its
// write grants on this host, or why it cannot.
type GrantAccess struct {
	// Path is the grant's host source.
	Path string
	// Writable is false when the tool could not write there.
	Writable bool
	// Text says how, or why not.
	Text string
	// Fix, when the tool could not write there, is what to do.
	Fix string
}

// String is the access in one sentence, with the fix.
func (g GrantAccess) String() string {
	if g.Fix == "" {
		return g.Text
	}
	return g.Text + "; " + g.Fix
}

// ReducedGrantAccess says, for each write grant of p when p runs a
// reduced tool (nobody), how the tool writes there, as each tier does it
// (see docs/permissions.md): the process tier idmaps the grant to its
// owner (root) or hands it to the tool for the run (without root); the
// container and landlock tiers hand it over as root (the landlock tier to
// a uid of the run's own); otherwise (the none tier, the landlock tier
// without root) the tool is the user. euid is sandboxed's; stat reads a grant (os.Stat). Other
// privileges and backends get nothing.
func ReducedGrantAccess(p *Plan, euid int, stat func(string) (fs.FileInfo, error)) []GrantAccess {
	if p == nil || p.Privilege != privilege.Reduced || p.Backend != "" {
		return nil
	}
	owner := ID{UID: uint32(euid)}
	if p.GrantOwner != nil {
		owner = *p.GrantOwner
	}
	var out []GrantAccess
	for _, path := range WriteGrants(p) {
		fi, err := stat(path)
		if err != nil {
			continue // planned with a path that is not there: the run says
		}
		out = append(out, grantAccessOf(p.Tier, euid, owner, path, fi))
	}
	return out
}

// grantAccessOf is ReducedGrantAccess of one grant.
func grantAccessOf(tier Tier, euid int, owner ID, path string, fi fs.FileInfo) GrantAccess {
	uid, mode := uint32(0), uint32(fi.Mode().Perm())
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		uid = st.Uid
	}
	others := mode&0o002 != 0
	asOwner := (uid == owner.UID && mode&0o200 != 0) || others
	g := GrantAccess{Path: path, Writable: true}
	stateOf := fmt.Sprintf("%s is uid %d's, mode %o", path, uid, mode)
	switch {
	case tier == TierProcess || (tier == TierContainer || tier == TierLandlock) && euid == 0:
		if !asOwner {
			g.Writable = false
			g.Text = fmt.Sprintf("the reduced tool cannot write its grant %s: it writes there as uid %d, the invoking user, and %s", path, owner.UID, stateOf)
			g.Fix = fmt.Sprintf("grant a folder uid %d may write, or run the tool as same-as-user", owner.UID)
			break
		}
		switch {
		case tier == TierProcess && euid == 0:
			g.Text = fmt.Sprintf("the reduced tool writes its grant %s as uid %d: the grant's bind is idmapped, and what it makes there is uid %d's", path, owner.UID, owner.UID)
		case tier == TierLandlock:
			g.Text = fmt.Sprintf("the reduced tool's grant %s is handed to the run's own uid for the run and back to uid %d after it, with the folder's mode and ACLs", path, owner.UID)
		default:
			g.Text = fmt.Sprintf("the reduced tool's grant %s is handed to its uid for the run and back to uid %d after it, with the folder's mode and ACLs", path, owner.UID)
		}
	case tier == TierContainer:
		if uid == privilege.NobodyID && mode&0o200 != 0 || others {
			g.Text = fmt.Sprintf("the reduced tool writes its grant %s as uid %d, which may write there; what it makes stays uid %d's", path, privilege.NobodyID, privilege.NobodyID)
			break
		}
		g.Writable = false
		g.Text = fmt.Sprintf("the reduced tool cannot write its grant %s: the container tier without root runs it as uid %d and cannot hand the grant to it, and %s", path, privilege.NobodyID, stateOf)
		g.Fix = fmt.Sprintf("run sandboxed as root, use the process tier, run the tool as same-as-user, or let uid %d write there (setfacl -m u:%d:rwX %s)", privilege.NobodyID, privilege.NobodyID, path)
	default:
		g.Text = fmt.Sprintf("the reduced tool writes its grant %s as your own uid (the %s tier does not change it)", path, tier)
	}
	return g
}
