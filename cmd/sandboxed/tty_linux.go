package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether f is a terminal. A character device is not
// enough: /dev/null is one, and a prompt read from it would only ever be
// "no".
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// stdinTerminal reports whether stdin is a terminal.
func stdinTerminal() bool { return isTerminal(os.Stdin) }
