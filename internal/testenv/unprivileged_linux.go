package testenv

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
)

// Nobody is the uid and gid [Unprivileged] runs as when the test runs as
// root.
const Nobody = privilege.NobodyID

// Unprivileged runs f as an ordinary user, so that a test of what a user
// is refused runs on root machines (CI) as well as elsewhere.
//
// When the test does not run as root, f simply runs. As root, f runs on
// the calling goroutine locked to its OS thread, and that thread alone
// takes the real and effective uid and gid [Nobody] and no supplementary
// groups (the saved ids stay 0, to come back): the kernel clears its
// effective capabilities, so permission checks, os.Getuid and os.Geteuid
// see a user. Children f starts with os/exec start from that thread and
// are that user, with no capabilities at all. The thread gets root back when f returns or stops the test
// (t.Fatal), and only then goes back to the scheduler; if that fails, it
// stays locked and ends with the goroutine.
//
// Preconditions: call it from the test's goroutine; what f does on other
// goroutines runs with the process's own credentials. Paths f uses must be
// reachable by Nobody (t.TempDir called first inside f makes a directory
// Nobody owns).
func Unprivileged(t testing.TB, f func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		f()
		return
	}
	runtime.LockOSThread()
	groups, err := unix.Getgroups()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(fmt.Sprintf("testenv.Unprivileged: getgroups: %v", err))
		return
	}
	if err := setThreadCreds(Nobody, Nobody, nil); err != nil {
		if rerr := setThreadCreds(0, 0, groups); rerr == nil {
			runtime.UnlockOSThread()
		}
		t.Fatal(fmt.Sprintf("testenv.Unprivileged: become uid %d: %v", Nobody, err))
		return
	}
	defer func() {
		if err := setThreadCreds(0, 0, groups); err != nil {
			t.Error(fmt.Sprintf("testenv.Unprivileged: back to root: %v (the thread is left locked and ends with the test)", err))
			return
		}
		runtime.UnlockOSThread()
	}()
	f()
}

// setThreadCreds sets the calling thread's real and effective uid and gid
// and its supplementary groups, with raw system calls: the syscall
// package's wrappers change every thread of the process, which is what
// must not happen here. Going to a non-zero uid, it drops the groups and gid while
// the thread still may; going back to 0, it takes the uid first (the saved
// uid is still 0) and then the rest.
func setThreadCreds(uid, gid int, groups []int) error {
	setgroups := func() error {
		gs := make([]uint32, len(groups))
		for i, g := range groups {
			gs[i] = uint32(g)
		}
		var p unsafe.Pointer
		if len(gs) > 0 {
			p = unsafe.Pointer(&gs[0])
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(gs)), uintptr(p), 0); e != 0 {
			return fmt.Errorf("setgroups %v: %w", groups, e)
		}
		return nil
	}
	setgid := func() error {
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(gid), uintptr(gid), ^uintptr(0)); e != 0 {
			return fmt.Errorf("setresgid %d %d -1: %w", gid, gid, e)
		}
		return nil
	}
	setuid := func() error {
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), ^uintptr(0)); e != 0 {
			return fmt.Errorf("setresuid %d %d -1: %w", uid, uid, e)
		}
		return nil
	}
	steps := []func() error{setgroups, setgid, setuid}
	if uid == 0 {
		steps = []func() error{setuid, setgid, setgroups}
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}
