package container

// platformUnsupported says why this OS cannot run the container tier; nil
// on Linux.
func platformUnsupported() error { return nil }
