package seccomp

import "golang.org/x/sys/unix"

// Supported reports whether the kernel offers seccomp filters.
func Supported() bool {
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_STRICT, 1, 0)
	return e == unix.EINVAL
}
