//go:build !linux

package isolation_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/container"
	"github.com/sandboxed-dev/sandboxed/isolation/landlock"
	"github.com/sandboxed-dev/sandboxed/isolation/none"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
)

// TestTiersRefuseOffLinux: off Linux every local tier refuses every plan
// with what it cannot do and the fix, and never starts anything weaker;
// the container tier refuses to be made, naming what the build lacks
// (docs/tiers.md#macos).
func TestTiersRefuseOffLinux(t *testing.T) {
	ctx, p := context.Background(), &isolation.Plan{RunID: "r1"}
	unsupported := func(what string, err error) {
		t.Helper()
		var ue *isolation.UnsupportedError
		if !errors.As(err, &ue) || ue.What == "" || ue.Fix == "" || !errors.Is(err, isolation.ErrUnsupported) {
			t.Errorf("%s: %v, want an UnsupportedError with what and fix", what, err)
		}
	}
	for _, b := range []isolation.Backend{process.New(), landlock.New(), none.New()} {
		unsupported(string(b.Tier())+" Check", b.Check(ctx, p))
		_, err := b.Start(ctx, p)
		unsupported(string(b.Tier())+" Start", err)
	}
	_, err := container.New()
	unsupported("container New", err)
	if err == nil || !strings.Contains(err.Error(), "Linux init") {
		t.Errorf("container New: %v, want the missing Linux init named", err)
	}
}
