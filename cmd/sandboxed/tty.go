package main

import (
	"os"

	"golang.org/x/term"
)

// isTerminal reports whether f is a terminal: a termios ioctl answers on
// it. A character device is not enough: /dev/null is one, and a prompt
// read from it would only ever be "no".
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// stdinTerminal reports whether stdin is a terminal.
func stdinTerminal() bool { return isTerminal(os.Stdin) }
