//go:build !unix

package policy

import "os"

// lockFile is a no-op where flock does not exist: there, appends to the
// audit log rely on O_APPEND alone and PruneAudit may race with them.
func lockFile(f *os.File) error { return nil }

func unlockFile(f *os.File) error { return nil }
