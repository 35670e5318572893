package process

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/internal/cleanup"
	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/internal/reown"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/initbin"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
)

// How a reduced run's write grants are made writable to its tool, which
// runs as nobody, not as the grants' owner (Plan.GrantOwner, U below):
//
//	who runs sandboxed   how
//	root                 each write grant's bind is idmapped with a user
//	                     namespace mapping U to nobody: U's files are the
//	                     tool's there, and what it makes there is U's on
//	                     the host. Nothing on the host changes.
//	user U               idmapped mounts of host file systems need root:
//	                     each write grant is handed over to the tool's host
//	                     id (U's first subordinate id + 65534) for the run
//	                     and back to U after it, by the init binary's reown
//	                     helper in a user namespace of the run's own maps
//	                     (where U is 0 and the tool 65534); the grant
//	                     folder's mode and ACLs are restored after.
//
// Other privileges need neither: same-as-user is U; elevated is U
// without root, and root's is mapped to the reserved range (the grants
// stay root's; see idMapping).

// grantAccess is the decision for one run; nil when nothing is needed.
type grantAccess struct {
	// paths are the write grants' host sources (isolation.WriteGrants).
	paths []string
	// uids and gids, when set, idmap the write grants' binds (root).
	uids, gids []syscall.SysProcIDMap
	// handOver: the grants are handed from from to to (ids inside the
	// run's user namespace) for the run, and back after it.
	handOver bool
	from, to reown.Owner
	// exe is the init binary the helpers run (Backend.Exe).
	exe string
	// holds is where runs that share a handed-over grant hold it
	// (reown.Hold): the runtime directory's grants folder; "" for none.
	holds string
}

// planGrantAccess decides how the write grants of p reach its tool, given
// the host ids h and the run's user namespace m. It is pure.
func planGrantAccess(h hostIDs, p *isolation.Plan, m *idMapping) (*grantAccess, error) {
	if p.Privilege != privilege.Reduced || p.Spec == nil || p.Spec.Process == nil {
		return nil, nil
	}
	paths := isolation.WriteGrants(p)
	if len(paths) == 0 {
		return nil, nil
	}
	u := p.Spec.Process.User
	owner := isolation.ID{UID: uint32(h.euid), GID: uint32(h.egid)}
	if p.GrantOwner != nil {
		owner = *p.GrantOwner
	}
	if h.euid == 0 {
		if owner.UID == u.UID && owner.GID == u.GID {
			return nil, nil
		}
		return &grantAccess{
			paths: paths,
			uids:  []syscall.SysProcIDMap{{ContainerID: int(owner.UID), HostID: int(u.UID), Size: 1}},
			gids:  []syscall.SysProcIDMap{{ContainerID: int(owner.GID), HostID: int(u.GID), Size: 1}},
		}, nil
	}
	if int(owner.UID) != h.euid || int(owner.GID) != h.egid {
		return nil, fmt.Errorf("check plan: write grants owned by %d:%d, but sandboxed runs as %d:%d without root: %w; "+
			"grant a folder of your own, or run sandboxed as the folder's owner", owner.UID, owner.GID, h.euid, h.egid, ErrBadPlan)
	}
	if m == nil || !m.helper {
		return nil, fmt.Errorf("check plan: a reduced run without root and without its user namespace of subordinate ids: %w; "+
			"give your user subordinate ids with sudo sandboxed setup --user $USER (sandboxed doctor shows what is missing)", ErrBadPlan)
	}
	if _, ok := mappedID(m.uids, 0); !ok {
		return nil, fmt.Errorf("check plan: the run's user namespace does not map its user to 0: %w; "+
			"check your lines in /etc/subuid and /etc/subgid (sudo sandboxed setup --user $USER writes them)", ErrBadPlan)
	}
	return &grantAccess{paths: paths, handOver: true, from: reown.Owner{UID: 0, GID: 0}, to: reown.Owner{UID: int(u.UID), GID: int(u.GID)}}, nil
}

// idmapsWrite reports whether the write grants' binds are idmapped.
func (g *grantAccess) idmapsWrite() bool { return g != nil && len(g.uids) > 0 }

// isWriteGrant reports whether the bind m is one of the write grants g
// idmaps.
func (g *grantAccess) isWriteGrant(m sbinit.Mount) bool {
	if !g.idmapsWrite() || m.ReadOnly || m.Scratch || m.Source == "" {
		return false
	}
	for _, p := range g.paths {
		if p == m.Source {
			return true
		}
	}
	return false
}

// handOver gives the write grants of g to the run's tool for the run
// (reown.HandOver), through the reown helper in a user namespace of m's
// maps; the sandbox's Close hands them back.
func handOver(ctx context.Context, exe string, m *idMapping, g *grantAccess) (*reown.Handed, error) {
	do := func(paths []string, from, to reown.Owner) error {
		// A hand-back runs on a context that may have ended (a Close
		// after the run's own context did).
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), handBackTimeout)
		defer cancel()
		return runReownJob(c, exe, m, reown.Job{Paths: paths, From: from, To: to})
	}
	return reown.HandOver(g.paths, g.from, g.to, g.holds, reown.Via{Do: do, UIDs: idMaps(m.uids), GIDs: idMaps(m.gids)})
}

// idMaps are ms as reown records them.
func idMaps(ms []syscall.SysProcIDMap) []specs.LinuxIDMapping {
	var out []specs.LinuxIDMapping
	for _, m := range ms {
		out = append(out, specs.LinuxIDMapping{ContainerID: uint32(m.ContainerID), HostID: uint32(m.HostID), Size: uint32(m.Size)})
	}
	return out
}

// HandBack hands g, a write grant a killed run left handed over, back
// (gc's reown.ReapHolds): in this process when its ids are the host's,
// else through the init binary's reown helper (this build's) in a user
// namespace of the maps it records, written by newuidmap and newgidmap.
func HandBack(ctx context.Context, g reown.Grant) error {
	if len(g.UIDs) == 0 {
		return g.Back(nil)
	}
	m := &idMapping{helper: true}
	for _, u := range g.UIDs {
		m.uids = append(m.uids, syscall.SysProcIDMap{ContainerID: int(u.ContainerID), HostID: int(u.HostID), Size: int(u.Size)})
	}
	for _, u := range g.GIDs {
		m.gids = append(m.gids, syscall.SysProcIDMap{ContainerID: int(u.ContainerID), HostID: int(u.HostID), Size: int(u.Size)})
	}
	return g.Back(func(paths []string, from, to reown.Owner) error {
		c, cancel := context.WithTimeout(ctx, handBackTimeout)
		defer cancel()
		return runReownJob(c, "", m, reown.Job{Paths: paths, From: from, To: to})
	})
}

// runReownJob runs job in the init binary's reown helper (sbinit.ReownFlag),
// started in a new user namespace of m's maps, written by newuidmap and
// newgidmap as for the run's init.
func runReownJob(ctx context.Context, exe string, m *idMapping, job reown.Job) error {
	js, err := json.Marshal(job)
	if err != nil {
		return err
	}
	h, err := startReownHelper(exe, nil, nil)
	if err != nil {
		return err
	}
	defer h.stop()
	if err := writeIDMaps(h.cmd.Process.Pid, m); err != nil {
		return err
	}
	if _, err := h.stdin.Write(js); err != nil {
		return fmt.Errorf("send the reown helper its job: %w", err)
	}
	h.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = h.cmd.Process.Kill()
		err = errors.Join(ctx.Err(), <-done)
	}
	h.waited = true
	if err != nil {
		return fmt.Errorf("reown helper: %w: %s", err, strings.TrimSpace(h.stderr.String()))
	}
	var res reown.JobResult
	if err := json.Unmarshal(h.stdout.Bytes(), &res); err != nil {
		return fmt.Errorf("reown helper's answer %q: %w", h.stdout.String(), err)
	}
	if res.Error != "" {
		return errors.New(res.Error)
	}
	return nil
}

// reownHelper is a started reown helper.
type reownHelper struct {
	cmd            *exec.Cmd
	stdin          *os.File
	stdout, stderr *bytes.Buffer
	release        func()
	waited         bool
}

// stop kills the helper if it is still running, and releases what its
// start held.
func (h *reownHelper) stop() {
	h.stdin.Close()
	if !h.waited {
		_ = h.cmd.Process.Kill()
		_ = h.cmd.Wait()
	}
	if h.cmd.Process != nil {
		waitedOwn(h.cmd.Process.Pid)
	}
	h.release()
}

// startReownHelper starts the init binary exe ("" for this build's) as
// the reown helper in a new user namespace, holding every capability of
// it. With uids and gids this process writes the maps (root); without,
// the caller does.
func startReownHelper(exe string, uids, gids []syscall.SysProcIDMap) (*reownHelper, error) {
	var cu cleanup.Cleanup
	defer cu.Clean()
	if exe == "" {
		path, rel, err := initbin.Exec(initCacheDir())
		if err != nil {
			return nil, fmt.Errorf("start the reown helper: %w", err)
		}
		cu.Add(rel)
		exe = cmp.Or(path, "/proc/self/exe")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	h := &reownHelper{stdin: w, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	h.cmd = &exec.Cmd{
		Args:   []string{"sandboxed-reown", sbinit.InitArg, sbinit.ReownFlag},
		Env:    []string{"GOMAXPROCS=1"},
		Stdin:  r,
		Stdout: h.stdout,
		Stderr: h.stderr,
		SysProcAttr: &syscall.SysProcAttr{
			Setsid:      true,
			Pdeathsig:   syscall.SIGKILL,
			Cloneflags:  unix.CLONE_NEWUSER,
			AmbientCaps: allCaps(),
		},
	}
	if uids != nil {
		h.cmd.SysProcAttr.UidMappings, h.cmd.SysProcAttr.GidMappings = uids, gids
		h.cmd.SysProcAttr.AmbientCaps = nil
	}
	done, err := setInitPath(h.cmd, exe)
	if err != nil {
		w.Close()
		return nil, err
	}
	cu.Add(done)
	err = startOwn(func() (int, error) {
		if err := h.cmd.Start(); err != nil {
			return 0, err
		}
		return h.cmd.Process.Pid, nil
	})
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("start the reown helper: %w", err)
	}
	h.release = cu.Release()
	return h, nil
}

// writeGrantNS is a user namespace of g's maps, for idmapping the write
// grants' binds: a reown helper is started in it and holds it until its
// descriptor is open, then ends with no job. The caller closes the
// descriptor.
func writeGrantNS(exe string, g *grantAccess) (int, error) {
	h, err := startReownHelper(exe, g.uids, g.gids)
	if err != nil {
		return -1, err
	}
	defer h.stop()
	fd, err := unix.Open("/proc/"+strconv.Itoa(h.cmd.Process.Pid)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open the user namespace of the write grants: %w", err)
	}
	h.stdin.Close()
	if err := h.cmd.Wait(); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("reown helper: %w: %s", err, strings.TrimSpace(h.stderr.String()))
	}
	h.waited = true
	return fd, nil
}

// handBackTimeout bounds a hand-back that runs on a context without a
// deadline (a Close after the run's own context ended).
const handBackTimeout = time.Minute
