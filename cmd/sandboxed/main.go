// Command sandboxed runs the shell-command tools LLM agents call inside a
// sandbox chosen from each tool's security fields and the operator's policy.
package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

// version is set by the linker (-X main.version=...).
var version = "dev"

func newApp() *cli.App {
	return &cli.App{
		Name:    "sandboxed",
		Usage:   "run agent tools in a sandbox",
		Version: version,
	}
}

func main() {
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxed:", err)
		os.Exit(1)
	}
}
