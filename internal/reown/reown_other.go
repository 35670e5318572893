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

// Shared is Linux's alone (see shared_linux.go).
type Shared struct{ keep bool }

func holdSetup(dir, path string, alone bool) (*Shared, error) { return nil, errors.ErrUnsupported }
func (s *Shared) endSetup()                                   {}
func (s *Shared) alone() bool                                 { return false }
func (s *Shared) record() (*Grant, error)                     { return nil, errors.ErrUnsupported }
func (s *Shared) setRecord(g *Grant) error                    { return errors.ErrUnsupported }

// Hold is Linux's alone (see shared_linux.go).
func Hold(dir, path string) (*Shared, error) { return nil, errors.ErrUnsupported }

// HoldAlone needs Linux.
func HoldAlone(dir, path string, back func(Grant) error) (*Shared, error) {
	return nil, errors.ErrUnsupported
}

// Last is Linux's alone.
func (s *Shared) Last() bool { return false }

// Release is Linux's alone.
func (s *Shared) Release() {}

// ReapHolds has nothing to reap off Linux.
func ReapHolds(dir string, back func(Grant) error) ([]string, error) { return nil, nil }

// Back is Linux's alone (see grant_linux.go).
func (g Grant) Back(do Func) error { return errors.ErrUnsupported }

// Recorded is Linux's alone.
func Recorded(dir, path string) *Grant { return nil }
