package process

import (
	"context"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
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
	return f
}
