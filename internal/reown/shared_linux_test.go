package reown

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSharedLast: of the runs holding a grant, only the last to end
// hands it back; a run that comes after holds it anew.
func TestSharedLast(t *testing.T) {
	dir, grant := filepath.Join(t.TempDir(), "locks"), t.TempDir()
	a, err := Hold(dir, grant)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Hold(dir, grant)
	if err != nil {
		t.Fatal(err)
	}
	if a.Last() {
		t.Errorf("a is last while b holds the grant")
	}
	a.Release()
	if !b.Last() {
		t.Errorf("b is not last once a released")
	}
	b.Release()
	c, err := Hold(dir, grant)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Last() {
		t.Errorf("c, alone, is not last")
	}
	c.Release()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the last hold left %s (%v)", dir, err)
	}
}

// TestReapHolds: gc removes the hold a killed run left, and not one a
// live run holds.
func TestReapHolds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	live, err := Hold(dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release()
	dead, err := Hold(dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dead.f.Close() // killed: its lock goes with its descriptor, the file stays
	reaped, err := ReapHolds(dir, nil)
	if err != nil || len(reaped) != 1 || reaped[0] != "grant hold "+dead.name {
		t.Errorf("reaped %v (%v), want the dead run's %s", reaped, err, dead.name)
	}
	if _, err := os.Stat(live.name); err != nil {
		t.Errorf("the live run's hold: %v", err)
	}
}

// TestHoldAloneTakesTurns: a run holding a grant alone keeps every other
// run of it waiting, shared or alone, and waits for those before it.
func TestHoldAloneTakesTurns(t *testing.T) {
	dir, grant := filepath.Join(t.TempDir(), "holds"), t.TempDir()
	a, err := HoldAlone(dir, grant, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Last() {
		t.Fatal("a run holding a grant alone is not its last")
	}
	got := make(chan string, 2)
	go func() {
		s, err := Hold(dir, grant)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- "shared"
		s.Release()
	}()
	go func() {
		s, err := HoldAlone(dir, grant, nil)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- "alone"
		s.Release()
	}()
	select {
	case g := <-got:
		t.Fatalf("a hold (%s) was taken while another run held the grant alone", g)
	case <-time.After(200 * time.Millisecond):
	}
	a.Release()
	for range 2 {
		select {
		case g := <-got:
			if g != "shared" && g != "alone" {
				t.Fatal(g)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the waiting runs never got the grant")
		}
	}
}
