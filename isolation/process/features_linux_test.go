package process

import (
	"context"
	"errors"
	"testing"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

func TestProbeChecks(t *testing.T) {
	f := Probe(context.Background())
	checks := f.Checks()
	if len(checks) < 10 {
		t.Fatalf("checks: %+v", checks)
	}
	for _, c := range checks {
		if c.Tier != "process" {
			t.Errorf("%s: tier %q", c.Name, c.Tier)
		}
		if !c.OK && c.Fix == "" {
			t.Errorf("%s: failing check without a fix", c.Name)
		}
		if c.OK && c.Fix != "" {
			t.Errorf("%s: passing check with a fix", c.Name)
		}
	}
	for _, err := range f.Missing {
		if !errors.Is(err, isolation.ErrUnsupported) {
			t.Errorf("missing piece %v is not an UnsupportedError", err)
		}
	}
}
