package host

import (
	"context"
	"testing"
)

// TestProbeUserOnThisHost makes a real user namespace (or says why not)
// and reads the real host files; whatever the host, every failing check
// carries a fix.
func TestProbeUserOnThisHost(t *testing.T) {
	s := &System{Root: "/"}
	p := s.ProbeUser(context.Background(), []string{"-test.run=^$"})
	if p.UserNS != nil && (p.UserNS.Cause == "" || p.UserNS.Fix == "") {
		t.Errorf("user namespace error without a cause or fix: %+v", p.UserNS)
	}
	for _, c := range p.Checks() {
		if !c.OK && c.Fix == "" {
			t.Errorf("check %s/%s fails without a fix: %+v", c.Tier, c.Name, c)
		}
	}
	if p.LandlockABI == 0 && p.LandlockError == "" {
		t.Errorf("no Landlock ABI and no reason")
	}
}
