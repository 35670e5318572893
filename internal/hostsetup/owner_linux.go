package hostsetup

import (
	"io/fs"
	"syscall"
)

// fileOwner returns the uid and gid that own the file fi describes.
func fileOwner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, -1, false
	}
	return int(st.Uid), int(st.Gid), true
}
