package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/isolation/seccomp"
)

// Features is what this host offers the process tier, for `sandboxed
// doctor` and Check.
type Features struct {
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
	// Missing lists each missing piece as an *isolation.UnsupportedError
	// with its fix. The user namespace is reported here but only the
	// elevated privilege needs it.
	Missing []error `json:"-"`

	cgroups *cgroup.Host
}

// Probe inspects the host. It has no side effects.
func Probe(ctx context.Context) Features {
	f := Features{Root: os.Geteuid() == 0, Namespaces: map[string]bool{}}
	if !f.Root {
		f.Missing = append(f.Missing, &isolation.UnsupportedError{What: "the process tier without root", Fix: "run sandboxed as root (sudo), or use isolation: container or none"})
	}
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
				f.Missing = append(f.Missing, &isolation.UnsupportedError{What: "user namespaces (needed for elevated)", Fix: "sysctl -w user.max_user_namespaces=15000"})
			}
		}
	}
	if h, err := cgroup.Detect(); err != nil {
		f.Missing = append(f.Missing, err)
	} else {
		f.cgroups = h
		f.CgroupVersion = h.Version
		if h.Version == 2 {
			f.Controllers = h.V2Controllers
		} else {
			for c := range h.V1 {
				f.Controllers = append(f.Controllers, c)
			}
			sort.Strings(f.Controllers)
		}
		f.Missing = append(f.Missing, h.Missing(cgroup.Resources{MemoryBytes: 1, Pids: 1})...)
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

const landlockFix = "use Linux 6.12 or later built with CONFIG_SECURITY_LANDLOCK=y, with landlock in the lsm= boot parameter"

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

// Check is one line of `sandboxed doctor`.
type Check struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Detail says what was found; Fix how to get it when not OK.
	Detail string `json:"detail,omitempty"`
	Fix    string `json:"fix,omitempty"`
}

// Checks renders f for `sandboxed doctor`, one Check per requirement of
// the process tier (the user namespace only matters to elevated).
func (f Features) Checks() []Check {
	var out []Check
	add := func(name string, ok bool, detail, fix string) {
		c := Check{Name: name, OK: ok, Detail: detail}
		if !ok {
			c.Fix = fix
		}
		out = append(out, c)
	}
	add("root", f.Root, "", "run sandboxed as root (sudo), or use isolation: container or none")
	for _, ns := range []string{"mnt", "pid", "net", "ipc", "uts", "cgroup", "user"} {
		fix := "use a kernel built with CONFIG_" + strings.ToUpper(ns) + "_NS"
		if ns == "user" {
			fix = "sysctl -w user.max_user_namespaces=15000 (needed for elevated only)"
		}
		add(ns+" namespace", f.Namespaces[ns], "", fix)
	}
	cg := f.cgroups
	add("cgroups", cg != nil, fmt.Sprintf("v%d: %s", f.CgroupVersion, strings.Join(f.Controllers, " ")), "mount cgroup v2 at /sys/fs/cgroup")
	if cg != nil {
		for _, ctl := range []string{"memory", "pids", "cpu"} {
			errs := cg.Missing(cgroup.Resources{MemoryBytes: b2i(ctl == "memory"), Pids: b2i(ctl == "pids"), CPUs: float64(b2i(ctl == "cpu"))})
			fix := ""
			for _, e := range errs {
				var ue *isolation.UnsupportedError
				if errors.As(e, &ue) && strings.Contains(ue.What, ctl) {
					fix = ue.Fix
				}
			}
			add(ctl+" controller", fix == "", "", fix)
		}
		if cg.Version == 1 {
			errs := cg.Missing(cgroup.Resources{})
			add("freezer controller", len(errs) == 0, "", "mount the v1 freezer controller")
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
