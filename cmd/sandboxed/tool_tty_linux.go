package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// stdinTerminal reports whether stdin is a terminal. A character device
// is not enough: /dev/null is one, and a confirmation read from it would
// only ever be "no".
func stdinTerminal() bool {
	_, err := unix.IoctlGetTermios(int(os.Stdin.Fd()), unix.TCGETS)
	return err == nil
}
