package host

// Owner is a uid and gid on the host.
type Owner struct {
	UID, GID int
}

// Reowned is what Reown did under one root.
type Reowned struct {
	// Changed counts the entries given to the new owner.
	Changed int
	// Skipped are the entries of the old owner left alone, each with why:
	// a file with more than one link (another link may be outside the
	// grant), or a mount point of another filesystem.
	Skipped []string
}
