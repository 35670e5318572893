//go:build !linux

package reown

import "errors"

// Reown is Linux's alone (see reown_linux.go).
func Reown(root string, from, to Owner) (Reowned, error) {
	return Reowned{}, errors.ErrUnsupported
}

// SaveFolder is Linux's alone (see folder_linux.go).
func SaveFolder(path string) (Folder, error) { return Folder{}, errors.ErrUnsupported }

// Restore is Linux's alone (see folder_linux.go).
func (f Folder) Restore() error { return errors.ErrUnsupported }
