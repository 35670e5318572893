//go:build !linux

package seccomp

// Supported reports whether the kernel offers seccomp filters.
func Supported() bool { return false }
