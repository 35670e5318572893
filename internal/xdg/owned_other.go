//go:build !linux

package xdg

import "errors"

// CheckOwned cannot tell here who may change dir: nothing is trusted.
func CheckOwned(dir string) error { return errors.New("ownership checks need Linux") }

// ExistingPrefix is dir.
func ExistingPrefix(dir string) string { return dir }
