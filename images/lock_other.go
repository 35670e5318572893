//go:build !linux

package images

// lockCache does nothing where builds cannot run (debootstrap needs Linux).
func lockCache(string) (func(), error) { return func() {}, nil }
