package kubernetes

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	), root, []string{"skipped"}, 1<<20)
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
	if err := extractInto(tarOf(t, [2]string{"../escape", "X"}), root, nil, 1<<20); err == nil {
		t.Errorf("a climbing entry was accepted")
	}
	if err := extractInto(tarOf(t, [2]string{"big", "0123456789"}), root, nil, 5); err == nil || !strings.Contains(err.Error(), "more than 5 bytes") {
		t.Errorf("over the cap: %v", err)
	}
}
