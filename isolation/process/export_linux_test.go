package process

import "time"

// SetGCMinAge lets tests collect cgroups they have just made.
func SetGCMinAge(d time.Duration) (restore func()) {
	old := gcMinAge
	gcMinAge = d
	return func() { gcMinAge = old }
}

// ReservedStart is reservedStart, for tests that check the mapping.
var ReservedStart = reservedStart
