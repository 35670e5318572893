package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/policy"
)

// Planning a run has two halves. Gathering reads what the plan depends on
// from the host — the working and home directories and their symlinks,
// the invoking user, the environment, where the run's host directory will
// be, each grant's real path (ResolveMounts), the sockets under grants
// (CheckNoSockets) and the paths the policy's masks match (gatherMasks) —
// and changes nothing. buildPlan then turns the bound tool, the policy's
// decision and those facts into a Plan without a system call, so the
// same facts always give the same plan (plan_test.go).
//
// Nothing is created while planning, so a dry run and a real run print
// the same plan. What a run creates on the host is created when it
// starts (Controller.run): the run's host directory (Plan.HostDir, whose
// path the plan fixes) and the missing directories of write grants
// (CreateWriteDirs, checked against the paths the plan resolved). The
// controller's own state and runtime directories are made before
// planning (makeOwnDirs), so that they resolve and can be denied.

// HostFacts are what planning knows of the host, gathered once per run
// (GatherFacts) before anything is decided.
type HostFacts struct {
	// Cwd is the caller's working directory (absolute); relative paths of
	// the tool resolve against it. CwdResolved is it with its symlinks
	// resolved ("" when that failed).
	Cwd, CwdResolved string
	// Home is the invoking user's home directory (InvokingHome);
	// HomeResolved is it resolved, "" when it has no symlink.
	Home, HomeResolved string
	// UID and GID of the invoking user: same-as-user runs as them, and the
	// missing directories of write grants are created for them.
	UID, GID uint32
	// Root: sandboxed runs as root (effective uid 0). Self is this
	// process's own uid and gid: the landlock tier, which cannot change
	// the uid without root, runs the tool as them.
	Root bool
	Self isolation.ID
	// Reserved, as root, is the id reserved for sandboxed
	// (process.ReservedID): root's same-as-user tools run as it in the
	// container tier, where no user namespace maps them off host uid 0.
	// Nil when sandboxed is not root or this host reserves none (the
	// container tier then refuses such a run, saying why).
	Reserved *isolation.ID
	// Cgroup, for a run started outside namespaces (the landlock and
	// none tiers), is whether a cgroup sandboxed may use here holds its
	// limits (process.UsableCgroup, the test the backend makes); without
	// one rlimits approximate them. Gathered once the policy has decided
	// the tier (gatherCgroup).
	Cgroup bool
	// Env is the host environment, for env: grants and
	// environment.inherit.
	Env []string
	// RuntimeDir holds the host directories of runs (RuntimeDir); the
	// run's own is RuntimeDir/RUN_ID (HostDir).
	RuntimeDir string
	// OwnDirs are sandboxed's own directories, denied to every grant
	// (ProtectOwnDirs).
	OwnDirs []string

	// Masks are what each of the policy's masks matches under the grant it
	// protects, and Files what planning needs to know of those paths and
	// of the directories between them and their grant. They are gathered
	// once the policy has decided (gatherMasks): the masks come from the
	// decision.
	Masks map[policy.PathMask]MaskMatch
	Files map[string]FileFact

	// TempDir is the host's directory for temporary files (os.TempDir):
	// a landlock-tier run's scratch directory is made there.
	TempDir string

	// TrustBundle is the host's system trust bundle at a path the process
	// tier can bind the run's bundle over (a regular file, no symlink on
	// the way): where the sandbox's TLS stacks look. "" when the host has
	// none.
	TrustBundle string
}

// GatherFacts reads the host facts of a run: cwd "" means the process's
// working directory, runtimeDir "" RuntimeDir(), ownDirs nil those of this
// process's environment. It changes nothing on the host.
func GatherFacts(cwd, runtimeDir string, ownDirs []string) (*HostFacts, error) {
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
		cwd = wd
	}
	if runtimeDir == "" {
		runtimeDir = RuntimeDir()
	}
	if !filepath.IsAbs(runtimeDir) {
		runtimeDir = filepath.Join(cwd, runtimeDir)
	}
	if ownDirs == nil {
		ownDirs = OwnDirs(StateDir(), runtimeDir)
	}
	f := &HostFacts{Cwd: cwd, Home: InvokingHome(), Env: os.Environ(), RuntimeDir: runtimeDir, OwnDirs: ownDirs}
	f.UID, f.GID = invokingUser()
	f.Self = isolation.ID{UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
	if f.Root = os.Geteuid() == 0; f.Root {
		if id, err := process.ReservedID(); err == nil {
			f.Reserved = &isolation.ID{UID: uint32(id), GID: uint32(id)}
		}
	}
	if r, err := filepath.EvalSymlinks(cwd); err == nil {
		f.CwdResolved = r
	}
	if r, err := filepath.EvalSymlinks(f.Home); err == nil && r != f.Home {
		f.HomeResolved = r
	}
	f.TempDir = os.TempDir()
	f.TrustBundle = hostTrustBundle()
	return f, nil
}

// gatherCgroup sets f.Cgroup for a run in tier t with limits l: whether
// the cgroup hierarchy here can hold them for a run started outside
// namespaces. Other tiers have a cgroup or engine of their own.
func gatherCgroup(f *HostFacts, t isolation.Tier, kubernetes bool, l isolation.Limits) {
	if kubernetes || (t != isolation.TierLandlock && t != isolation.TierNone) {
		return
	}
	f.Cgroup = process.CgroupHolds(l)
}

// HostDir is the private host directory of run runID under runtimeDir:
// its sockets and bookkeeping, labelled by the run id so gc finds it.
func HostDir(runtimeDir, runID string) string {
	return filepath.Join(runtimeDir, runID)
}

// lookupEnv reads a variable of the host environment, the first of its
// name as os.Getenv does.
func (f *HostFacts) lookupEnv(name string) (string, bool) {
	for _, kv := range f.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}
