package main

// classify maps package sentinels to exit codes; filled in as packages
// gain their sentinels.
func classify(err error) (int, bool) {
	return 0, false
}
