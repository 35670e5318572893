package tool

import (
	"io/fs"
	"syscall"
)

// identify is fi's identity for the name index; false when it has none.
func identify(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{
		Dev: st.Dev, Ino: st.Ino, Size: st.Size,
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(),
	}, true
}
