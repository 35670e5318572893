// Package xdg locates sandboxed's per-user directories the way the XDG
// base directory specification says, so every package that keeps files
// agrees on where they are. It creates nothing; CheckOwned says whether a
// directory is one only root and this user can change.
package xdg
