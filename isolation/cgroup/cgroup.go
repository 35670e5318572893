package cgroup

import (
	"context"
	"strconv"
	"syscall"
)

// Parent is the cgroup directory (under each hierarchy root) that holds
// one child per run.
const Parent = "sandboxed"

// UserPrefix starts the name of a directory under Parent that is not a
// run's cgroup but a subtree delegated to one unprivileged user
// (user-UID, made by `sandboxed setup` on cgroup v1). Run ids never start
// with it, so List and GC leave those subtrees alone.
const UserPrefix = "user-"

// UserDir is the cgroup v1 subtree, relative to each hierarchy's
// mountpoint, that `sandboxed setup --user` delegates to uid
// ("/sandboxed/user-UID"): owned by uid with its cgroup.procs and tasks,
// under a root-owned Parent.
func UserDir(uid int) string {
	return "/" + Parent + "/" + UserPrefix + strconv.Itoa(uid)
}

// Resources are the limits of one run's cgroup. Zero Memory or Pids means
// no limit of that kind; a zero CPUQuota no cpu limit.
type Resources struct {
	MemoryBytes int64
	Pids        int64
	// CPUQuota is the microseconds of CPU time the run may use in each
	// CPUPeriod (cpu.max on v2, cpu.cfs_quota_us and cpu.cfs_period_us on
	// v1), as the spec says them.
	CPUQuota  int64
	CPUPeriod uint64
}

// Stats are what the cgroup measured.
type Stats struct {
	PeakMemoryBytes int64
	OOMKilled       bool
	PidsLimitHit    bool
}

// Group is one run's cgroup. Methods are safe for concurrent use.
type Group interface {
	// Version is 1 or 2.
	Version() int
	// Path is the group's path relative to the hierarchy roots.
	Path() string
	// AddProc moves pid (a whole thread group) into the group.
	AddProc(pid int) error
	// Procs lists the (host) pids in the group.
	Procs() ([]int, error)
	// Signal sends sig to every process in the group.
	Signal(sig syscall.Signal) error
	// Kill kills every process of the group and returns when it is empty.
	Kill(ctx context.Context) error
	// Stats reads peak memory and whether the OOM killer or the pids limit
	// struck.
	Stats() (Stats, error)
	// Delete removes the (empty) group. Deleting a missing group is not an
	// error.
	Delete() error
	// Update sets the group's limits to r, as New would have set them (a
	// warm sandbox's group gets its run's limits when the run claims it).
	// A zero field leaves that limit as it is.
	Update(r Resources) error
}

// SelfMover is implemented by groups (cgroup v1) into which the calling
// thread can move itself, so that a process it forks is born inside. A
// thread moving itself skips the kernel's global threadgroup lock, whose
// RCU grace period makes moving another process slow (milliseconds).
type SelfMover interface {
	// EnterSelf moves the calling thread into the group and returns leave,
	// which moves it back where it was. Preconditions: the calling
	// goroutine is locked to its thread (runtime.LockOSThread) until
	// leave returned. If leave fails, or EnterSelf fails with stuck set,
	// the thread must not be unlocked: exiting the goroutine while still
	// locked makes the runtime retire the thread.
	EnterSelf() (leave func() error, stuck bool, err error)
	// MovePaths returns the tasks files EnterSelf and its leave write to
	// (see MoveSelf), for a thread of another process to do the move.
	MovePaths() (enter, leave []string, err error)
}
