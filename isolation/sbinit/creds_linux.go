package sbinit

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// lastCap is the kernel's highest capability, read once: the skeleton
// and the privilege drop both walk the bounding set.
var lastCap = sync.OnceValue(func() uintptr {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 && n < 64 {
			return uintptr(n)
		}
	}
	return 40
})

// thisThread runs a per-thread syscall on the calling (locked) thread,
// from which every command is forked.
func thisThread(trap, a1, a2, a3 uintptr) error {
	if _, _, e := unix.RawSyscall(trap, a1, a2, a3); e != 0 {
		return e
	}
	return nil
}

// allThreads runs a per-thread syscall on every thread when the runtime
// allows it (no cgo), and at least on the calling (locked) thread. Each
// call stops the world, so it is kept for what matters to the init's
// other threads: their capability sets.
func allThreads(trap, a1, a2, a3 uintptr) error {
	if _, _, e := syscall.AllThreadsSyscall(trap, a1, a2, a3); e == 0 {
		return nil
	} else if e != syscall.ENOTSUP {
		return e
	}
	if _, _, e := unix.RawSyscall(trap, a1, a2, a3); e != 0 {
		return e
	}
	return nil
}

// dropPrivileges switches the init, and so every command it forks, to the
// setup's credentials. Order matters: the bounding set needs CAP_SETPCAP
// (gone after setuid to non-root); the seccomp filter comes last because
// it forbids what the earlier steps use. nnp sets no_new_privs whatever
// the setup says (a Landlock ruleset is in force).
func dropPrivileges(s *Setup, keepGroups, nnp bool) error {
	var prog []bpf.RawInstruction
	if len(s.Seccomp) > 0 {
		var err error
		if prog, err = decodeBPF(s.Seccomp); err != nil {
			return err
		}
	}
	for _, rl := range s.Rlimits {
		lim := unix.Rlimit{Cur: rl.Soft, Max: rl.Hard}
		if err := unix.Setrlimit(rl.Resource, &lim); err != nil {
			return fmt.Errorf("set rlimit %d: %w", rl.Resource, err)
		}
	}
	if err := cutBounding(s.Bounding); err != nil {
		return err
	}
	// Each of these stops every thread of the init (the change applies to
	// all of them), so changes that would be no-ops are skipped.
	gids := make([]int, 0, len(s.Groups))
	for _, g := range s.Groups {
		gids = append(gids, int(g))
	}
	if cur, err := syscall.Getgroups(); !keepGroups && (err != nil || !sameInts(cur, gids)) {
		if err := syscall.Setgroups(gids); err != nil {
			return fmt.Errorf("set supplementary groups: %w", err)
		}
	}
	if r, e, sv := getresgid(); r != int(s.GID) || e != int(s.GID) || sv != int(s.GID) {
		if err := syscall.Setresgid(int(s.GID), int(s.GID), int(s.GID)); err != nil {
			return fmt.Errorf("set gid %d: %w", s.GID, err)
		}
	}
	// Setting a non-zero uid clears the permitted and effective sets;
	// with uid 0 (root, or root of a user namespace) the capset below sets
	// them exactly.
	if r, e, sv := getresuid(); r != int(s.UID) || e != int(s.UID) || sv != int(s.UID) {
		if err := syscall.Setresuid(int(s.UID), int(s.UID), int(s.UID)); err != nil {
			return fmt.Errorf("set uid %d: %w", s.UID, err)
		}
	}
	// Like the ids, the capabilities are set only where they change: the
	// setresuid to an id other than 0 has already cleared the effective
	// and permitted sets, often all there was to do.
	if eff, perm, inh, err := capget(); err != nil || eff != s.Effective || perm != s.Permitted || inh != s.Inheritable {
		if err := capset(s.Effective, s.Permitted, s.Inheritable); err != nil {
			return err
		}
	}
	if err := thisThread(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	if s.NoNewPrivs || prog != nil || nnp {
		// Set here; the seccomp filter's TSYNC sets it on every thread,
		// or, without one, it is set on each.
		set := allThreads
		if prog != nil {
			set = thisThread
		}
		if err := set(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); err != nil {
			return fmt.Errorf("set no_new_privs: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("clear dumpable: %w", err)
	}
	if prog != nil {
		if err := loadSeccomp(prog); err != nil {
			return err
		}
	}
	return nil
}

// cutBounding drops from the calling thread's bounding set every
// capability not in keep that it still has (a skeleton may have cut it
// already). The bounding set only matters to the thread that forks
// commands; the other threads lose every capability when the privileges
// are dropped.
func cutBounding(keep uint64) error {
	for c, last := uintptr(0), lastCap(); c <= last; c++ {
		if keep&(1<<c) != 0 {
			continue
		}
		if in, _, e := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_CAPBSET_READ, c, 0); e == 0 && in == 0 {
			continue
		}
		if err := thisThread(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	return nil
}

// become switches the init to id (inside its user namespace) and keeps
// its capabilities there: it started as an id the namespace does not map,
// which no rule of the kernel counts as root, so none are cleared.
func become(id *ID) error {
	if err := syscall.Setresgid(int(id.GID), int(id.GID), int(id.GID)); err != nil {
		return fmt.Errorf("become gid %d: %w", id.GID, err)
	}
	if err := syscall.Setresuid(int(id.UID), int(id.UID), int(id.UID)); err != nil {
		return fmt.Errorf("become uid %d: %w", id.UID, err)
	}
	return nil
}

// capget reads the calling thread's capability sets, which every thread
// of the init shares (each change is made on all of them).
func capget() (eff, perm, inh uint64, err error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return 0, 0, 0, fmt.Errorf("read capabilities: %w", err)
	}
	eff = uint64(data[0].Effective) | uint64(data[1].Effective)<<32
	perm = uint64(data[0].Permitted) | uint64(data[1].Permitted)<<32
	inh = uint64(data[0].Inheritable) | uint64(data[1].Inheritable)<<32
	return eff, perm, inh, nil
}

func capset(eff, perm, inh uint64) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{
		{Effective: uint32(eff), Permitted: uint32(perm), Inheritable: uint32(inh)},
		{Effective: uint32(eff >> 32), Permitted: uint32(perm >> 32), Inheritable: uint32(inh >> 32)},
	}
	if err := allThreads(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); err != nil {
		return fmt.Errorf("set capabilities: %w", err)
	}
	return nil
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func getresuid() (r, e, s int) {
	var ru, eu, su uint32
	unix.RawSyscall(unix.SYS_GETRESUID, uintptr(unsafe.Pointer(&ru)), uintptr(unsafe.Pointer(&eu)), uintptr(unsafe.Pointer(&su)))
	return int(ru), int(eu), int(su)
}

func getresgid() (r, e, s int) {
	var rg, eg, sg uint32
	unix.RawSyscall(unix.SYS_GETRESGID, uintptr(unsafe.Pointer(&rg)), uintptr(unsafe.Pointer(&eg)), uintptr(unsafe.Pointer(&sg)))
	return int(rg), int(eg), int(sg)
}

// loadFilter sets no_new_privs and installs the encoded filter b on every
// thread: the init and every command it forks run under it.
func loadFilter(b []byte) error {
	prog, err := decodeBPF(b)
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	return loadSeccomp(prog)
}

// loadSeccomp installs prog on every thread of the calling process
// (SECCOMP_FILTER_FLAG_TSYNC). Preconditions: no_new_privs is set on the
// calling thread, or it holds CAP_SYS_ADMIN.
func loadSeccomp(prog []bpf.RawInstruction) error {
	return seccompFilter(prog, unix.SECCOMP_FILTER_FLAG_TSYNC)
}

// loadSeccompThread installs prog on the calling thread only (see
// confineSelf). Preconditions: no_new_privs is set on this thread.
func loadSeccompThread(prog []bpf.RawInstruction) error {
	return seccompFilter(prog, 0)
}

func seccompFilter(prog []bpf.RawInstruction, flags uintptr) error {
	if len(prog) == 0 {
		return fmt.Errorf("load seccomp filter: empty program: %w", ErrSetup)
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		if e == unix.ENOSYS || e == unix.EINVAL {
			return fmt.Errorf("load seccomp filter: %w (the kernel has no seccomp filters): %w", e, ErrSetup)
		}
		return fmt.Errorf("load seccomp filter: %w", e)
	}
	if r != 0 {
		return fmt.Errorf("load seccomp filter: thread %d could not be synchronised", r)
	}
	return nil
}

// loadWatch installs a user-notification filter prog (Config.Watch,
// Connect.Filter) on the calling thread only, with a listener, and
// returns the listener. The thread is the one that forks every command,
// so every command inherits it; the init's other threads never make a
// watched call that would wait for an answer. Preconditions:
// no_new_privs is set.
func loadWatch(enc []byte) (int, error) {
	prog, err := decodeBPF(enc)
	if err != nil {
		return -1, err
	}
	if len(prog) == 0 {
		return -1, fmt.Errorf("load user-notification filter: empty program: %w", ErrSetup)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: (*unix.SockFilter)(unsafe.Pointer(&prog[0]))}
	r, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return -1, fmt.Errorf("load user-notification filter (seccomp user notification needs Linux 5.5): %w: %w", e, ErrSetup)
	}
	unix.CloseOnExec(int(r))
	return int(r), nil
}
