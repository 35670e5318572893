//go:build embedinit

package initbin

import _ "embed"

// image is cmd/sandboxed-init and sum its SHA-256 in hex, both written by
// `make build` into this directory.
var (
	//go:embed sandboxed-init
	image []byte
	//go:embed sandboxed-init.sha256
	sum string
)
