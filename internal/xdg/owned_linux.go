package xdg

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// CheckOwned accepts dir when it and every directory above it belong to
// root or this user, and no one else can write them (a sticky directory
// such as /tmp may be an ancestor: no one else can rename what is in it).
// What sandboxed keeps in its cache is trusted only there: under sudo
// with the user's HOME, the cache would be the user's to prepare.
func CheckOwned(dir string) error {
	uid := uint32(os.Geteuid())
	for p, first := dir, true; ; p, first = filepath.Dir(p), false {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		switch {
		case !fi.IsDir():
			return fmt.Errorf("%s is not a directory", p)
		case st.Uid != 0 && st.Uid != uid:
			return fmt.Errorf("%s belongs to uid %d", p, st.Uid)
		case fi.Mode().Perm()&0o022 != 0 && (first || fi.Mode()&os.ModeSticky == 0):
			return fmt.Errorf("%s is writable by others (mode %v)", p, fi.Mode())
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// ExistingPrefix is the longest prefix of dir that exists, with its
// symlinks resolved: what CheckOwned checks before dir is created.
func ExistingPrefix(dir string) string {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return real
		}
		if p == filepath.Dir(p) {
			return p
		}
	}
}
