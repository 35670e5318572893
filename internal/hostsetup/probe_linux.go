package hostsetup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
)

// ProbeUser inspects what the user this process runs as can have.
// selfArgs are arguments that make this binary exit at once without side
// effects (for `sandboxed`, "version"): the user namespace probe starts it
// in a new user namespace. It changes nothing on the host.
func (s *System) ProbeUser(ctx context.Context, selfArgs []string) *Probe {
	p := &Probe{Root: os.Geteuid() == 0}
	p.User = User{Name: strconv.Itoa(os.Getuid()), UID: os.Getuid(), GID: os.Getgid()}
	if u, err := user.LookupId(strconv.Itoa(p.User.UID)); err == nil {
		p.User.Name = u.Username
	}
	p.Container = s.probeContainer()
	if err := tryUserNS(ctx, selfArgs); err != nil {
		p.UserNS = s.classifyUserNS(err, p.Root, p.Container)
	}
	p.AppArmorRestricts = s.appArmorRestricts()
	for _, f := range []string{"/proc/self/attr/apparmor/current", "/proc/self/attr/current"} {
		if b, err := os.ReadFile(s.path(f)); err == nil {
			p.AppArmorLabel = strings.TrimSpace(strings.TrimRight(string(b), "\x00"))
			break
		}
	}
	for _, kind := range []string{"uid", "gid"} {
		data, _, err := readOptional(s.path(subIDFile(kind)))
		var ranges []SubIDRange
		if err == nil {
			ranges, err = ParseSubIDs(data)
		}
		if err != nil {
			p.SubIDError = fmt.Sprintf("read %s: %v", subIDFile(kind), err)
			continue
		}
		own := OwnedBy(ranges, p.User.Name, p.User.UID)
		if kind == "uid" {
			p.SubUIDs = own
		} else {
			p.SubGIDs = own
		}
	}
	for _, t := range []string{"newuidmap", "newgidmap"} {
		if path := s.findTool(t); path != "" && privileged(s.path(path)) {
			p.IDMapTools = append(p.IDMapTools, path)
		}
	}
	cg, err := cgroup.Detect()
	_, setupDone, _ := s.loadManifest(p.User.Name)
	p.Delegation = delegationOf(cg, err, p.User, setupDone)
	p.LandlockABI, p.LandlockError = landlockABI()
	return p
}

// tryUserNS starts this binary (with args) in a new user namespace that
// maps the caller's own uid and gid, as the rootless process tier does,
// and waits for it. The error is the kernel's answer to clone or to the
// id maps.
func tryUserNS(ctx context.Context, args []string) error {
	cmd := exec.CommandContext(ctx, "/proc/self/exe", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	_ = cmd.Wait() // it started inside the namespace: that is the answer
	return nil
}

// privileged reports whether the helper at p can map ids: setuid root, or
// file capabilities.
func privileged(p string) bool {
	fi, err := os.Stat(p)
	if err != nil {
		return false
	}
	if uid, _, ok := fileOwner(fi); ok && uid == 0 && fi.Mode()&os.ModeSetuid != 0 {
		return true
	}
	n, err := unix.Getxattr(p, "security.capability", nil)
	return err == nil && n > 0
}

// landlockABI reports the Landlock ABI the process tier enforces
// (sbinit.LandlockABI), or why there is none.
func landlockABI() (int, string) {
	if abi := sbinit.LandlockABI(); abi > 0 {
		return abi, ""
	}
	_, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == 0:
		return 0, "Landlock answers but with no ABI known here"
	case errors.Is(errno, unix.ENOSYS):
		return 0, "this kernel has no Landlock (landlock_create_ruleset: ENOSYS)"
	case errors.Is(errno, unix.EOPNOTSUPP):
		return 0, "Landlock is built into this kernel but not enabled at boot (EOPNOTSUPP)"
	default:
		return 0, "landlock_create_ruleset: " + errno.Error()
	}
}

// delegationOf renders what isolation/cgroup found for this process (h, or
// the error of its detection): which controllers its runs can use. setupDone
// says that setup prepared this user once, so missing v1 directories were
// removed by a reboot.
func delegationOf(h *cgroup.Host, err error, u User, setupDone bool) Delegation {
	if err != nil {
		d := Delegation{Detail: err.Error(), Fix: "mount cgroup v2 at /sys/fs/cgroup"}
		var ue *isolation.UnsupportedError
		if errors.As(err, &ue) {
			d.Detail, d.Fix = ue.What, ue.Fix
		}
		return d
	}
	d := Delegation{Version: h.Version}
	if !h.Rootless {
		d.OK = true
		d.Controllers = h.Usable()
		d.Detail = fmt.Sprintf("root makes its cgroups directly (cgroup v%d)", h.Version)
		if h.ReadOnly() {
			d.OK = false
			d.Detail = fmt.Sprintf("cgroup v%d is mounted read-only here (a container's cgroupfs): no run gets a cgroup of its own", h.Version)
			d.Fix = "start the container with -v /sys/fs/cgroup:/sys/fs/cgroup:rw (or give it a delegated cgroup v2 subtree)"
		}
		return d
	}
	setup := "sudo sandboxed setup --user " + u.Name
	reboot := ""
	if setupDone && h.Version == 1 {
		reboot = " (setup was run, but cgroup v1 directories vanish at reboot: run it again after each boot; where systemd is the init, setup installs a unit that does)"
	}
	var ue *isolation.UnsupportedError
	if errors.As(h.NoDelegation, &ue) {
		d.Missing = V1Controllers
		if h.Version == 2 {
			d.Missing = v2Wanted
		}
		d.Detail, d.Fix = ue.What, ue.Fix+reboot
		return d
	}
	if h.Version == 2 {
		v2Controllers(&d, h.V2Controllers, u)
		return d
	}
	for _, c := range V1Controllers {
		if _, ok := h.V1[c]; ok {
			d.Controllers = append(d.Controllers, c)
			d.Where = append(d.Where, filepath.Join(h.V1[c], h.Base))
		}
	}
	d.Missing = h.Undelegated
	sortLike(d.Missing, V1Controllers)
	where := filepath.Join("/sys/fs/cgroup/CONTROLLER", cgroup.UserDir(u.UID))
	d.OK = len(d.Missing) == 0
	if d.OK {
		d.Detail = fmt.Sprintf("cgroup v1: %s delegated to %s at %s", strings.Join(d.Controllers, " "), u.Name, where)
		return d
	}
	d.Detail = fmt.Sprintf("cgroup v1: %s delegated to %s, %s not (no %s owned by uid %d there)", strings.Join(d.Controllers, " "), u.Name, strings.Join(d.Missing, " "), where, u.UID)
	d.Fix = setup + reboot
	return d
}
