// Package xdg locates sandboxed's per-user directories the way the XDG
// base directory specification says, so every package that keeps files
// agrees on where they are. It only computes paths: it creates nothing
// and decides nothing about whether a directory is safe to use.
package xdg
