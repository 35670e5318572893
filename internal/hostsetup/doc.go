// Package hostsetup prepares a Linux host once for an unprivileged user of
// sandboxed (`sudo sandboxed setup --user NAME`) and probes what the
// current user can have (`sandboxed doctor`). It lives outside isolation/:
// it prepares hosts and says what they offer, it is no tier; the tiers
// read its probes and its hand-over of write grants.
//
// Setup makes exactly these changes, each only where it is missing, and
// records each in a manifest (/var/lib/sandboxed/setup/NAME.json) so that
// Undo removes what setup added and nothing an administrator made by hand:
//
//   - a range of 65536 subordinate uids and gids in /etc/subuid and
//     /etc/subgid, chosen as useradd chooses (the lowest free range from
//     SUB_UID_MIN, overlapping no entry of any owner);
//   - on cgroup v1, the delegated subtree sandboxed/user-UID in each
//     hierarchy the process tier uses (memory, pids, cpu, freezer), owned
//     by the user with its cgroup.procs and tasks, under a root-owned
//     sandboxed directory, and, where systemd is the init, a oneshot unit
//     sandboxed-setup-NAME.service that makes it again at every boot (v1
//     directories do not survive a reboot);
//   - where AppArmor restricts unprivileged user namespaces
//     (kernel.apparmor_restrict_unprivileged_userns = 1, Ubuntu 24.04), a
//     profile that lets the sandboxed binary make them, as bubblewrap's
//     package installs for bwrap.
//
// On cgroup v2 it changes nothing for cgroups (systemd delegates a subtree
// to each user's manager) and says what is missing when the manager does
// not delegate.
//
// Every path is taken under System.Root, so tests run the actions against
// a temporary directory; files are replaced atomically, keeping their mode
// and owner. The package must not import sandbox, policy or tool: it knows
// the host, not runs.
package hostsetup
