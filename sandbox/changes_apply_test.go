package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/changeset"
)

// lockDir makes dir refuse every change (immutable as root, read-only
// otherwise) until the test ends.
func lockDir(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
			testenv.Need(t, "a file system that can make a folder immutable (chattr +i)", fmt.Errorf("chattr +i %s: %v %s", dir, err, out))
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
		return
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
}

// An approved review whose apply fails midway (the first grant applied,
// the second refusing its change) says it was partly applied and how to
// undo; its record, written before the first change and still marked
// applying, lets sandboxed undo put the first grant back.
func TestReviewPartlyAppliedIsUndone(t *testing.T) {
	state := t.TempDir()
	hosts := []string{t.TempDir(), t.TempDir()}
	for _, h := range hosts {
		if err := os.WriteFile(filepath.Join(h, "a.txt"), []byte("original\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runID := NewRunID(time.Now())
	store := changeset.Store{Dir: ChangesDir(state)}
	ch := &isolation.Changes{Review: true, Store: store.Dir}
	for i, h := range hosts {
		ch.Grants = append(ch.Grants, isolation.ChangesGrant{Host: h, Target: "/w" + h, Work: store.WorkDir(runID, i)})
	}
	rc, note, f := beginChanges(&isolation.Plan{RunID: runID, Changes: ch}, "t")
	if f != nil || note != "" {
		t.Fatalf("beginChanges: %+v %q", f, note)
	}
	for _, g := range ch.Grants { // the tool's change, in the working copies
		if err := os.WriteFile(filepath.Join(g.Work, "a.txt"), []byte("by the tool\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(g.Work, "new.txt"), []byte("new\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lockDir(t, hosts[1])
	res := &Result{RunID: runID}
	rc.finish(res, true, nil)

	info := res.Changes
	if info == nil || !info.PartlyApplied || !info.Undo || info.Applied {
		t.Fatalf("changes %+v", info)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "partly applied") || !strings.Contains(w, "sandboxed undo "+runID) {
		t.Errorf("warnings do not say it was partly applied and how to undo:\n%s", w)
	}
	if b, _ := os.ReadFile(filepath.Join(hosts[0], "a.txt")); string(b) != "by the tool\n" {
		t.Fatalf("positive control: the first grant was not applied: %q", b)
	}
	rec, err := store.Load(runID)
	if err != nil || !rec.Applying || rec.Applied {
		t.Fatalf("record: %v %+v", err, rec)
	}
	rep, err := UndoRun(state, "", runID, nil)
	if err != nil || !rep.Resumed {
		t.Fatalf("UndoRun: %v %+v", err, rep)
	}
	if b, _ := os.ReadFile(filepath.Join(hosts[0], "a.txt")); string(b) != "original\n" {
		t.Errorf("after undo: a.txt = %q", b)
	}
	if _, err := os.Lstat(filepath.Join(hosts[0], "new.txt")); err == nil {
		t.Error("after undo: new.txt is still there")
	}
}
