// Command probe prints what the process tier finds on this host, as
// `sandboxed doctor` would show it.
package main

import (
	"context"
	"encoding/json"
	"os"

	"github.com/sandboxed-dev/sandboxed/isolation/process"
)

func main() {
	e := json.NewEncoder(os.Stdout)
	e.SetIndent("", "  ")
	e.Encode(process.Probe(context.Background()).Checks())
}
