//go:build !linux

package landlock

// ProcessTierBlocked says why the process tier cannot run here: off
// Linux, it never can.
func ProcessTierBlocked() string { return "the process tier needs Linux" }
