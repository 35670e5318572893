//go:build !embedinit

package initbin

// image is empty: this build runs its own executable as the init.
var (
	image []byte
	sum   string
)
