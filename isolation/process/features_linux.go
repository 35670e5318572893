package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	host "github.com/sandboxed-dev/sandboxed/internal/hostsetup"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/isolation/seccomp"
)

// Features is what this host offers the process tier, for `sandboxed
// doctor` and Check.
type Features struct {
	// Root is set when sandboxed runs as root; otherwise the process tier
	// runs rootless, in a user namespace with a delegated cgroup.
	Root bool `json:"root"`
	// Namespaces maps mnt, pid, net, ipc, uts, cgroup and user to
	// availability.
	Namespaces    map[string]bool `json:"namespaces"`
	CgroupVersion int             `json:"cgroup_version"`
	Controllers   []string        `json:"cgroup_controllers"`
	Seccomp       bool            `json:"seccomp"`
	NoNewPrivs    bool            `json:"no_new_privs"`
	// LandlockABI is the Landlock ABI the kernel enforces (0: none). The
	// tier raises what it covers: files from 1, TCP from 4, IPC scopes
	// from 6 (sbinit.LandlockFullABI).
	LandlockABI int `json:"landlock_abi"`
	// CgroupsReadOnly is set when a cgroup hierarchy is mounted read-only
	// (a container's cgroupfs, by Docker's default): no run here gets a
	// cgroup of its own.
	CgroupsReadOnly bool `json:"cgroups_read_only"`
	// Missing lists each missing piece as an *isolation.UnsupportedError
	// with its fix. The user namespace is needed without root, and as
	// root by elevated and by same-as-user with no invoking user.
	Missing []error `json:"-"`

	cgroups *cgroup.Host
}

// Probe inspects the host. It has no side effects.
func Probe(ctx context.Context) Features {
	f := Features{Root: os.Geteuid() == 0, Namespaces: map[string]bool{}}
	for _, ns := range []string{"mnt", "pid", "net", "ipc", "uts", "cgroup", "user"} {
		_, err := os.Stat("/proc/self/ns/" + ns)
		f.Namespaces[ns] = err == nil
		if err != nil {
			f.Missing = append(f.Missing, &isolation.UnsupportedError{What: ns + " namespaces", Fix: "use a kernel built with CONFIG_" + strings.ToUpper(ns) + "_NS"})
		}
	}
	if f.Namespaces["user"] {
		if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil {
			if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); n == 0 {
				f.Namespaces["user"] = false
				f.Missing = append(f.Missing, &isolation.UnsupportedError{What: "user namespaces (needed without root, and for elevated)", Fix: "sysctl -w user.max_user_namespaces=15000"})
			}
		}
	}
	if h, err := cgroup.Detect(); err != nil {
		f.Missing = append(f.Missing, err)
	} else {
		f.cgroups = h
		f.CgroupVersion = h.Version
		f.Controllers = h.Usable()
		f.Missing = append(f.Missing, h.Missing(cgroup.Resources{MemoryBytes: 1, Pids: 1})...)
		f.CgroupsReadOnly = h.ReadOnly()
	}
	f.Seccomp = seccomp.Supported()
	if !f.Seccomp {
		f.Missing = append(f.Missing, &isolation.UnsupportedError{What: "seccomp filters", Fix: "use a kernel built with CONFIG_SECCOMP_FILTER"})
	}
	// PR_GET_NO_NEW_PRIVS exists since 3.5, as does the bit.
	_, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	f.NoNewPrivs = err == nil
	if !f.NoNewPrivs {
		f.Missing = append(f.Missing, &isolation.UnsupportedError{What: "no_new_privs", Fix: "use Linux 3.5 or later"})
	}
	f.LandlockABI = sbinit.LandlockABI()
	return f
}

// landlockMissing is the refusal of a run that requires every Landlock
// wall on a kernel of ABI abi.
func landlockMissing(abi int) error {
	return &isolation.UnsupportedError{
		What: fmt.Sprintf("Landlock ABI %d (files, TCP and IPC scopes); this kernel has %s", sbinit.LandlockFullABI, landlockDetail(abi)),
		Fix:  landlockFix,
	}
}

// landlockFix is the fix doctor gives too (host.LandlockFix).
const landlockFix = host.LandlockFix

// landlockDetail says what ABI abi enforces.
func landlockDetail(abi int) string {
	switch {
	case abi <= 0:
		return "no Landlock"
	case abi < 4:
		return fmt.Sprintf("ABI %d: files", abi)
	case abi < sbinit.LandlockFullABI:
		return fmt.Sprintf("ABI %d: files, TCP", abi)
	default:
		return fmt.Sprintf("ABI %d: files, TCP, IPC scopes", abi)
	}
}

// Checks renders f for `sandboxed doctor`, one Check per requirement of
// the process tier (the user namespace only matters to elevated).
func (f Features) Checks() []host.Check {
	var out []host.Check
	add := func(name string, ok bool, detail, fix string) {
		c := host.Check{Tier: string(isolation.TierProcess), Name: name, OK: ok, Detail: detail}
		if !ok {
			c.Fix = fix
		}
		out = append(out, c)
	}
	for _, ns := range []string{"mnt", "pid", "net", "ipc", "uts", "cgroup", "user"} {
		fix := "use a kernel built with CONFIG_" + strings.ToUpper(ns) + "_NS"
		if ns == "user" {
			fix = "sysctl -w user.max_user_namespaces=15000 (needed without root, and for elevated)"
		}
		// The kernel has the type; whether this process may make one is the
		// user namespaces line and the trials.
		add(ns+" namespace", f.Namespaces[ns], "in the kernel", fix)
	}
	cg := f.cgroups
	cgFix := "mount cgroup v2 at /sys/fs/cgroup"
	var ue *isolation.UnsupportedError
	if cg != nil && errors.As(cg.NoDelegation, &ue) {
		cgFix = ue.Fix
	}
	cgDetail := fmt.Sprintf("v%d: %s", f.CgroupVersion, strings.Join(f.Controllers, " "))
	if len(f.Controllers) == 0 {
		cgDetail = fmt.Sprintf("v%d: no controller this user may use", f.CgroupVersion)
	}
	if f.CgroupsReadOnly {
		cgDetail += "; mounted read-only here (a container's cgroupfs): no run gets a cgroup of its own, the landlock and none tiers' limits are rlimits"
		cgFix = "start the container with -v /sys/fs/cgroup:/sys/fs/cgroup:rw (or give it a delegated cgroup v2 subtree)"
	}
	add("cgroups", cg != nil && cg.NoDelegation == nil && !f.CgroupsReadOnly, cgDetail, cgFix)
	if cg != nil && !f.CgroupsReadOnly {
		for _, ctl := range []string{"memory", "pids", "cpu", "freezer"} {
			if ctl == "freezer" && cg.Version != 1 {
				continue
			}
			fix := ""
			if cg.NoDelegation != nil {
				fix = cgFix
			}
			r := cgroup.Resources{MemoryBytes: b2i(ctl == "memory"), Pids: b2i(ctl == "pids"), CPUQuota: b2i(ctl == "cpu") * isolation.CPUPeriod, CPUPeriod: isolation.CPUPeriod}
			for _, e := range cg.Missing(r) {
				var ue *isolation.UnsupportedError
				if fix == "" && errors.As(e, &ue) && strings.Contains(ue.What, ctl) {
					fix = ue.Fix
				}
			}
			add(ctl+" controller", fix == "", "", fix)
		}
	}
	add("seccomp", f.Seccomp, "", "use a kernel built with CONFIG_SECCOMP_FILTER")
	add("no_new_privs", f.NoNewPrivs, "", "use Linux 3.5 or later")
	return out
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
