// Package changeset records what a run changed under its write grants and
// puts it back: the engine of `sandboxed undo RUN_ID` and of `sandboxed
// run --review`.
//
// It is host-side and knows nothing of tiers: a grant is a directory on
// the host, read before the run (Scan, with pre-images of its files kept
// in a Store, reflinked where the filesystem can, else copied) and after
// it; Diff says what was created, modified and deleted. The process,
// container, landlock and none tiers all write into a host directory, so
// the same record undoes a run of any of them.
//
//	before the run:  Scan(grant) ──▶ Tree + blobs (pre-images, 0600, in STATE/changes/RUN_ID)
//	after the run:   Scan(grant) ──▶ Tree ──Diff──▶ []Change ──▶ Record (record.json)
//	undo:            Undo(record): every path as the run left it? then put each back
//	review:          Scan(working copy) ──Diff──▶ []Change ──Apply──▶ the grant (pre-images kept)
//
// Restoring and applying go through descriptors only: every path is
// opened beneath the grant's root with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS), files are written to a fresh name and renamed
// over the entry (which never follows a link the tool planted there), and
// modes lose their setuid and setgid bits. Device files, sockets and
// FIFOs are never recreated, and a file is always written as new content,
// never linked, so no hard link is carried out of a grant.
//
// Scans are bounded (Limits): a grant with more files or bytes than the
// policy allows is not recorded (ErrTooLarge), and the caller says so.
//
// It must not decide policy, start sandboxes or print: it returns data.
package changeset
