package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// changesOf is the changes section of a run's result.
type changesOf struct {
	Changes *struct {
		Undo        bool   `json:"undo"`
		Unavailable string `json:"unavailable"`
		Review      bool   `json:"review"`
		Applied     bool   `json:"applied"`
		Created     int    `json:"created"`
		Modified    int    `json:"modified"`
		Deleted     int    `json:"deleted"`
		Paths       []struct{ Op, Path string }
		Diff        string `json:"diff"`
	} `json:"changes"`
}

// treeDigest hashes the paths, modes, contents and link targets under root.
func treeDigest(t *testing.T, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(h, "%s %v\n", rel, fi.Mode())
		if fi.Mode()&fs.ModeSymlink != 0 {
			tgt, _ := os.Readlink(p)
			fmt.Fprintf(h, "-> %s\n", tgt)
		} else if fi.Mode().IsRegular() {
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

// writerScript modifies, creates and deletes files in out/, and replaces a
// file it modified with a link to a file outside the grant.
const writerScript = `
printf 'modified by the tool\n' > out/keep.txt
rm out/gone.txt
rm -r out/sub
mkdir -p out/new/deeper && printf 'created\n' > out/new/deeper/file.txt
chmod 600 out/mode.txt
printf 'changed then linked\n' > out/linked.txt
rm out/linked.txt && ln -s ../outside/victim.txt out/linked.txt
echo done`

func undoWorkdir(t *testing.T) string {
	return workdir(t, map[string]string{
		"out/keep.txt": "original keep\n", "out/gone.txt": "original gone\n", "out/sub/a.txt": "sub a\n",
		"out/mode.txt": "mode\n", "out/linked.txt": "original linked\n", "outside/victim.txt": "VICTIM\n",
	})
}

// undoTier is the definition's isolation and the run flags of tier: the
// landlock tier is a process-tier tool run with --isolation landlock, as
// root as a uid of its own, which the folder must let write.
func undoTier(t *testing.T, tier, dir string) (string, []string) {
	t.Helper()
	if tier != "landlock" {
		return tier, nil
	}
	if err := exec.Command("chmod", "-R", "a+rwX", filepath.Join(dir, "out")).Run(); err != nil {
		t.Fatal(err)
	}
	return "process", []string{"--isolation", "landlock", "--approve", "isolation-landlock"}
}

// A tool that modifies, creates and deletes files in its write grant (and
// plants a link where a file was): sandboxed undo RUN_ID restores the
// folder byte for byte, without writing through the link; audit shows
// what the run changed. On Kubernetes the grant is copied into the pod
// and back, and recorded on this host around both copies.
func TestUndoRestoresWriteGrant(t *testing.T) {
	forTierList(t, []string{"process", "container", "landlock", kubeTier}, func(t *testing.T, tier string) {
		dir := undoWorkdir(t)
		iso, extra := undoTier(t, tier, dir)
		tool := toolYAML(t, dir, iso, "writer", writerScript, []string{"filesystem:write:./out"}, "")
		out, outside := filepath.Join(dir, "out"), filepath.Join(dir, "outside")
		before, beforeOutside := treeDigest(t, out), treeDigest(t, outside)

		r, c := runJSON(t, dir, append(extra, tool)...)
		expect(t, r, c, "ok", 0)
		var ch changesOf
		if err := json.Unmarshal([]byte(c.stdout), &ch); err != nil || ch.Changes == nil {
			t.Fatalf("result has no changes: %v\n%s", err, c.stdout)
		}
		// A uid of its own (landlock) cannot chmod; a pod's copy back
		// carries files and folders, not modes or links.
		minModified := 2
		if tier == kubeTier {
			minModified = 1
		}
		if !ch.Changes.Undo || ch.Changes.Created < 3 || ch.Changes.Deleted < 2 || ch.Changes.Modified < minModified {
			t.Fatalf("changes %+v", ch.Changes)
		}
		if treeDigest(t, out) == before {
			t.Fatal("positive control: the tool changed nothing")
		}
		au := sandboxed(t, dir, "audit", "--paths", "--tool", "writer")
		if !strings.Contains(au.stdout, r.RunID) || !strings.Contains(au.stdout, "deleted "+filepath.Join(out, "gone.txt")) {
			t.Errorf("audit does not show the run's changes:\n%s", au.stdout)
		}

		u := sandboxed(t, dir, "undo", r.RunID)
		if u.code != 0 {
			t.Fatalf("undo: exit %d\n%s%s", u.code, u.stdout, u.stderr)
		}
		if got := treeDigest(t, out); got != before {
			t.Errorf("undo did not restore the folder byte for byte")
		}
		if b, _ := os.ReadFile(filepath.Join(outside, "victim.txt")); string(b) != "VICTIM\n" || treeDigest(t, outside) != beforeOutside {
			t.Errorf("undo wrote through the planted link: victim.txt = %q", b)
		}
		if again := sandboxed(t, dir, "undo", r.RunID); again.code == 0 || !strings.Contains(again.stderr, "already undone") {
			t.Errorf("a second undo: exit %d %s", again.code, again.stderr)
		}
	})
}

// After the run the user changes a file the run wrote: undo refuses with
// the list and changes nothing.
func TestUndoRefusesWhatChangedSince(t *testing.T) {
	dir := undoWorkdir(t)
	tool := toolYAML(t, dir, "process", "writer", writerScript, []string{"filesystem:write:./out"}, "")
	r, c := runJSON(t, dir, tool)
	expect(t, r, c, "ok", 0)
	if err := os.WriteFile(filepath.Join(dir, "out/keep.txt"), []byte("the user's edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	now := treeDigest(t, filepath.Join(dir, "out"))
	u := sandboxed(t, dir, "undo", r.RunID)
	if u.code == 0 || !strings.Contains(u.stderr, "keep.txt: it was changed") {
		t.Errorf("undo over a later edit: exit %d\n%s", u.code, u.stderr)
	}
	if treeDigest(t, filepath.Join(dir, "out")) != now {
		t.Error("a refused undo changed the folder")
	}
	// explain shows undo and review, with the rule of their bounds.
	ex := sandboxed(t, dir, "permissions", "explain", "--json", tool)
	for _, want := range []string{`"subject": "undo"`, `"subject": "review"`, `"rule": "undo (built-in default)"`, "sandboxed undo RUN_ID"} {
		if !strings.Contains(ex.stdout, want) {
			t.Errorf("explain lacks %s:\n%s", want, ex.stdout)
		}
	}
}

// run --review: without approval the folder is untouched and the change is
// printed (deletions first, control characters escaped); with --approve
// writes it is applied, and can be undone.
func TestReviewWrites(t *testing.T) {
	forTierList(t, []string{"process", "container", "landlock"}, func(t *testing.T, tier string) {
		dir := undoWorkdir(t)
		iso, extra := undoTier(t, tier, dir)
		script := strings.Replace(writerScript, "echo done", `printf 'spoof \033[2J\033]0;title\007\n' > out/new/esc.txt
echo done`, 1)
		tool := toolYAML(t, dir, iso, "writer", script, []string{"filesystem:write:./out"}, "")
		out := filepath.Join(dir, "out")
		before := treeDigest(t, out)
		if tier == "landlock" {
			// No mounts: no working copy can stand where the grant is.
			r, c := runJSON(t, dir, append(extra, "--review", tool)...)
			expect(t, r, c, "error", 2)
			if r.Error == nil || !strings.Contains(r.Error.Message, "cannot hold back the writes") || treeDigest(t, out) != before {
				t.Errorf("review in the landlock tier: %+v", r.Error)
			}
			return
		}

		// Not a terminal, no approval: printed, not applied.
		c := sandboxed(t, dir, append(append([]string{"run", "--review"}, extra...), tool)...)
		if c.code != 0 {
			t.Fatalf("run --review: exit %d\n%s", c.code, c.stderr)
		}
		if treeDigest(t, out) != before {
			t.Fatal("an unapproved review changed the folder")
		}
		del, mod := strings.Index(c.stderr, "deleted   gone.txt"), strings.Index(c.stderr, "modified  keep.txt")
		if del < 0 || mod < 0 || del > mod || !strings.Contains(c.stderr, "+|modified by the tool") || !strings.Contains(c.stderr, "Not applied") {
			t.Errorf("the review does not show the change, deletions first:\n%s", c.stderr)
		}
		if strings.ContainsAny(c.stderr, "\x1b\x07") || !strings.Contains(c.stderr, `\x1b[2J`) {
			t.Errorf("control characters reached the review:\n%q", c.stderr)
		}

		// --json: the result carries the change and says it was not applied.
		r, jc := runJSON(t, dir, append(extra, "--review", tool)...)
		expect(t, r, jc, "ok", 0)
		var ch changesOf
		if err := json.Unmarshal([]byte(jc.stdout), &ch); err != nil || ch.Changes == nil || ch.Changes.Applied || !ch.Changes.Review || ch.Changes.Deleted < 2 || ch.Changes.Diff == "" {
			t.Fatalf("review result: %v %+v", err, ch.Changes)
		}
		if treeDigest(t, out) != before {
			t.Fatal("an unapproved --json review changed the folder")
		}

		// Approved: applied, and undone again.
		r, jc = runJSON(t, dir, append(extra, "--review", "--approve", "writes", tool)...)
		expect(t, r, jc, "ok", 0)
		if err := json.Unmarshal([]byte(jc.stdout), &ch); err != nil || !ch.Changes.Applied || !ch.Changes.Undo {
			t.Fatalf("approved review: %v %+v", err, ch.Changes)
		}
		if b, _ := os.ReadFile(filepath.Join(out, "keep.txt")); string(b) != "modified by the tool\n" {
			t.Errorf("the approved change was not applied: keep.txt = %q", b)
		}
		if fi, err := os.Lstat(filepath.Join(out, "linked.txt")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("linked.txt after apply: %v %v", fi, err)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "outside/victim.txt")); string(b) != "VICTIM\n" {
			t.Errorf("apply wrote through a link: %q", b)
		}
		if u := sandboxed(t, dir, "undo", r.RunID); u.code != 0 {
			t.Fatalf("undo of the reviewed run: %d\n%s", u.code, u.stderr)
		}
		if treeDigest(t, out) != before {
			t.Error("undo of the reviewed run did not restore the folder")
		}
	})
}

// run --review keeps the policy's protection: the tool reads no masked
// secret through its working copy, writes nothing to the host through
// the binds that pin a protected path's parents, and what it created
// where the policy protects (a new repository's hook, a .env) is left out
// of the change, listed with its rule, even when the change is approved.
func TestReviewKeepsProtectedPaths(t *testing.T) {
	forTierList(t, []string{"process", "container"}, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"out/.git/config": "[core]\n", "out/.env": "SECRET-ENV\n",
			"out/keys/id_rsa": "SECRET-KEY\n", "out/plain.txt": "plain\n"})
		tool := toolYAML(t, dir, tier, "writer", `
cat out/.env out/keys/id_rsa 2>/dev/null; echo READ-DONE
echo pinned > out/.git/pinned
mkdir -p out/new/.git/hooks && echo 'evil' > out/new/.git/hooks/pre-commit
echo 'TOKEN=x' > out/new/.env
if echo x >> out/.git/config 2>/dev/null; then echo WROTE-CONFIG; fi
echo changed > out/plain.txt`, []string{"filesystem:write:./out"}, "")
		out := filepath.Join(dir, "out")
		before := treeDigest(t, out)

		r, c := runJSON(t, dir, "--review", tool)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "READ-DONE") || strings.Contains(r.Stdout, "SECRET") || strings.Contains(r.Stdout, "WROTE-CONFIG") {
			t.Fatalf("the tool read a masked secret or wrote a protected path through its working copy:\n%s", r.Stdout)
		}
		if treeDigest(t, out) != before {
			t.Fatal("an unapproved review changed the folder (through a pinned parent of a protected path?)")
		}

		r, c = runJSON(t, dir, "--review", "--approve", "writes", tool)
		expect(t, r, c, "ok", 0)
		var ch struct {
			Changes *struct {
				Applied bool   `json:"applied"`
				Diff    string `json:"diff"`
				Refused []struct{ Op, Path, Rule string }
			} `json:"changes"`
		}
		if err := json.Unmarshal([]byte(c.stdout), &ch); err != nil || ch.Changes == nil || !ch.Changes.Applied {
			t.Fatalf("approved review: %v\n%s", err, c.stdout)
		}
		if b, _ := os.ReadFile(filepath.Join(out, "plain.txt")); string(b) != "changed\n" {
			t.Errorf("positive control: plain.txt = %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(out, ".git/pinned")); string(b) != "pinned\n" {
			t.Errorf("positive control: .git/pinned = %q", b)
		}
		for _, p := range []string{"new/.git/hooks", "new/.env"} {
			if _, err := os.Lstat(filepath.Join(out, p)); err == nil {
				t.Errorf("applying the review wrote the protected %s", p)
			}
		}
		refused := map[string]string{}
		for _, f := range ch.Changes.Refused {
			refused[strings.TrimPrefix(f.Path, out+"/")] = f.Rule
		}
		if !strings.Contains(refused["new/.git/hooks"], "**/.git/hooks") || !strings.Contains(refused["new/.git/hooks/pre-commit"], "**/.git/hooks") ||
			!strings.Contains(refused["new/.env"], "secrets.mask") {
			t.Errorf("refused %+v", ch.Changes.Refused)
		}
		if !strings.Contains(ch.Changes.Diff, "Left out, never applied") || strings.Contains(ch.Changes.Diff, "evil") || strings.Contains(ch.Changes.Diff, "TOKEN") {
			t.Errorf("the diff:\n%s", ch.Changes.Diff)
		}
		warned := false
		for _, w := range r.Warnings {
			warned = warned || strings.Contains(w, "new/.env") && strings.Contains(w, "never applied")
		}
		if !warned {
			t.Errorf("warnings %q", r.Warnings)
		}
		if b, _ := os.ReadFile(filepath.Join(out, ".git/config")); string(b) != "[core]\n" {
			t.Errorf(".git/config = %q", b)
		}
	})
}

// A write grant of a single file is recorded too: undo puts it back, and
// a review copies it alone and applies its change on approval.
func TestUndoFileGrant(t *testing.T) {
	forTierList(t, []string{"process", "container"}, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"notes.txt": "original\n", "other.txt": "other\n"})
		tool := toolYAML(t, dir, tier, "noter", `printf 'by the tool\n' > notes.txt; echo done`, []string{"filesystem:write:./notes.txt"}, "")
		notes := filepath.Join(dir, "notes.txt")
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "ok", 0)
		var ch changesOf
		if err := json.Unmarshal([]byte(c.stdout), &ch); err != nil || ch.Changes == nil || !ch.Changes.Undo || ch.Changes.Modified != 1 {
			t.Fatalf("changes of a file grant: %v %+v", err, ch.Changes)
		}
		if b, _ := os.ReadFile(notes); string(b) != "by the tool\n" {
			t.Fatalf("positive control: notes.txt = %q", b)
		}
		if u := sandboxed(t, dir, "undo", r.RunID); u.code != 0 {
			t.Fatalf("undo: %d\n%s", u.code, u.stderr)
		}
		if b, _ := os.ReadFile(notes); string(b) != "original\n" {
			t.Errorf("after undo: notes.txt = %q", b)
		}

		r, c = runJSON(t, dir, "--review", tool)
		expect(t, r, c, "ok", 0)
		ch = changesOf{}
		if err := json.Unmarshal([]byte(c.stdout), &ch); err != nil || ch.Changes == nil || ch.Changes.Applied || !strings.Contains(ch.Changes.Diff, "+|by the tool") {
			t.Fatalf("review of a file grant: %v %+v", err, ch.Changes)
		}
		if b, _ := os.ReadFile(notes); string(b) != "original\n" {
			t.Fatalf("an unapproved review wrote notes.txt: %q", b)
		}
		r, c = runJSON(t, dir, "--review", "--approve", "writes", tool)
		expect(t, r, c, "ok", 0)
		if b, _ := os.ReadFile(notes); string(b) != "by the tool\n" {
			t.Errorf("the approved review was not applied: %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "other.txt")); string(b) != "other\n" {
			t.Errorf("other.txt = %q", b)
		}
	})
}

// What the tool prints in a review comes right before the change and its
// prompt: its control characters are escaped, so that it cannot hide the
// review (concealed text, the alternate screen) and print a forged one.
func TestReviewEscapesToolOutput(t *testing.T) {
	forTierList(t, []string{"process"}, func(t *testing.T, tier string) {
		dir := undoWorkdir(t)
		script := `printf 'The run changed 0 path(s)\033[8m\033[?1049h\n'
printf 'Apply this change to the host? [y/N] \033[8m\n' >&2
printf 'modified by the tool\n' > out/keep.txt`
		tool := toolYAML(t, dir, tier, "hider", script, []string{"filesystem:write:./out"}, "")
		c := sandboxed(t, dir, "run", "--review", tool)
		if c.code != 0 {
			t.Fatalf("run --review: exit %d\n%s", c.code, c.stderr)
		}
		if strings.Contains(c.stdout+c.stderr, "\x1b") || !strings.Contains(c.stdout, `\x1b[8m`) || !strings.Contains(c.stderr, `\x1b[8m`) {
			t.Errorf("the tool's control characters reached the terminal before the review:\nstdout %q\nstderr %q", c.stdout, c.stderr)
		}
		if !strings.Contains(c.stderr, "modified  keep.txt") {
			t.Errorf("the review does not show the change:\n%s", c.stderr)
		}
	})
}

// manyFiles are n files of 16 KiB under dir/sub: a change big enough that
// an apply or an undo of it can be caught midway.
func manyFiles(n int, sub string) map[string]string {
	files := map[string]string{"out/keep.txt": "original keep\n", "out/gone.txt": "original gone\n"}
	body := strings.Repeat("0123456789abcdef", 1024)
	for i := 0; i < n; i++ {
		files[fmt.Sprintf("out/%s/%04d", sub, i)] = fmt.Sprintf("%d\n%s", i, body)
	}
	return files
}

// recordState is the head of run's change record: whether an apply or an
// undo of it is under way, or done.
func recordState(runID string) (applying, undoing, undone bool) {
	f, err := os.Open(filepath.Join(env.stateDir, "changes", runID, "record.json"))
	if err != nil {
		return false, false, false
	}
	defer f.Close()
	head := make([]byte, 512) // the state comes before the grants
	n, _ := f.Read(head)
	s := string(head[:n])
	return strings.Contains(s, `"applying": true`), strings.Contains(s, `"undoing": true`), strings.Contains(s, `"undone_at"`)
}

// waitFor polls cond every 2 ms for up to a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// newRunIDs lists the change records made since seen (run ids).
func newRunIDs(seen map[string]bool) []string {
	ents, _ := os.ReadDir(filepath.Join(env.stateDir, "changes"))
	var out []string
	for _, e := range ents {
		if !seen[e.Name()] {
			out = append(out, e.Name())
		}
	}
	return out
}

// The controller killed (SIGKILL) while it applies an approved review:
// the record, written before the first change reached the folder, says
// the apply is under way, and `sandboxed undo RUN_ID` puts the folder
// back byte for byte, whichever of its paths were applied.
func TestReviewApplyKilledIsUndone(t *testing.T) {
	forTierList(t, []string{"process"}, func(t *testing.T, tier string) {
		dir := workdir(t, manyFiles(1500, "f"))
		tool := toolYAML(t, dir, tier, "copier", `cp -r out/f out/g && rm out/gone.txt && printf 'modified\n' > out/keep.txt && echo done`,
			[]string{"filesystem:write:./out"}, "")
		out := filepath.Join(dir, "out")
		before := treeDigest(t, out)
		seen := map[string]bool{}
		for _, id := range newRunIDs(nil) {
			seen[id] = true
		}
		cmd := command("run", "--json", "--review", "--approve", "writes", tool)
		cmd.Dir = dir
		must(t, cmd.Start())
		var runID string
		waitFor(t, "the record says the apply is under way", func() bool {
			for _, id := range newRunIDs(seen) {
				if applying, _, _ := recordState(id); applying {
					runID = id
					return true
				}
			}
			return false
		})
		// Removals come first: once gone.txt is gone the folder is changed.
		waitFor(t, "the apply removes gone.txt", func() bool {
			_, err := os.Lstat(filepath.Join(out, "gone.txt"))
			return os.IsNotExist(err)
		})
		must(t, cmd.Process.Signal(syscall.SIGKILL))
		cmd.Wait()
		if b, _ := os.ReadFile(filepath.Join(out, "keep.txt")); string(b) == "original keep\n" {
			t.Logf("killed midway: keep.txt not yet applied")
		} else {
			t.Logf("killed after the last write (keep.txt applied)")
		}
		if applying, _, _ := recordState(runID); !applying {
			t.Fatal("the killed apply's record does not say it was under way")
		}
		if l := sandboxed(t, dir, "undo", "--list"); l.code != 0 || !listed(l.stdout, runID, "apply stopped midway") {
			t.Errorf("undo --list does not show the killed apply: exit %d\n%s%s", l.code, l.stdout, l.stderr)
		}
		u := sandboxed(t, dir, "undo", runID)
		if u.code != 0 {
			t.Fatalf("undo of the killed apply: exit %d\n%s%s", u.code, u.stdout, u.stderr)
		}
		if treeDigest(t, out) != before {
			t.Error("undo of the killed apply did not restore the folder byte for byte")
		}
		if c := sandboxed(t, dir, "gc"); c.code != 0 {
			t.Fatalf("gc: exit %d\n%s", c.code, c.stderr)
		}
	})
}

// An undo stopped midway holds its record: a second undo meanwhile is
// refused cleanly and changes nothing. Killed (SIGKILL), it is finished by
// the next `sandboxed undo RUN_ID`, byte for byte.
func TestUndoKilledMidwayIsFinished(t *testing.T) {
	dir := workdir(t, manyFiles(1500, "f"))
	tool := toolYAML(t, dir, "process", "remover", `rm -r out/f && printf 'modified\n' > out/keep.txt && echo new > out/new.txt && echo done`,
		[]string{"filesystem:write:./out"}, "")
	out := filepath.Join(dir, "out")
	before := treeDigest(t, out)
	r, c := runJSON(t, dir, tool)
	expect(t, r, c, "ok", 0)

	cmd := command("undo", r.RunID)
	cmd.Dir = dir
	must(t, cmd.Start())
	t.Cleanup(func() { // a failed check must not leave the stopped undo behind
		if cmd.ProcessState == nil {
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
		}
	})
	waitFor(t, "the record says the undo is under way", func() bool {
		_, undoing, _ := recordState(r.RunID)
		return undoing
	})
	// new.txt is removed first, then f/ is written back, file by file.
	waitFor(t, "the undo removes new.txt", func() bool {
		_, err := os.Lstat(filepath.Join(out, "new.txt"))
		return os.IsNotExist(err)
	})
	must(t, cmd.Process.Signal(syscall.SIGSTOP))
	// kill(2) returns before the process stops: a thread in a system
	// call finishes it first. Look until every thread is stopped.
	waitFor(t, "the undo stops", func() bool { return allStopped(cmd.Process.Pid) })
	if _, _, undone := recordState(r.RunID); undone {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		t.Fatal("the undo ended before it could be stopped")
	}
	stopped := treeDigest(t, out)
	second := sandboxed(t, dir, "undo", r.RunID)
	if second.code == 0 || !strings.Contains(second.stderr, "in use by another undo") {
		t.Errorf("a second undo beside the first: exit %d\n%s", second.code, second.stderr)
	}
	if treeDigest(t, out) != stopped {
		t.Error("the refused second undo changed the folder")
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	if treeDigest(t, out) == before {
		t.Log("the undo was stopped after its last write")
	}

	if l := sandboxed(t, dir, "undo", "--list"); l.code != 0 || !listed(l.stdout, r.RunID, "undo stopped midway") {
		t.Errorf("undo --list does not show the killed undo: exit %d\n%s%s", l.code, l.stdout, l.stderr)
	}
	again := sandboxed(t, dir, "undo", r.RunID)
	if again.code != 0 || !strings.Contains(again.stdout, "stopped midway") {
		t.Fatalf("undo after a killed undo: exit %d\n%s%s", again.code, again.stdout, again.stderr)
	}
	if treeDigest(t, out) != before {
		t.Error("the finished undo did not restore the folder byte for byte")
	}
	if last := sandboxed(t, dir, "undo", r.RunID); last.code == 0 || !strings.Contains(last.stderr, "already undone") {
		t.Errorf("undo after the finished one: exit %d %s", last.code, last.stderr)
	}
	if l := sandboxed(t, dir, "undo", "--list"); l.code != 0 || !listed(l.stdout, r.RunID, "undone") {
		t.Errorf("undo --list does not show the run undone: exit %d\n%s%s", l.code, l.stdout, l.stderr)
	}
}

// An undo waits for a run that holds the grant handed over to its tool
// (its files are the tool's uid's meanwhile; the landlock tier as root,
// a reduced tool rootless), says so, and then puts the folder back.
func TestUndoWaitsForARunHoldingTheGrant(t *testing.T) {
	forTierList(t, []string{"landlock"}, func(t *testing.T, tier string) {
		dir := undoWorkdir(t)
		iso, extra := undoTier(t, tier, dir)
		writer := toolYAML(t, dir, "process", "writer", `printf 'modified\n' > out/keep.txt && echo new > out/new.txt`, []string{"filesystem:write:./out"}, "")
		out := filepath.Join(dir, "out")
		before := treeDigest(t, out)
		r, c := runJSON(t, dir, writer)
		expect(t, r, c, "ok", 0)

		privilege := ""
		if env.runner != nil {
			privilege = "  execution-privilege: reduced\n" // handed over to its subordinate id
		}
		already := map[string]bool{} // holds of runs before this one
		if m, _ := filepath.Glob(filepath.Join(env.runtimeDir, "grants", "grant-*.lock")); m != nil {
			for _, h := range m {
				already[h] = true
			}
		}
		holder := filepath.Join(dir, "holder.yaml")
		must(t, os.WriteFile(holder, []byte("name: holder\ndescription: e2e tool holder\ntags: [read]\nbash: |\n  sleep 3; echo done\n"+
			"security:\n  isolation: "+iso+"\n"+privilege+"  required-permissions:\n    - \"filesystem:write:./out\"\n"), 0o644))
		giveToRunner(t, holder)
		cmd := command(append(append([]string{"run"}, extra...), holder)...)
		cmd.Dir = dir
		must(t, cmd.Start())
		ended := make(chan error, 1)
		go func() { ended <- cmd.Wait() }()
		waitFor(t, "the holder run holds the grant", func() bool {
			m, _ := filepath.Glob(filepath.Join(env.runtimeDir, "grants", "grant-*.lock"))
			for _, h := range m {
				if !already[h] {
					return true
				}
			}
			return false
		})

		u := sandboxed(t, dir, "undo", r.RunID)
		// The run lets go of the grant at its teardown, before it exits.
		holds, _ := filepath.Glob(filepath.Join(env.runtimeDir, "grants", "grant-*.lock"))
		for _, h := range holds {
			if already[h] {
				continue
			}
			if f, err := os.Open(h); err == nil {
				if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
					t.Errorf("undo ended while a run held the grant (%s)", h)
				}
				f.Close()
			}
		}
		if err := <-ended; err != nil {
			t.Errorf("the holder run: %v", err)
		}
		if u.code != 0 || !strings.Contains(u.stderr, "waiting for the runs using "+out) {
			t.Fatalf("undo beside a run holding the grant: exit %d\n%s%s", u.code, u.stdout, u.stderr)
		}
		if treeDigest(t, out) != before {
			t.Error("undo did not restore the folder byte for byte")
		}
	})
}

// listed reports whether `sandboxed undo --list` printed runID's line with
// state.
func listed(out, runID, state string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, runID+" ") && strings.Contains(line, "  "+state+"  ") {
			return true
		}
	}
	return false
}

// allStopped reports whether every thread of pid is stopped (state T), or
// the process has ended (Z: the caller then finds its work done).
func allStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		// The state follows the command, which is in parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) || !strings.ContainsRune("TtZ", rune(b[i+2])) {
			return false
		}
	}
	return true
}
