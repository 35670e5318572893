package reown

import (
	"os"
	"path/filepath"
	"testing"
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
