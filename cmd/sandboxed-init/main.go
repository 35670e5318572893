// Command sandboxed-init is the init of every sandbox: PID 1 of the
// process tier's namespaces and of the container tier's containers. It is
// built on its own, small, so that a sandbox does not pay the whole CLI's
// start-up (every package it links initialises again in each init), and
// `make build` embeds it in the sandboxed binary (package initbin), which
// keeps it in the user's cache directory (or, when that is not safe, in a
// sealed memory file). A sandboxed built without it runs its own binary
// as the init instead.
//
// It is not meant to be run by hand.
package main

import (
	"fmt"
	"os"

	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
)

func main() {
	if sbinit.IsInit() {
		sbinit.Main()
	}
	fmt.Fprintln(os.Stderr, "sandboxed-init: the init of sandboxed's sandboxes; sandboxed starts it, it is not run by hand")
	os.Exit(2)
}
