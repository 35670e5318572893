//go:build !linux

package testenv

import (
	"os"
	"testing"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
)

// Nobody is the uid and gid [Unprivileged] runs as when the test runs as
// root.
const Nobody = privilege.NobodyID

// Unprivileged runs f as an ordinary user. Outside Linux it can only do so
// when the test does not run as root; as root the test needs a user, and
// stops through [Need].
func Unprivileged(t testing.TB, f func()) {
	t.Helper()
	if os.Geteuid() == 0 {
		Need(t, "a non-root user (per-thread credentials are Linux only)", errUnsupported)
		return
	}
	f()
}
