// Command init is a static stand-in for the sandboxed binary in the
// real-engine tests: it only runs the sandbox init.
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
	fmt.Fprintln(os.Stderr, "usage: init", sbinit.InitArg, "--connect=SOCKET")
	os.Exit(2)
}
