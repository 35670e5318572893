//go:build !linux

package container

import (
	"errors"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// TestRefusesOffLinux: off Linux the container tier refuses to be made,
// naming what the build lacks (docs/tiers.md#macos).
func TestRefusesOffLinux(t *testing.T) {
	_, err := New()
	var ue *isolation.UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(ue.What, "Linux init") || ue.Fix == "" {
		t.Errorf("New: %v, want an UnsupportedError naming the missing Linux init", err)
	}
}
