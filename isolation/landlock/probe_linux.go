package landlock

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
)

// ProcessTierBlocked says why the process tier cannot run on this host —
// namespaces cannot be made (a container with Docker's default seccomp
// profile and capabilities, user namespaces disabled), or no cgroup can be
// written (a read-only cgroupfs, no delegated cgroup) — and "" when it
// can. It tries: it clones a child into new namespaces, as the process
// tier does, and kills it before it runs anything. The answer is kept for
// the life of this process.
func ProcessTierBlocked() string { return blocked() }

var blocked = sync.OnceValue(func() string {
	flags := uintptr(unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWIPC |
		unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUSER)
	uid, gid := os.Geteuid(), os.Getegid()
	// A path that does not exist: the clone is what is tried, and a
	// child that made it fails its exec at once.
	cmd := &exec.Cmd{Path: "/nonexistent/sandboxed-probe", Args: []string{"sandboxed-probe"},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 flags,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
			GidMappingsEnableSetgroups: false,
		}}
	err := cmd.Start()
	if err == nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	} else if !errors.Is(err, unix.ENOENT) {
		return fmt.Sprintf("namespaces cannot be made here: %v", errors.Unwrap(err))
	}
	if process.UsableCgroup(cgroup.Resources{MemoryBytes: 1}) == nil {
		return "no cgroup can be written here (a read-only cgroupfs, or none delegated to this user)"
	}
	return ""
})
