package seccomp

import "errors"

var (
	// ErrUnsupported: the profile uses something this compiler or kernel
	// cannot enforce.
	ErrUnsupported = errors.New("seccomp: unsupported")
	// ErrInvalid: the profile is malformed.
	ErrInvalid = errors.New("seccomp: invalid profile")
)
