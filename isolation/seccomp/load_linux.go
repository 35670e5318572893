package seccomp

import (
	"fmt"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Supported reports whether the kernel offers seccomp filters.
func Supported() bool {
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_STRICT, 1, 0)
	return e == unix.EINVAL
}

// Load installs prog on every thread of the calling process
// (SECCOMP_FILTER_FLAG_TSYNC). Preconditions: no_new_privs is set on the
// calling thread, or it holds CAP_SYS_ADMIN.
func Load(prog []bpf.RawInstruction) error {
	if len(prog) == 0 {
		return fmt.Errorf("load seccomp filter: empty program: %w", ErrInvalid)
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		if e == unix.ENOSYS || e == unix.EINVAL {
			return fmt.Errorf("load seccomp filter: %w: %w", e, ErrUnsupported)
		}
		return fmt.Errorf("load seccomp filter: %w", e)
	}
	if r != 0 {
		return fmt.Errorf("load seccomp filter: thread %d could not be synchronised", r)
	}
	return nil
}
