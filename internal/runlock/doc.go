// Package runlock marks a run live by a lock its controller holds on a file
// in the run's host directory, and lets gc test that lock.
//
// The lock is an open file description lock (Linux F_OFD_SETLK; flock(2)
// elsewhere) on a descriptor opened close-on-exec: it belongs to the
// controller's open file, not to a process, is never inherited by a tool
// or an init, and the kernel drops it when the controller dies, however it
// dies. Locks live on the inode, so a gc in another network namespace, PID
// namespace or container that sees the same file sees the same answer —
// unlike an abstract Unix socket, which exists in one network namespace
// only.
//
// A run's directory appears with its lock already held (Create makes it
// under a hidden name and renames it), so whoever sees the directory and
// finds the lock free knows its controller is gone. What cannot be tested —
// no directory, no lock file, a file this user may not open, a kernel
// without the lock call — is Unknown, and gc leaves such a run alone.
//
// The package makes no decision about what to reap; it only answers.
package runlock
