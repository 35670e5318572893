package changeset

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// treeHash is a hash of everything under root: paths, kinds, modes,
// contents and link targets.
func treeHash(t *testing.T, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v\n", rel, fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			tgt, _ := os.Readlink(p)
			fmt.Fprintf(h, "-> %s\n", tgt)
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// recordRun scans root, runs the tool (fn), and returns the changes and
// the blob directory of the pre-images.
func recordRun(t *testing.T, root string, fn func()) ([]Change, string) {
	t.Helper()
	blobs := t.TempDir()
	before, err := Scan(root, Limits{}, nil, Keeper(blobs))
	if err != nil {
		t.Fatal(err)
	}
	fn()
	after, err := Scan(root, Limits{}, before, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Diff(before, after), blobs
}

func seed(t *testing.T) string {
	root := t.TempDir()
	write(t, filepath.Join(root, "keep.txt"), "keep\n")
	write(t, filepath.Join(root, "mod.txt"), "old content\n")
	write(t, filepath.Join(root, "del.txt"), "to be deleted\n")
	write(t, filepath.Join(root, "sub/deep.txt"), "deep\n")
	if err := os.Symlink("keep.txt", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "mod.txt"), 0o640); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestUndoRestoresByteForByte(t *testing.T) {
	root := seed(t)
	want := treeHash(t, root)
	cs, blobs := recordRun(t, root, func() {
		write(t, filepath.Join(root, "mod.txt"), "new content, longer than before\n")
		os.Remove(filepath.Join(root, "del.txt"))
		os.RemoveAll(filepath.Join(root, "sub"))
		write(t, filepath.Join(root, "new/dir/created.txt"), "created\n")
		os.Remove(filepath.Join(root, "link"))
		os.Symlink("elsewhere", filepath.Join(root, "link"))
		os.Chmod(filepath.Join(root, "keep.txt"), 0o600)
	})
	if n := Count(cs); n.Deleted != 3 || n.Created != 3 || n.Modified != 3 {
		t.Errorf("counts %+v, changes %+v", n, cs)
	}
	if treeHash(t, root) == want {
		t.Fatal("the run changed nothing")
	}
	skipped, err := Undo(root, cs, blobs)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("Undo: %v, skipped %v", err, skipped)
	}
	if got := treeHash(t, root); got != want {
		t.Errorf("tree after undo differs from before the run")
	}
}

func TestUndoRefusesWhatChangedSince(t *testing.T) {
	root := seed(t)
	cs, blobs := recordRun(t, root, func() {
		write(t, filepath.Join(root, "mod.txt"), "the run's\n")
		write(t, filepath.Join(root, "new.txt"), "the run's\n")
		os.Remove(filepath.Join(root, "del.txt"))
	})
	// The user goes on working after the run.
	write(t, filepath.Join(root, "mod.txt"), "the user's\n")
	write(t, filepath.Join(root, "del.txt"), "the user's\n")
	before := treeHash(t, root)
	_, err := Undo(root, cs, blobs)
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) {
		t.Fatalf("Undo = %v, want a ConflictError", err)
	}
	got := strings.Join(ce.Paths, ";")
	if !strings.Contains(got, "mod.txt: it was changed") || !strings.Contains(got, "del.txt: it exists now") || strings.Contains(got, "new.txt") {
		t.Errorf("conflicts = %q", got)
	}
	if treeHash(t, root) != before {
		t.Error("a refused undo changed the tree")
	}
}

func TestUndoRefusesToEmptyADirectoryOfOthers(t *testing.T) {
	root := seed(t)
	cs, blobs := recordRun(t, root, func() { write(t, filepath.Join(root, "made/x"), "x") })
	write(t, filepath.Join(root, "made/user-file"), "mine")
	_, err := Undo(root, cs, blobs)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "user-file, which the run did not make") {
		t.Fatalf("Undo = %v", err)
	}
}

// A tool that replaces a file it modified, or a directory, with a link to
// somewhere outside the grant: undo removes the link and writes the file
// in the grant, and nothing outside changes.
func TestUndoNeverFollowsAPlantedLink(t *testing.T) {
	root := seed(t)
	outside := t.TempDir()
	write(t, filepath.Join(outside, "mod.txt"), "outside, must stay\n")
	write(t, filepath.Join(outside, "deep.txt"), "outside deep, must stay\n")
	wantOutside := treeHash(t, outside)
	want := treeHash(t, root)
	cs, blobs := recordRun(t, root, func() {
		os.Remove(filepath.Join(root, "mod.txt"))
		os.Symlink(filepath.Join(outside, "mod.txt"), filepath.Join(root, "mod.txt"))
		os.RemoveAll(filepath.Join(root, "sub"))
		os.Symlink(outside, filepath.Join(root, "sub"))
	})
	if _, err := Undo(root, cs, blobs); err != nil {
		t.Fatalf("Undo: %v", err)
	}
	if treeHash(t, outside) != wantOutside {
		t.Error("undo wrote outside the grant")
	}
	if treeHash(t, root) != want {
		t.Error("tree after undo differs from before the run")
	}
}

// A link planted after the record, on the way to a path undo writes, is a
// conflict, not a way out.
func TestUndoRefusesALinkOnTheWay(t *testing.T) {
	root := seed(t)
	outside := t.TempDir()
	cs, blobs := recordRun(t, root, func() { os.Remove(filepath.Join(root, "sub/deep.txt")) })
	os.RemoveAll(filepath.Join(root, "sub"))
	os.Symlink(outside, filepath.Join(root, "sub"))
	_, err := Undo(root, cs, blobs)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("Undo = %v, want a conflict", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) > 0 {
		t.Errorf("undo wrote through the link: %v", ents)
	}
}

func TestUndoDropsSetuid(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "f")
	write(t, p, "x")
	if err := os.Chmod(p, fs.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
	cs, blobs := recordRun(t, root, func() { os.Remove(p) })
	if _, err := Undo(root, cs, blobs); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("restored mode %v, %v; want 0755 without setuid", fi.Mode(), err)
	}
}

func TestScanLimits(t *testing.T) {
	root := seed(t)
	_, err := Scan(root, Limits{MaxFiles: 2}, nil, nil)
	var le *LimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrTooLarge) || le.What != "files" {
		t.Errorf("Scan over MaxFiles = %v", err)
	}
	_, err = Scan(root, Limits{MaxBytes: 10}, nil, nil)
	if !errors.As(err, &le) || le.What != "bytes" {
		t.Errorf("Scan over MaxBytes = %v", err)
	}
	if _, err := Scan(root, Limits{MaxFiles: 100, MaxBytes: 1 << 20}, nil, nil); err != nil {
		t.Errorf("Scan within limits = %v", err)
	}
}

// The review path: a working copy, the tool's change to it, the change
// applied to the grant with pre-images kept, then undone.
func TestCopyApplyUndo(t *testing.T) {
	root := seed(t)
	want := treeHash(t, root)
	work := filepath.Join(t.TempDir(), "work")
	before, err := Copy(root, work, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if treeHash(t, work) != want {
		t.Fatal("the working copy differs from the grant")
	}
	write(t, filepath.Join(work, "mod.txt"), "reviewed\n")
	os.Remove(filepath.Join(work, "del.txt"))
	write(t, filepath.Join(work, "created.txt"), "new\n")
	after, err := Scan(work, Limits{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := Diff(before, after)
	if n := Count(cs); n != (Counts{Created: 1, Modified: 1, Deleted: 1}) {
		t.Fatalf("counts %+v", n)
	}
	if treeHash(t, root) != want {
		t.Fatal("the grant changed before the change was applied")
	}
	blobs := t.TempDir()
	if _, err := Apply(root, work, cs, Keeper(blobs)); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "mod.txt")); string(b) != "reviewed\n" {
		t.Errorf("mod.txt = %q after apply", b)
	}
	if treeHash(t, root) != treeHash(t, work) {
		t.Error("the grant differs from the working copy after apply")
	}
	if _, err := Undo(root, cs, blobs); err != nil {
		t.Fatalf("Undo of the applied change: %v", err)
	}
	if treeHash(t, root) != want {
		t.Error("undo of the applied change did not restore the grant")
	}
}

// A link the tool left in the working copy where a file is expected is
// not read through when applying.
func TestApplyReadsTheWorkingCopyBeneathIt(t *testing.T) {
	root := seed(t)
	work := filepath.Join(t.TempDir(), "work")
	before, err := Copy(root, work, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(work, "mod.txt"), "reviewed\n")
	after, _ := Scan(work, Limits{}, nil, nil)
	cs := Diff(before, after)
	// Swapped for a link after the scan (a tool process that outlived it).
	os.Remove(filepath.Join(work, "mod.txt"))
	os.Symlink("/etc/passwd", filepath.Join(work, "mod.txt"))
	if _, err := Apply(root, work, cs, nil); err == nil {
		t.Fatal("Apply read through a link in the working copy")
	}
	if b, _ := os.ReadFile(filepath.Join(root, "mod.txt")); string(b) != "old content\n" {
		t.Errorf("mod.txt = %q", b)
	}
}

func TestStoreSaveLoadPrune(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	id := "20261128T080000-000000000001"
	if err := s.Begin(id); err != nil {
		t.Fatal(err)
	}
	root := seed(t)
	before, err := Scan(root, Limits{}, nil, Keeper(s.BlobDir(id)))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "mod.txt"), "x")
	after, _ := Scan(root, Limits{}, before, nil)
	r := &Record{RunID: id, Tool: "t", Grants: []Grant{{Root: root, Target: "/w", Changes: Diff(before, after)}}}
	if err := s.Save(r); err != nil {
		t.Fatal(err)
	}
	if err := s.Prune(r); err != nil {
		t.Fatal(err)
	}
	blobs, _ := os.ReadDir(s.BlobDir(id))
	if len(blobs) != 1 || blobs[0].Name() != r.Grants[0].Changes[0].Before.SHA256 {
		t.Errorf("blobs after prune: %v", blobs)
	}
	for _, p := range []string{s.RunDir(id), filepath.Join(s.RunDir(id), "record.json"), filepath.Join(s.BlobDir(id), blobs[0].Name())} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, %v; want private", p, fi.Mode(), err)
		}
	}
	got, err := s.Load(id)
	if err != nil || got.Counts() != (Counts{Modified: 1}) {
		t.Errorf("Load = %+v, %v", got, err)
	}
	if _, err := s.Load("../x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load(../x) = %v", err)
	}
	list, _ := s.List()
	if !slices.ContainsFunc(list, func(st Stored) bool { return st.RunID == id && st.Bytes > 0 }) {
		t.Errorf("List = %+v", list)
	}
}

// A reviewed change to a setuid file and in a setgid directory applies
// (the working copy has neither bit, which is no conflict), and what it
// writes carries neither.
func TestApplyOverSetuid(t *testing.T) {
	root := t.TempDir()
	suid, dir := filepath.Join(root, "tool"), filepath.Join(root, "shared")
	write(t, suid, "v1\n")
	write(t, filepath.Join(dir, "old.txt"), "old\n")
	if err := os.Chmod(suid, fs.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, fs.ModeSetgid|0o775); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(t.TempDir(), "work")
	before, err := Copy(root, work, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(work, "tool"), "v2\n")
	os.Remove(filepath.Join(work, "shared/old.txt"))
	os.Remove(filepath.Join(work, "shared"))
	after, err := Scan(work, Limits{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := Diff(before, after)
	if n := Count(cs); n != (Counts{Modified: 1, Deleted: 2}) {
		t.Fatalf("counts %+v: %+v", n, cs)
	}
	blobs := t.TempDir()
	if _, err := Apply(root, work, cs, Keeper(blobs)); err != nil {
		t.Fatalf("Apply over a setuid file and a setgid directory: %v", err)
	}
	fi, err := os.Stat(suid)
	if b, _ := os.ReadFile(suid); err != nil || string(b) != "v2\n" || fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
		t.Errorf("after apply: %q %v %v", b, fi.Mode(), err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the deleted setgid directory: %v", err)
	}
	if _, err := Undo(root, cs, blobs); err != nil {
		t.Fatalf("Undo: %v", err)
	}
	if b, _ := os.ReadFile(suid); string(b) != "v1\n" {
		t.Errorf("after undo: %q", b)
	}
}

// A grant of one file is recorded through its directory, narrowed to its
// name: nothing else there is scanned, copied or put back.
func TestFileGrantThroughItsDirectory(t *testing.T) {
	root := seed(t)
	lim := Limits{Name: "mod.txt"}
	blobs := t.TempDir()
	before, err := Scan(root, lim, nil, Keeper(blobs))
	if err != nil || len(before) != 1 {
		t.Fatalf("Scan narrowed to one name: %v %v", before, err)
	}
	write(t, filepath.Join(root, "mod.txt"), "changed\n")
	write(t, filepath.Join(root, "keep.txt"), "not the grant's\n")
	after, err := Scan(root, lim, before, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := Diff(before, after)
	if len(cs) != 1 || cs[0].Path != "mod.txt" {
		t.Fatalf("changes %+v", cs)
	}
	if _, err := Undo(root, cs, blobs); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "mod.txt")); string(b) != "old content\n" {
		t.Errorf("mod.txt = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "keep.txt")); string(b) != "not the grant's\n" {
		t.Errorf("undo touched what the grant does not hold: keep.txt = %q", b)
	}
	work := filepath.Join(t.TempDir(), "work")
	if tree, err := Copy(root, work, lim); err != nil || len(tree) != 1 {
		t.Fatalf("Copy narrowed to one name: %v %v", tree, err)
	}
	if names, _ := os.ReadDir(work); len(names) != 1 || names[0].Name() != "mod.txt" {
		t.Errorf("the working copy holds %v", names)
	}
}

// TestScanSkipsOwnStore: a grant that holds the change store (sandboxed's
// state directory inside a write grant of the home) leaves it out. Its
// pre-images, written while the grant is scanned, would otherwise be
// changes of the run, which an undo removes before it reads them.
func TestScanSkipsOwnStore(t *testing.T) {
	root := seed(t)
	s := Store{Dir: filepath.Join(root, "state", "changes")}
	const id = "run1"
	if err := s.Begin(id); err != nil {
		t.Fatal(err)
	}
	lim := Limits{Skip: []string{"state"}}
	before, err := Scan(root, lim, nil, Keeper(s.BlobDir(id)))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "mod.txt"), "new content\n")
	if err := os.Remove(filepath.Join(root, "del.txt")); err != nil {
		t.Fatal(err)
	}
	after, err := Scan(root, lim, before, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range []Tree{before, after} {
		for p := range tr {
			if p == "state" || strings.HasPrefix(p, "state/") {
				t.Fatalf("the scan holds %s, under a skipped path", p)
			}
		}
	}
	cs := Diff(before, after)
	if n := Count(cs); n.Total() != 2 {
		t.Fatalf("changes: %+v, want mod.txt and del.txt", cs)
	}
	r := &Record{RunID: id, Grants: []Grant{{Root: root, Changes: cs}}}
	if err := s.Save(r); err != nil {
		t.Fatal(err)
	}
	if err := s.Prune(r); err != nil {
		t.Fatal(err)
	}
	if _, err := Undo(root, cs, s.BlobDir(id)); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"mod.txt": "old content\n", "del.txt": "to be deleted\n"} {
		if b, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(b) != want {
			t.Errorf("%s after undo: %q, %v; want %q", name, b, err, want)
		}
	}
	if _, err := s.Load(id); err != nil {
		t.Errorf("the record is gone after undo: %v", err)
	}
}

// resumeUndo undoes cs on root as a resumed undo does (PrepareUndo with
// resume, then Do), failing t if either fails.
func resumeUndo(t *testing.T, root string, cs []Change, blobs string) {
	t.Helper()
	p, err := PrepareUndo(root, cs, blobs, true)
	if err != nil {
		t.Fatalf("PrepareUndo(resume): %v", err)
	}
	defer p.Close()
	if _, err := p.Do(); err != nil {
		t.Fatalf("Do(resume): %v", err)
	}
}

// An undo that stops midway (here a pre-image taken away after the check,
// so that its write fails after the removals and earlier writes) leaves a
// grant part restored; the same undo prepared again with resume accepts
// what was put back, removes what an interrupted write left, and finishes
// byte for byte. Without resume it is a conflict.
func TestUndoResumesAnInterruptedUndo(t *testing.T) {
	root := seed(t)
	want := treeHash(t, root)
	cs, blobs := recordRun(t, root, func() {
		write(t, filepath.Join(root, "mod.txt"), "the run's\n")
		os.Remove(filepath.Join(root, "del.txt"))
		os.RemoveAll(filepath.Join(root, "sub"))
		write(t, filepath.Join(root, "sub"), "a file where a directory was\n")
		write(t, filepath.Join(root, "made/x"), "x")
	})
	p, err := PrepareUndo(root, cs, blobs, false)
	if err != nil {
		t.Fatal(err)
	}
	deep := sha256.Sum256([]byte("deep\n"))
	blob := filepath.Join(blobs, hex.EncodeToString(deep[:]))
	if err := os.Rename(blob, blob+".away"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Do(); err == nil {
		t.Fatal("Do with a pre-image gone succeeded")
	}
	p.Close()
	if err := os.Rename(blob+".away", blob); err != nil {
		t.Fatal(err)
	}
	// What a write killed before its rename leaves.
	write(t, filepath.Join(root, "sub", ".sandboxed-4242-deep.txt"), "half")
	if treeHash(t, root) == want {
		t.Fatal("positive control: the interrupted undo restored everything")
	}
	if _, err := Undo(root, cs, blobs); !errors.Is(err, ErrConflict) {
		t.Fatalf("a fresh undo of a part-restored grant = %v, want a conflict", err)
	}
	resumeUndo(t, root, cs, blobs)
	if treeHash(t, root) != want {
		t.Error("the resumed undo did not restore the tree")
	}
}

// An apply that stops midway (a working copy file taken away after the
// check) is undone by a resumed undo: each path, applied or not, is put
// back as it was before.
func TestUndoOfAPartlyAppliedChange(t *testing.T) {
	root := seed(t)
	want := treeHash(t, root)
	work := filepath.Join(t.TempDir(), "work")
	before, err := Copy(root, work, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(work, "del.txt"))
	os.RemoveAll(filepath.Join(work, "sub"))
	write(t, filepath.Join(work, "sub/other.txt"), "other\n")
	write(t, filepath.Join(work, "mod.txt"), "reviewed\n")
	write(t, filepath.Join(work, "zz/new.txt"), "new\n")
	after, err := Scan(work, Limits{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := Diff(before, after)
	blobs := t.TempDir()
	p, err := PrepareApply(root, work, cs, Keeper(blobs))
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(work, "zz/new.txt")) // written last: the rest is applied
	if _, err := p.Do(); err == nil {
		t.Fatal("Do with a working copy file gone succeeded")
	}
	p.Close()
	if b, _ := os.ReadFile(filepath.Join(root, "mod.txt")); string(b) != "reviewed\n" {
		t.Fatalf("positive control: the apply did not get far: mod.txt = %q", b)
	}
	if _, err := Undo(root, cs, blobs); !errors.Is(err, ErrConflict) {
		t.Fatalf("a fresh undo of a partly applied change = %v, want a conflict", err)
	}
	resumeUndo(t, root, cs, blobs)
	if treeHash(t, root) != want {
		t.Error("undo of the partly applied change did not restore the grant")
	}
}

// A damaged pre-image is found before anything is removed: the undo
// refuses and the grant is as it was.
func TestUndoChecksPreImagesFirst(t *testing.T) {
	root := seed(t)
	cs, blobs := recordRun(t, root, func() {
		write(t, filepath.Join(root, "made/x"), "x")
		write(t, filepath.Join(root, "mod.txt"), "the run's\n")
	})
	old := sha256.Sum256([]byte("old content\n"))
	if err := os.WriteFile(filepath.Join(blobs, hex.EncodeToString(old[:])), []byte("damaged\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	now := treeHash(t, root)
	_, err := Undo(root, cs, blobs)
	var se *SourceError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "mod.txt") {
		t.Fatalf("Undo with a damaged pre-image = %v", err)
	}
	if treeHash(t, root) != now {
		t.Error("a refused undo changed the grant (it removed what the run made)")
	}
}

// A file changed between the check and the keeping of its pre-image is
// a conflict of the apply, before anything reaches the grant: the kept
// blob would not be what the record names.
func TestApplyCatchesAChangeBetweenCheckAndKeep(t *testing.T) {
	root := seed(t)
	work := filepath.Join(t.TempDir(), "work")
	before, err := Copy(root, work, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(work, "mod.txt"), "reviewed\n")
	os.Remove(filepath.Join(work, "del.txt"))
	after, _ := Scan(work, Limits{}, nil, nil)
	cs := Diff(before, after)
	blobs := t.TempDir()
	keep := Keeper(blobs)
	racing := func(rel string, fd int) (string, int64, error) {
		if rel == "mod.txt" {
			// The same inode, new content: what the descriptor reads.
			if err := os.WriteFile(filepath.Join(root, rel), []byte("the user's, meanwhile\n"), 0o640); err != nil {
				t.Fatal(err)
			}
		}
		return keep(rel, fd)
	}
	_, err = Apply(root, work, cs, racing)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "mod.txt") {
		t.Fatalf("Apply = %v, want a conflict on mod.txt", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "del.txt")); err != nil {
		t.Errorf("a refused apply removed del.txt: %v", err)
	}
}

// Two undos of one record do not run at once: the second is ErrBusy,
// and gc sees the record in use.
func TestStoreLock(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	id := "20261128T080000-000000000002"
	if err := s.Begin(id); err != nil {
		t.Fatal(err)
	}
	unlock, err := s.Lock(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lock(id); !errors.Is(err, ErrBusy) {
		t.Errorf("a second Lock = %v, want ErrBusy", err)
	}
	if !s.Busy(id) {
		t.Error("Busy = false while locked")
	}
	unlock()
	if s.Busy(id) {
		t.Error("Busy = true after unlock")
	}
	unlock, err = s.Lock(id)
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	unlock()
	if _, err := s.Lock("20261128T080000-000000000003"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Lock of no record = %v", err)
	}
}

// An apply killed between making a directory (0700) and giving it its
// mode leaves it so: the resumed undo takes it for the one the apply
// made, and removes it.
func TestUndoOfAnApplyKilledInAMkdir(t *testing.T) {
	root := seed(t)
	want := treeHash(t, root)
	work := filepath.Join(t.TempDir(), "work")
	before, err := Copy(root, work, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(work, "made"), 0o755); err != nil {
		t.Fatal(err)
	}
	after, _ := Scan(work, Limits{}, nil, nil)
	cs := Diff(before, after)
	blobs := t.TempDir()
	if _, err := Apply(root, work, cs, Keeper(blobs)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "made"), 0o700); err != nil { // as Mkdirat left it
		t.Fatal(err)
	}
	resumeUndo(t, root, cs, blobs)
	if treeHash(t, root) != want {
		t.Error("the resumed undo did not remove the directory the apply made")
	}
}

// Sync flushes the file system of a folder; a missing one is an error
// that names it.
func TestSync(t *testing.T) {
	dir := t.TempDir()
	if err := Sync(dir); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "gone")
	if err := Sync(missing); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Sync(%s) = %v", missing, err)
	}
}
