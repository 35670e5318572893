package sbinit

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

// maskProbe runs in a child of TestLandlockMasksByEntry: it confines
// itself to a read of dir with the masks of maskExcept (and a write of
// dir/other), says "ready",
// waits for its parent to change the folder, then reports each read.
func maskProbe(dir string) {
	fail := func(err error) {
		fmt.Println("probe:", err)
		os.Exit(1)
	}
	if err := ll.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail(err)
	}
	rs, handled, err := landlockRuleset(LandlockABI())
	if err != nil {
		fail(err)
	}
	p := LandlockPath{Path: dir, Exec: true}
	for _, e := range maskExcept {
		p.Except = append(p.Except, filepath.Join(dir, e))
	}
	// /proc: restricting every thread reads /proc/self/task.
	if err := addLandlockRules(rs, handled, -1, []LandlockPath{p, {Path: filepath.Join(dir, "other"), Write: true}, {Path: "/proc"}}); err != nil {
		fail(err)
	}
	if err := ll.AllThreadsLandlockRestrictSelf(rs, 0); err != nil {
		fail(err)
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fail(err)
	}
	for _, name := range maskReads {
		_, err := os.ReadFile(filepath.Join(dir, name))
		fmt.Printf("read %s=%s\n", name, errnoName(err))
	}
	names, err := os.ReadDir(dir)
	listed := []string{}
	for _, n := range names {
		listed = append(listed, n.Name())
	}
	fmt.Printf("list=%s %s\n", errnoName(err), strings.Join(listed, ","))
	_, err = os.ReadDir(filepath.Join(dir, ".aws"))
	fmt.Printf("list .aws=%s\n", errnoName(err))
	fmt.Printf("rename .env2=%s\n", errnoName(os.Rename(filepath.Join(dir, ".env2"), filepath.Join(dir, "sub", "taken"))))
	fmt.Printf("link .env2=%s\n", errnoName(os.Link(filepath.Join(dir, ".env2"), filepath.Join(dir, "other", "stolen"))))
	_, err = os.ReadFile(filepath.Join(dir, "other", "stolen"))
	fmt.Printf("read stolen=%s\n", errnoName(err))
	fmt.Printf("symlink=%s\n", errnoName(os.Symlink("../.env2", filepath.Join(dir, "other", "sym"))))
	_, err = os.ReadFile(filepath.Join(dir, "other", "sym"))
	fmt.Printf("read sym=%s\n", errnoName(err))
	f, err := os.OpenFile(filepath.Join(dir, ".env2"), unix.O_PATH, 0)
	if err == nil {
		_, err = os.ReadFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	}
	fmt.Printf("read fd=%s\n", errnoName(err))
	os.Exit(0)
}

// The masked paths of the probe, and what it reads.
var (
	maskExcept = []string{".env", ".env2", ".aws", "sub/.env.local"}
	maskReads  = []string{"readme.txt", ".env", "renamed-secret", "renamed-readme", "new.txt", "sub/notes.txt",
		"sub/.env.local", ".aws/credentials", "other/notes.txt", "other/new.txt", "other/link-to-env2", "alias-of-env2"}
)

func init() {
	if d := os.Getenv("SBINIT_MASK_PROBE"); d != "" {
		maskProbe(d)
	}
}

// TestLandlockMasksByEntry checks the Landlock rules of a read path with
// masks (LandlockPath.Except) as the kernel enforces them: the ordinary
// files are read and the masked ones are not, their names stay listed (a
// masked folder's too);
// the rules hold inodes, so a masked file renamed inside the folder once
// the rules are made stays unreadable, an ordinary one renamed stays
// readable, and a file created later in a listed folder is unreadable;
// the tool cannot rename a masked file; a hard link to a masked file in
// a folder read as a whole is the documented gap (readable there), one
// beside it is not; and the tool, with a write grant beside the masks,
// cannot read a masked file through a hard link it makes there (Landlock
// refuses a link that would gain rights: EXDEV), a symlink it makes there,
// or /proc/self/fd of an O_PATH descriptor of it.
func TestLandlockMasksByEntry(t *testing.T) {
	if abi := LandlockABI(); abi < 1 {
		testenv.Need(t, "Landlock", fmt.Errorf("this kernel has none"))
	}
	dir := t.TempDir()
	for name, body := range map[string]string{
		"readme.txt": "PLAIN", "readme-to-move": "PLAIN", ".env": "SECRET", ".env2": "SECRET", ".aws/credentials": "SECRET",
		"sub/notes.txt": "PLAIN", "sub/.env.local": "SECRET", "other/notes.txt": "PLAIN",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"other/link-to-env2", "alias-of-env2"} {
		if err := os.Link(filepath.Join(dir, ".env2"), filepath.Join(dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SBINIT_MASK_PROBE="+dir)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(outp)
	if l, err := out.ReadString('\n'); err != nil || l != "ready\n" {
		cmd.Wait()
		t.Fatalf("probe: %q %v", l, err)
	}
	// Once the rules are made: renames and new files, by someone else.
	for _, mv := range [][2]string{{".env", "renamed-secret"}, {"readme-to-move", "renamed-readme"}} {
		if err := os.Rename(filepath.Join(dir, mv[0]), filepath.Join(dir, mv[1])); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"new.txt", "other/new.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("LATER"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in.Write([]byte("go\n"))
	rest, _ := bufio.NewReader(out).ReadString(0)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("probe: %v\n%s", err, rest)
	}
	want := map[string]string{
		"read readme.txt": "ok", "read .env": "ENOENT", "read renamed-secret": "EACCES", "read renamed-readme": "ok",
		"read new.txt": "EACCES", "read sub/notes.txt": "ok", "read sub/.env.local": "EACCES", "read .aws/credentials": "EACCES",
		"read other/notes.txt": "ok", "read other/new.txt": "ok", "read other/link-to-env2": "ok", "read alias-of-env2": "EACCES",
		// Listing is a right of the whole hierarchy: a masked folder's
		// names are listed too, its files' contents are not read.
		"list .aws": "ok", "rename .env2": "EACCES",
		"link .env2": "EXDEV", "read stolen": "ENOENT", "read sym": "EACCES", "read fd": "EACCES",
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(rest), "\n") {
		k, v, _ := strings.Cut(l, "=")
		got[k] = v
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if l := got["list"]; !strings.HasPrefix(l, "ok ") || !slices.Contains(strings.Split(strings.TrimPrefix(l, "ok "), ","), ".env2") {
		t.Errorf("the folder's listing %q does not show the masked names", l)
	}
	if t.Failed() {
		t.Logf("probe:\n%s", rest)
	}
}

// LandlockPath.same compares every field: a field added and not compared
// would let a warm init's ruleset serve a run whose rules differ.
func TestLandlockPathSameComparesEveryField(t *testing.T) {
	if n := reflect.TypeOf(LandlockPath{}).NumField(); n != 8 {
		t.Fatalf("LandlockPath has %d fields: compare the new ones in same, then update this count", n)
	}
	a := LandlockPath{Path: "/a", Except: []string{"/a/b"}}
	if !a.same(a) || a.same(LandlockPath{Path: "/a"}) || a.same(LandlockPath{Path: "/a", Except: []string{"/a/c"}}) {
		t.Error("same")
	}
}
