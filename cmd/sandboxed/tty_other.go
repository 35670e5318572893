//go:build !linux

package main

import "os"

// isTerminal reports whether f is a terminal; without Linux's termios
// ioctl, a character device is taken for one.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// stdinTerminal reports whether stdin is a terminal.
func stdinTerminal() bool { return isTerminal(os.Stdin) }
