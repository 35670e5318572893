package hostsetup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Probe is what `sandboxed doctor` found for the current user: the mode
// sandboxed runs in and what the host lets this user have. Fields are
// facts; Checks renders them with their fixes.
type Probe struct {
	// Root is true when sandboxed runs as uid 0.
	Root bool `json:"root"`
	User User `json:"user"`
	// UserNS is nil when an unprivileged-style user namespace could be
	// made (by really making one in a child), else why not.
	UserNS *UserNSError `json:"-"`
	// AppArmorRestricts is true when AppArmor confines unprivileged user
	// namespaces; AppArmorLabel is this process's AppArmor label.
	AppArmorRestricts bool   `json:"apparmor_restricts_userns"`
	AppArmorLabel     string `json:"apparmor_label,omitempty"`
	// SubUIDs and SubGIDs are the user's subordinate ids; IDMapTools the
	// newuidmap and newgidmap found (setuid or with file capabilities).
	SubUIDs    []SubIDRange `json:"subuids"`
	SubGIDs    []SubIDRange `json:"subgids"`
	SubIDError string       `json:"subid_error,omitempty"`
	IDMapTools []string     `json:"idmap_tools"`
	// Delegation is which cgroup controllers this user may use.
	Delegation Delegation `json:"delegation"`
	// LandlockABI is the kernel's Landlock ABI version, 0 with
	// LandlockError when there is none.
	LandlockABI   int    `json:"landlock_abi"`
	LandlockError string `json:"landlock_error,omitempty"`
	// Container describes the enclosing container, if any.
	Container Container `json:"container"`
}

// UserNSError says why a user namespace could not be made.
type UserNSError struct {
	Err   error
	Cause string
	Fix   string
}

func (e *UserNSError) Error() string { return "make a user namespace: " + e.Cause }
func (e *UserNSError) Unwrap() error { return e.Err }

// Container is what sandboxed can tell about the container it runs in.
type Container struct {
	// Inside is true when any sign says so; Signs lists them.
	Inside bool     `json:"inside"`
	Signs  []string `json:"signs,omitempty"`
	// Seccomp is this process's seccomp mode (0 none, 1 strict, 2
	// filter), NoNewPrivs its no_new_privs bit, CapSysAdmin whether
	// CAP_SYS_ADMIN is in its effective set.
	Seccomp     int  `json:"seccomp"`
	NoNewPrivs  bool `json:"no_new_privs"`
	CapSysAdmin bool `json:"cap_sys_admin"`
	// DockerSocket is a Docker engine endpoint reachable from here, if
	// one is configured or mounted.
	DockerSocket string `json:"docker_socket,omitempty"`
}

// capSysAdmin is CAP_SYS_ADMIN's bit in /proc/PID/status's CapEff.
const capSysAdmin = 21

// parseStatus reads the seccomp mode, no_new_privs and CAP_SYS_ADMIN
// from the contents of /proc/self/status.
func parseStatus(data []byte) (seccomp int, nnp, sysAdmin bool) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Seccomp":
			seccomp, _ = strconv.Atoi(v)
		case "NoNewPrivs":
			nnp = v == "1"
		case "CapEff":
			if caps, err := strconv.ParseUint(v, 16, 64); err == nil {
				sysAdmin = caps&(1<<capSysAdmin) != 0
			}
		}
	}
	return seccomp, nnp, sysAdmin
}

// containerMarks are words in /proc/1/cgroup paths that container
// engines and Kubernetes put there.
var containerMarks = []string{"docker", "kubepods", "containerd", "libpod", "lxc", "crio", "buildkit"}

// probeContainer collects the signs of an enclosing container: the files
// Docker and Podman leave (/.dockerenv, /run/.containerenv), the
// "container" variable systemd-nspawn, Podman and LXC set, Kubernetes'
// service variables, and container engines' names in PID 1's cgroups.
func (s *System) probeContainer() Container {
	var c Container
	for _, f := range []string{"/.dockerenv", "/run/.containerenv"} {
		if _, err := os.Stat(s.path(f)); err == nil {
			c.Signs = append(c.Signs, f+" exists")
		}
	}
	if v := s.getenv("container"); v != "" {
		c.Signs = append(c.Signs, "container="+v)
	}
	if s.getenv("KUBERNETES_SERVICE_HOST") != "" {
		c.Signs = append(c.Signs, "KUBERNETES_SERVICE_HOST is set (a Kubernetes pod)")
	}
	if b, err := os.ReadFile(s.path("/proc/1/cgroup")); err == nil {
	lines:
		for _, line := range strings.Split(string(b), "\n") {
			_, p, _ := strings.Cut(line, ":")
			_, p, _ = strings.Cut(p, ":")
			for _, m := range containerMarks {
				if strings.Contains(p, m) {
					c.Signs = append(c.Signs, "PID 1's cgroup is "+p)
					break lines
				}
			}
		}
	}
	c.Inside = len(c.Signs) > 0
	if b, err := os.ReadFile(s.path("/proc/self/status")); err == nil {
		c.Seccomp, c.NoNewPrivs, c.CapSysAdmin = parseStatus(b)
	}
	if h := s.getenv("DOCKER_HOST"); h != "" {
		c.DockerSocket = h
	} else if fi, err := os.Stat(s.path("/var/run/docker.sock")); err == nil && fi.Mode()&os.ModeSocket != 0 {
		c.DockerSocket = "unix:///var/run/docker.sock"
	}
	return c
}

// sysctl reads a /proc/sys file, "" when it does not exist.
func (s *System) sysctl(p string) string {
	b, err := os.ReadFile(s.path(p))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// classifyUserNS says why making a user namespace failed with err, from
// the host's switches and the enclosing container.
func (s *System) classifyUserNS(err error, root bool, c Container) *UserNSError {
	e := &UserNSError{Err: err}
	persist := " (and in /etc/sysctl.d/ to keep it after a reboot)"
	switch {
	case errors.Is(err, syscall.ENOSPC):
		if v := s.sysctl("/proc/sys/user/max_user_namespaces"); v == "0" {
			e.Cause = "user.max_user_namespaces is 0"
		} else {
			e.Cause = "the limit of user namespaces is reached (user.max_user_namespaces = " + v + ")"
		}
		e.Fix = "sudo sysctl -w user.max_user_namespaces=15000" + persist
	case errors.Is(err, syscall.EINVAL) && !exists(s.path("/proc/self/ns/user")):
		e.Cause = "the kernel has no user namespaces"
		e.Fix = "use a kernel built with CONFIG_USER_NS"
	case errors.Is(err, syscall.EUSERS):
		e.Cause = "user namespaces are nested 32 deep already"
		e.Fix = "run sandboxed from an outer namespace"
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		switch {
		case !root && s.sysctl("/proc/sys/kernel/unprivileged_userns_clone") == "0":
			e.Cause = "kernel.unprivileged_userns_clone is 0"
			e.Fix = "sudo sysctl -w kernel.unprivileged_userns_clone=1" + persist
		case c.Seccomp == 2 && c.Inside:
			e.Cause = "the seccomp filter of the enclosing container refuses it (Docker's and containerd's default profiles do without CAP_SYS_ADMIN)"
			e.Fix = "start the container with a seccomp profile that allows clone/unshare of user namespaces (docker run --security-opt seccomp=unconfined; in Kubernetes, securityContext.seccompProfile: Unconfined), or use isolation: container against a Docker engine outside"
		case c.Seccomp == 2:
			e.Cause = "a seccomp filter on this process refuses it"
			e.Fix = "run sandboxed from a process without that seccomp filter"
		case !root && s.appArmorRestricts():
			e.Cause = "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1)"
			e.Fix = "sudo sandboxed setup --user " + s.userForFix() + " (installs an AppArmor profile for this binary)"
		default:
			e.Cause = "the kernel refused it (" + err.Error() + "; a chroot, a security module or a container runtime may forbid it)"
			e.Fix = "run sandboxed outside that confinement"
		}
	default:
		e.Cause = err.Error()
		e.Fix = "see unshare(2)"
	}
	return e
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// userForFix names the current user in a fix.
func (s *System) userForFix() string {
	if n := s.getenv("USER"); validUserName(n) {
		return n
	}
	return "$USER"
}

// Check is one line of `sandboxed doctor`, the one type every probe of
// every tier renders its findings as: Tier is a tier of the build or
// "all"; Fix is set only when OK is false.
type Check struct {
	Tier   string `json:"tier"`
	Name   string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
	Fix    string `json:"fix,omitempty"`
}

// Checks renders p for doctor, one Check per fact with its fix.
func (p *Probe) Checks() []Check {
	var out []Check
	add := func(tier, name string, ok bool, detail, fix string) {
		c := Check{Tier: tier, Name: name, OK: ok, Detail: detail}
		if !ok {
			c.Fix = fix
		}
		out = append(out, c)
	}
	setup := "sudo sandboxed setup --user " + p.User.Name
	if p.Root {
		add("all", "mode", true, "root: sandboxed runs as uid 0", "")
	} else {
		add("all", "mode", true, fmt.Sprintf("rootless: sandboxed runs as %s (uid %d); the process tier builds everything inside a user namespace", p.User.Name, p.User.UID), "")
	}

	// User namespaces.
	switch {
	case p.UserNS != nil:
		add("process", "user namespaces", false, p.UserNS.Cause, p.UserNS.Fix)
	case !p.Root && p.AppArmorRestricts && !strings.HasPrefix(p.AppArmorLabel, "sandboxed"):
		add("process", "user namespaces", false,
			"AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1) and no profile lets this binary make them (its label: "+p.AppArmorLabel+")",
			setup+" (installs /etc/apparmor.d/sandboxed for this binary)")
	default:
		add("process", "user namespaces", true, "made one in a child (unshare CLONE_NEWUSER, own uid mapped)", "")
	}

	// Subordinate ids: reduced runs as nobody through them when rootless.
	if p.Root {
		add("process", "subordinate ids", true, "root maps ids itself", "")
	} else {
		var missing []string
		if p.SubIDError != "" {
			add("process", "subordinate ids", false, p.SubIDError, "fix the line by hand")
		} else {
			detail := fmt.Sprintf("uids %s; gids %s", rangesText(p.SubUIDs), rangesText(p.SubGIDs))
			if len(p.SubUIDs) == 0 {
				missing = append(missing, "/etc/subuid")
			}
			if len(p.SubGIDs) == 0 {
				missing = append(missing, "/etc/subgid")
			}
			if len(missing) > 0 {
				detail = "none for " + p.User.Name + " in " + strings.Join(missing, " and ") + " (execution-privilege reduced needs them)"
			}
			add("process", "subordinate ids", len(missing) == 0, detail, setup)
		}
		tools := len(p.IDMapTools) == 2
		add("process", "newuidmap and newgidmap", tools, strings.Join(p.IDMapTools, " "),
			"install them, setuid root: apt-get install uidmap (Debian, Ubuntu), dnf install shadow-utils (Fedora)")
	}

	// Cgroups.
	if p.Root && p.Delegation.Fix == "" {
		add("process", "cgroup delegation", true, fmt.Sprintf("root makes its cgroups directly (cgroup v%d)", p.Delegation.Version), "")
	} else {
		add("process", "cgroup delegation", p.Delegation.OK, p.Delegation.Detail, p.Delegation.Fix)
	}

	// Landlock.
	if p.LandlockABI > 0 {
		add("process", "landlock", true, landlockText(p.LandlockABI), "")
	} else {
		add("process", "landlock", false, p.LandlockError, LandlockFix)
	}

	// The enclosing container.
	c := p.Container
	if !c.Inside {
		add("all", "environment", true, "not inside a container that sandboxed can see", "")
		return out
	}
	env := "inside a container: " + strings.Join(c.Signs, "; ")
	env += fmt.Sprintf("; seccomp %s, CAP_SYS_ADMIN %s", seccompText(c.Seccomp), yesNo(c.CapSysAdmin))
	add("all", "environment", true, env, "")
	// What each tier can do here is not inferred from these signs: doctor
	// starts a sandbox in each tier and says what happened, with
	// Container.Fix.
	return out
}

// LandlockFix is the one fix for a kernel without the Landlock a plan
// needs: the version that has every wall the tiers use.
const LandlockFix = "use Linux 6.12 or later built with CONFIG_SECURITY_LANDLOCK=y, with landlock in the lsm= boot parameter"

func rangesText(rs []SubIDRange) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, ", ")
}

func landlockText(abi int) string {
	t := fmt.Sprintf("ABI %d: filesystem rules", abi)
	if abi >= 4 {
		t += ", TCP bind and connect rules"
	}
	if abi >= 6 {
		t += ", abstract Unix sockets and signals scoped to the sandbox"
	}
	return t
}

func seccompText(mode int) string {
	switch mode {
	case 0:
		return "off"
	case 1:
		return "strict"
	default:
		return "filter"
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
