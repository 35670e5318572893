package reown

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

// fakeDo records the hand-overs asked of it, as "FROM>TO PATH".
type fakeDo struct {
	mu   sync.Mutex
	done []string
}

func (d *fakeDo) do(paths []string, from, to Owner) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range paths {
		d.done = append(d.done, fmt.Sprintf("%d>%d %s", from.UID, to.UID, p))
	}
	return nil
}

func (d *fakeDo) take() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.done
	d.done = nil
	return out
}

// kill ends h's holds as a killed controller's end: its locks go with
// its descriptors, the files stay.
func kill(h *Handed) {
	for _, s := range h.held {
		s.f.Close()
	}
	h.held = nil
}

func modeOf(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestGCHandsBackAKilledRunsGrant: a hold records its hand-over before it
// is done, so gc hands back the grant of a run killed mid-run — the same
// way (the namespace's maps), with the folder's mode from before the run
// — and removes the hold; it never touches a grant a live run holds.
func TestGCHandsBackAKilledRunsGrant(t *testing.T) {
	dir, grant, other := filepath.Join(t.TempDir(), "holds"), t.TempDir(), t.TempDir()
	must(t, os.Chmod(grant, 0o751))
	d := &fakeDo{}
	maps := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1000, Size: 1}, {ContainerID: 65534, HostID: 165534, Size: 1}}
	from, to := Owner{UID: 0, GID: 0}, Owner{UID: 65534, GID: 65534}
	dead, err := HandOver([]string{grant}, from, to, dir, Via{Do: d.do, UIDs: maps, GIDs: maps})
	must(t, err)
	live, err := HandOver([]string{other}, from, to, dir, Via{Do: d.do, UIDs: maps, GIDs: maps})
	must(t, err)
	defer live.Back()
	if got := d.take(); !slices.Equal(got, []string{"0>65534 " + grant, "0>65534 " + other}) {
		t.Fatalf("hand-overs %v", got)
	}
	must(t, os.Chmod(grant, 0o700)) // the tool's
	kill(dead)

	var backs []Grant
	reaped, err := ReapHolds(dir, func(g Grant) error { backs = append(backs, g); return g.Back(d.do) })
	if err != nil {
		t.Fatal(err)
	}
	if len(backs) != 1 || backs[0].Path != grant || !slices.Equal(backs[0].UIDs, maps) || backs[0].To != to {
		t.Fatalf("gc handed back %+v, want the killed run's grant %s alone, with its maps", backs, grant)
	}
	if got := d.take(); !slices.Equal(got, []string{"65534>0 " + grant}) {
		t.Errorf("hand-backs %v", got)
	}
	if m := modeOf(t, grant); m != 0o751 {
		t.Errorf("grant mode after gc %v, want 0751", m)
	}
	if len(reaped) != 2 || !strings.Contains(reaped[0], "handed back") || !strings.HasPrefix(reaped[1], "grant hold ") {
		t.Errorf("reaped %q", reaped)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(names) != 1 {
		t.Errorf("holds left %v, want the live run's alone", names)
	}
}

// TestJoiningRunKeepsTheFirstFolder: a run that joins a grant another
// run holds keeps the folder's mode the first saved, not the one its tool
// set since; the last to end restores it.
func TestJoiningRunKeepsTheFirstFolder(t *testing.T) {
	dir, grant := filepath.Join(t.TempDir(), "holds"), t.TempDir()
	must(t, os.Chmod(grant, 0o755))
	d := &fakeDo{}
	from, to := Owner{UID: 1, GID: 1}, Owner{UID: 2, GID: 2}
	a, err := HandOver([]string{grant}, from, to, dir, Via{Do: d.do})
	must(t, err)
	must(t, os.Chmod(grant, 0o700))
	b, err := HandOver([]string{grant}, from, to, dir, Via{Do: d.do})
	must(t, err)
	if b.folders[0].Mode != 0o755 {
		t.Errorf("the joining run saved mode %o, want the first's 0755", b.folders[0].Mode)
	}
	if _, err := HandOver([]string{grant}, from, Owner{UID: 3, GID: 3}, dir, Via{Do: d.do}); err == nil {
		t.Errorf("a run handing the grant to another uid joined it")
	}
	must(t, a.Back())
	must(t, b.Back())
	if m := modeOf(t, grant); m != 0o755 {
		t.Errorf("grant mode after both runs %v, want 0755", m)
	}
	if got := d.take(); len(got) != 3 || got[2] != "2>1 "+grant {
		t.Errorf("hand-overs %v, want two over and one back", got)
	}
}

// TestNextRunHandsBackAKilledRunsGrant: the next run to hold a grant
// alone hands back what a killed run left handed to its own uid, before
// its own hand-over.
func TestNextRunHandsBackAKilledRunsGrant(t *testing.T) {
	dir, grant := filepath.Join(t.TempDir(), "holds"), t.TempDir()
	must(t, os.Chmod(grant, 0o750))
	from := Owner{UID: 7, GID: 7}
	// HandOverAlone reowns here; a fake stands in for root.
	d := &fakeDo{}
	first, err := handOver([]string{grant}, from, Owner{UID: 100, GID: 100}, dir, Via{Do: d.do}, true)
	must(t, err)
	must(t, os.Chmod(grant, 0o700))
	kill(first)
	if g := Recorded(dir, grant); g == nil || g.To.UID != 100 || g.From != from || g.Folder.Mode != 0o750 {
		t.Errorf("Recorded %+v, want the killed run's hand-over to uid 100 of a 0750 folder", g)
	}
	next, err := handOver([]string{grant}, from, Owner{UID: 200, GID: 200}, dir, Via{Do: d.do}, true)
	must(t, err)
	if got := d.take(); !slices.Equal(got, []string{"7>100 " + grant, "100>7 " + grant, "7>200 " + grant}) {
		t.Errorf("hand-overs %v", got)
	}
	if next.folders[0].Mode != 0o750 {
		t.Errorf("the next run saved mode %o, want 0750 (restored from the killed run's record)", next.folders[0].Mode)
	}
	must(t, next.Back())
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 0 {
		t.Errorf("holds left %v", names)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestGrantBackAtItsOrigin: a grant handed over at a bind of the run's
// (a staged source) that is gone by gc is handed back at its own path; a
// path that names another folder now is left alone.
func TestGrantBackAtItsOrigin(t *testing.T) {
	grant := t.TempDir()
	must(t, os.Chmod(grant, 0o750))
	f, err := SaveFolder(grant)
	must(t, err)
	must(t, os.Chmod(grant, 0o700))
	d := &fakeDo{}
	g := Grant{Path: filepath.Join(t.TempDir(), "staged-0"), Origin: grant, Folder: f, From: Owner{UID: 1}, To: Owner{UID: 2}}
	g.Folder.Path = g.Path
	must(t, g.Back(d.do))
	if got := d.take(); !slices.Equal(got, []string{"2>1 " + grant}) || modeOf(t, grant) != 0o750 {
		t.Errorf("hand-backs %v, mode %v: want the origin's, 0750", got, modeOf(t, grant))
	}
	g.Origin = t.TempDir() // another folder
	if err := g.Back(d.do); !errors.Is(err, ErrGrantGone) || len(d.take()) != 0 {
		t.Errorf("a grant whose paths name other folders: %v", err)
	}
}

// TestHoldAloneHandsBackAKilledRunsGrant: an undo holds a grant alone as
// runs do; a grant a killed run left handed over is handed back first (the
// undo writes into the user's grant), and its record is never dropped with
// the hold while the grant is still the killed tool's — a failed hand-back
// keeps the hold for gc.
func TestHoldAloneHandsBackAKilledRunsGrant(t *testing.T) {
	dir, grant := filepath.Join(t.TempDir(), "holds"), t.TempDir()
	must(t, os.Chmod(grant, 0o750))
	d := &fakeDo{}
	from, to := Owner{UID: 7, GID: 7}, Owner{UID: 100, GID: 100}
	first, err := handOver([]string{grant}, from, to, dir, Via{Do: d.do}, true)
	must(t, err)
	must(t, os.Chmod(grant, 0o700)) // the tool's
	kill(first)
	d.take()

	fail := errors.New("no helper")
	if _, err := HoldAlone(dir, grant, func(Grant) error { return fail }); !errors.Is(err, fail) {
		t.Fatalf("HoldAlone whose hand-back failed: %v, want that failure", err)
	}
	var backs []Grant
	reaped, err := ReapHolds(dir, func(g Grant) error { backs = append(backs, g); return nil })
	must(t, err)
	if len(backs) != 1 || backs[0].To != to {
		t.Fatalf("after a failed hand-back gc handed back %+v (reaped %q), want the killed run's grant", backs, reaped)
	}

	must(t, os.Chmod(grant, 0o750))
	first, err = handOver([]string{grant}, from, to, dir, Via{Do: d.do}, true)
	must(t, err)
	must(t, os.Chmod(grant, 0o700))
	kill(first)
	d.take()
	h, err := HoldAlone(dir, grant, func(g Grant) error { return g.Back(d.do) })
	must(t, err)
	if got := d.take(); !slices.Equal(got, []string{"100>7 " + grant}) || modeOf(t, grant) != 0o750 {
		t.Errorf("hold alone: hand-backs %v, mode %v; want the killed run's grant handed back, 0750", got, modeOf(t, grant))
	}
	h.Release()
	backs = nil
	if _, err := ReapHolds(dir, func(g Grant) error { backs = append(backs, g); return nil }); err != nil || len(backs) != 0 {
		t.Errorf("gc after the hold: %v, handed back %+v again", err, backs)
	}
}

// TestHoldsOfAnotherAreNotRead: a hold's record is acted on (the grant's
// owner, mode and ACLs are set from it), so gc and a run read holds only
// from a folder that they own and no one else may write, in a folder of
// the same kind, and only hold files they own. A runtime directory of a
// predictable name (/tmp/sandboxed-UID) made first by another user would
// otherwise let that user have gc chmod the caller's home 0777.
func TestHoldsOfAnotherAreNotRead(t *testing.T) {
	victim := t.TempDir()
	must(t, os.Chmod(victim, 0o700))
	f, err := SaveFolder(victim)
	must(t, err)
	f.Mode = 0o777
	crafted, err := json.Marshal(Grant{Path: victim, Folder: f, From: Owner{UID: os.Geteuid()}, To: Owner{UID: 12345}})
	must(t, err)
	plant := func(dirMode os.FileMode, fileOwner int) string {
		runtime := filepath.Join(t.TempDir(), "runtime")
		dir := filepath.Join(runtime, HoldsDir)
		must(t, os.MkdirAll(dir, 0o700))
		must(t, os.Chmod(runtime, dirMode))
		name := filepath.Join(dir, fmt.Sprintf("grant-%d-%d.lock", f.Dev, f.Ino))
		must(t, os.WriteFile(name, crafted, 0o666))
		must(t, os.Chown(name, fileOwner, fileOwner))
		return dir
	}
	if os.Geteuid() != 0 {
		testenv.Need(t, "root (to give a hold file to another uid)", fmt.Errorf("uid %d", os.Geteuid()))
	}
	for what, dir := range map[string]string{
		"a runtime folder others may write": plant(0o777, os.Geteuid()),
		"a hold file of another uid":        plant(0o700, 12345),
	} {
		called := false
		_, err := ReapHolds(dir, func(g Grant) error { called = true; return g.Back(nil) })
		if called || err == nil {
			t.Errorf("gc read the holds in %s: handed back %v, error %v", what, called, err)
		}
		if m := modeOf(t, victim); m != 0o700 {
			t.Fatalf("gc set the mode of %s to %v from the holds in %s", victim, m, what)
		}
		if _, err := HoldAlone(dir, victim, nil); err == nil {
			t.Errorf("a hold was taken in %s", what)
		}
	}
}

// TestARunRefusingAKilledRunsGrantKeepsItsRecord: a run that cannot hand
// back what a killed run left (handed over in another user namespace)
// refuses, and the hold keeps its record for the gc it asks for.
func TestARunRefusingAKilledRunsGrantKeepsItsRecord(t *testing.T) {
	dir, grant := filepath.Join(t.TempDir(), "holds"), t.TempDir()
	d := &fakeDo{}
	maps := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1000, Size: 1}}
	from, to := Owner{UID: 0, GID: 0}, Owner{UID: 65534, GID: 65534}
	dead, err := HandOver([]string{grant}, from, to, dir, Via{Do: d.do, UIDs: maps, GIDs: maps})
	must(t, err)
	kill(dead)
	if _, err := HandOver([]string{grant}, from, to, dir, Via{Do: d.do}); err == nil || !strings.Contains(err.Error(), "sandboxed gc") {
		t.Fatalf("a run beside a killed run's grant of another namespace: %v, want a refusal naming gc", err)
	}
	var backs []Grant
	if _, err := ReapHolds(dir, func(g Grant) error { backs = append(backs, g); return nil }); err != nil || len(backs) != 1 {
		t.Errorf("gc after the refusal: %v, handed back %+v; want the killed run's grant", err, backs)
	}
}

// TestGCLeavesAKilledRunsGrantAroundALiveOne: gc does not hand back a
// killed run's grant that holds, or lies in, a grant a live run holds —
// the walk would hand the live tool's files (the same uid's, in the tiers
// whose runs share one) to the user while it runs. A later gc does.
func TestGCLeavesAKilledRunsGrantAroundALiveOne(t *testing.T) {
	for _, nested := range []string{"live inside", "killed inside"} {
		t.Run(nested, func(t *testing.T) {
			dir, outer := filepath.Join(t.TempDir(), "holds"), t.TempDir()
			inner := filepath.Join(outer, "sub")
			must(t, os.Mkdir(inner, 0o755))
			killed, live := outer, inner
			if nested == "killed inside" {
				killed, live = inner, outer
			}
			d := &fakeDo{}
			from, to := Owner{UID: 1, GID: 1}, Owner{UID: 2, GID: 2}
			dead, err := HandOver([]string{killed}, from, to, dir, Via{Do: d.do})
			must(t, err)
			kill(dead)
			running, err := HandOver([]string{live}, from, to, dir, Via{Do: d.do})
			must(t, err)
			var backs []Grant
			reap := func(g Grant) error { backs = append(backs, g); return nil }
			must2(ReapHolds(dir, reap))
			if len(backs) != 0 {
				t.Fatalf("gc handed back %+v beside a live run's grant %s", backs, live)
			}
			must(t, running.Back())
			must2(ReapHolds(dir, reap))
			if len(backs) != 1 || backs[0].Path != killed {
				t.Errorf("gc once the live run ended handed back %+v, want %s", backs, killed)
			}
		})
	}
}

func must2(_ []string, err error) {
	if err != nil {
		panic(err)
	}
}
