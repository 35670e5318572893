package seccomp

import (
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// WatchArg says where a watched syscall takes the paths it touches.
type WatchArg struct {
	// Dirfd is the index of the directory descriptor a relative Path is
	// resolved against; -1 when the syscall takes none (relative to the
	// working directory).
	Dirfd int
	// Path is the index of the path argument.
	Path int
	// Flags is the index of the open flags; -1 when the syscall has none.
	Flags int
	// Op is what the syscall does to the path: "read" (then Flags
	// decides), "write" or "exec".
	Op string
	// Dir: the path is a directory the syscall makes or removes.
	Dir bool
}

// Watched are the syscalls an observed run reports (permissions learn),
// by name, with where their paths are. A syscall with two paths (rename,
// link) is listed by the path it writes. openat2 is absent: every
// profile already answers it ENOSYS, so libc falls back to openat.
var Watched = map[string][]WatchArg{
	"open":      {{Dirfd: -1, Path: 0, Flags: 1, Op: "read"}},
	"openat":    {{Dirfd: 0, Path: 1, Flags: 2, Op: "read"}},
	"creat":     {{Dirfd: -1, Path: 0, Flags: -1, Op: "write"}},
	"execve":    {{Dirfd: -1, Path: 0, Flags: -1, Op: "exec"}},
	"execveat":  {{Dirfd: 0, Path: 1, Flags: -1, Op: "exec"}},
	"mkdir":     {{Dirfd: -1, Path: 0, Flags: -1, Op: "write"}},
	"mkdirat":   {{Dirfd: 0, Path: 1, Flags: -1, Op: "write"}},
	"mknod":     {{Dirfd: -1, Path: 0, Flags: -1, Op: "write"}},
	"mknodat":   {{Dirfd: 0, Path: 1, Flags: -1, Op: "write"}},
	"rmdir":     {{Dirfd: -1, Path: 0, Flags: -1, Op: "write"}},
	"unlink":    {{Dirfd: -1, Path: 0, Flags: -1, Op: "write"}},
	"unlinkat":  {{Dirfd: 0, Path: 1, Flags: -1, Op: "write"}},
	"truncate":  {{Dirfd: -1, Path: 0, Flags: -1, Op: "write"}},
	"symlink":   {{Dirfd: -1, Path: 1, Flags: -1, Op: "write"}},
	"symlinkat": {{Dirfd: 1, Path: 2, Flags: -1, Op: "write"}},
	"link":      {{Dirfd: -1, Path: 1, Flags: -1, Op: "write"}},
	"linkat":    {{Dirfd: 2, Path: 3, Flags: -1, Op: "write"}},
	"rename":    {{Dirfd: -1, Path: 0, Flags: -1, Op: "write"}, {Dirfd: -1, Path: 1, Flags: -1, Op: "write"}},
	"renameat":  {{Dirfd: 0, Path: 1, Flags: -1, Op: "write"}, {Dirfd: 2, Path: 3, Flags: -1, Op: "write"}},
	"renameat2": {{Dirfd: 0, Path: 1, Flags: -1, Op: "write"}, {Dirfd: 2, Path: 3, Flags: -1, Op: "write"}},
}

// WatchProfile is the profile of the watch filter: every syscall of
// Watched goes to the user-notification listener,
// everything else is allowed. It only observes: the run's own profile
// still decides what is refused (and a refusal there wins over a
// notification here).
func WatchProfile() *specs.LinuxSeccomp {
	var names []string
	for name := range Watched {
		names = append(names, name)
	}
	slices.Sort(names)
	return &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Syscalls:      []specs.LinuxSyscall{{Names: names, Action: specs.ActNotify}},
	}
}

// ConnectProfile is the profile of the landlock tier's supervised connect
// (sbinit.Connect): connect() goes to the user-notification listener,
// which answers it; everything else is allowed (the run's own profile
// decides it, and a refusal there wins over a notification here).
func ConnectProfile() *specs.LinuxSeccomp {
	return &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Syscalls:      []specs.LinuxSyscall{{Names: []string{"connect"}, Action: specs.ActNotify}},
	}
}
