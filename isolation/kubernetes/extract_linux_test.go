package kubernetes

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func tarOf(t *testing.T, entries ...[2]string) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		if strings.HasSuffix(e[0], "/") {
			tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: e[0], Mode: 0o755})
			continue
		}
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e[0], Mode: 0o644, Size: int64(len(e[1]))})
		tw.Write([]byte(e[1]))
	}
	tw.Close()
	return &b
}

func TestExtractIntoStaysBeneath(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "victim"), []byte("ORIGINAL"), 0o644)
	os.Symlink(filepath.Join(outside, "victim"), filepath.Join(root, "link"))
	os.Symlink(outside, filepath.Join(root, "dirlink"))
	err := extractInto(tarOf(t,
		[2]string{"sub/", ""}, [2]string{"sub/new.txt", "NEW"}, [2]string{"top.txt", "TOP"},
		[2]string{"link", "EVIL"}, [2]string{"dirlink/victim", "EVIL"}, [2]string{"skipped/x", "S"},
	), root, []string{"skipped"}, 1<<20, map[string]bool{})
	if err == nil || !strings.Contains(err.Error(), "link") {
		t.Errorf("writes through symlinks were not reported: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "victim")); string(b) != "ORIGINAL" {
		t.Errorf("a write went through a symlink: %q", b)
	}
	for name, want := range map[string]string{"sub/new.txt": "NEW", "top.txt": "TOP"} {
		if b, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "skipped")); err == nil {
		t.Errorf("a skipped path was written")
	}
	if err := extractInto(tarOf(t, [2]string{"../escape", "X"}), root, nil, 1<<20, map[string]bool{}); err == nil {
		t.Errorf("a climbing entry was accepted")
	}
	if err := extractInto(tarOf(t, [2]string{"big", "0123456789"}), root, nil, 5, map[string]bool{}); err == nil || !strings.Contains(err.Error(), "more than 5 bytes") {
		t.Errorf("over the cap: %v", err)
	}
}

func TestRemoveGoneDeletesOnlyWhatTheSandboxDeleted(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	for _, f := range []string{"kept", "deleted", "sub/deleted", "skip/x"} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(root, f), []byte(f), 0o644)
	}
	os.WriteFile(filepath.Join(outside, "victim"), []byte("V"), 0o644)
	os.Symlink(outside, filepath.Join(root, "link"))
	was, err := regularFiles(root, []string{"skip"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(was, ",") != "deleted,kept,sub/deleted" {
		t.Fatalf("regular files %v", was)
	}
	// A path through the symlink, as a forged list would have it.
	was = append(was, "link/victim")
	if err := removeGone(root, was, map[string]bool{"kept": true}); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]bool{"kept": true, "deleted": false, "sub/deleted": false, "skip/x": true} {
		if _, err := os.Stat(filepath.Join(root, f)); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", f, err == nil, want)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "victim")); err != nil {
		t.Errorf("a file outside the grant was removed")
	}
}

// A path the host holds as a FIFO or a device is not written: opening a
// FIFO no one reads blocks the copy back for good, and a device would be
// written the tool's bytes.
func TestExtractIntoLeavesSpecialFiles(t *testing.T) {
	root := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- extractInto(tarOf(t, [2]string{"fifo", "EVIL"}, [2]string{"ok.txt", "OK"}), root, nil, 1<<20, map[string]bool{})
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "fifo") {
			t.Errorf("a write over a FIFO was not reported: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the copy back blocked on a FIFO of the host")
	}
	if b, err := os.ReadFile(filepath.Join(root, "ok.txt")); err != nil || string(b) != "OK" {
		t.Errorf("ok.txt: %q %v", b, err)
	}
}
