//go:build !unix

package egress

import "errors"

// lockFile is not supported here: quotas across runs fail closed.
func lockFile(string) (func(), error) {
	return nil, errors.ErrUnsupported
}
