//go:build !linux

package changeset

// Scan needs Linux (descriptor walks).
func Scan(root string, lim Limits, prev Tree, keep KeepFunc) (Tree, error) {
	return nil, ErrUnsupported
}

// Undo needs Linux (openat2).
func Undo(root string, cs []Change, blobs string) ([]string, error) { return nil, ErrUnsupported }

// Apply needs Linux (openat2).
func Apply(root, work string, cs []Change, keep KeepFunc) ([]string, error) {
	return nil, ErrUnsupported
}

// Copy needs Linux.
func Copy(src, dst string, lim Limits) (Tree, error) { return nil, ErrUnsupported }

// Keeper needs Linux.
func Keeper(dir string) KeepFunc {
	return func(string, int) (string, int64, error) { return "", 0, ErrUnsupported }
}

// Pending needs Linux.
type Pending struct{}

// PrepareUndo needs Linux (openat2).
func PrepareUndo(root string, cs []Change, blobs string, resume bool) (*Pending, error) {
	return nil, ErrUnsupported
}

// PrepareApply needs Linux (openat2).
func PrepareApply(root, work string, cs []Change, keep KeepFunc) (*Pending, error) {
	return nil, ErrUnsupported
}

// Do needs Linux.
func (p *Pending) Do() ([]string, error) { return nil, ErrUnsupported }

// Close needs Linux.
func (p *Pending) Close() {}

// ReadFile needs Linux (openat2).
func ReadFile(root, rel string, max int64) ([]byte, error) { return nil, ErrUnsupported }

// Sync needs Linux (syncfs); elsewhere nothing is kept to sync.
func Sync(dir string) error { return nil }
