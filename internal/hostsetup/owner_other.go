//go:build !linux

package hostsetup

import "io/fs"

// fileOwner reports no owner: setup runs on Linux only.
func fileOwner(fs.FileInfo) (uid, gid int, ok bool) { return -1, -1, false }
