//go:build !linux

package none

import (
	"context"
	"errors"
	"testing"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// TestRefusesOffLinux: off Linux the none tier refuses every plan, with
// what it cannot do and the fix, and never starts anything weaker.
func TestRefusesOffLinux(t *testing.T) {
	b := New()
	_, startErr := b.Start(context.Background(), &isolation.Plan{RunID: "r1"})
	for what, err := range map[string]error{"Check": b.Check(context.Background(), &isolation.Plan{RunID: "r1"}), "Start": startErr} {
		var ue *isolation.UnsupportedError
		if !errors.As(err, &ue) || ue.What == "" || ue.Fix == "" || !errors.Is(err, isolation.ErrUnsupported) {
			t.Errorf("%s: %v, want an UnsupportedError with what and fix", what, err)
		}
	}
}
