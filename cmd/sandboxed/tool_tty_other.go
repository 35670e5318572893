//go:build !linux

package main

import "os"

// stdinTerminal reports whether stdin is a terminal (a character device
// where no termios check is available).
func stdinTerminal() bool { return isTerminal(os.Stdin) }
