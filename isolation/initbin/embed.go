//go:build embedinit

package initbin

import _ "embed"

// image is cmd/sandboxed-init, built by `make build` into this directory.
//
//go:embed sandboxed-init
var image []byte
