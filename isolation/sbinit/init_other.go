//go:build !linux

package sbinit

import (
	"fmt"
	"os"
)

// IsInit reports whether this process was started as a sandbox init.
func IsInit() bool {
	return len(os.Args) > 1 && os.Args[1] == InitArg
}

// Main fails: the init needs Linux.
func Main() {
	fmt.Fprintln(os.Stderr, "sandboxed init: needs Linux")
	os.Exit(1)
}

// MarkInheritedCloseOnExec does nothing outside Linux.
func MarkInheritedCloseOnExec() {}
