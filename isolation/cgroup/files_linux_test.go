package cgroup

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestReadWriteFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	long := bytes.Repeat([]byte("12345 "), 1000) // more than one read
	if err := writeFile(p, long); err != nil {
		t.Fatal(err)
	}
	got, err := readFile(p)
	if err != nil || !bytes.Equal(got, long) {
		t.Fatalf("readFile: %d bytes, %v; want %d bytes", len(got), err, len(long))
	}
	if pids, err := readProcs(p); err != nil || len(pids) != 1000 || pids[999] != 12345 {
		t.Errorf("readProcs: %d pids, %v", len(pids), err)
	}
	missing := filepath.Join(filepath.Dir(p), "missing")
	if _, err := readFile(missing); !os.IsNotExist(err) {
		t.Errorf("readFile of a missing file: %v, want not-exist", err)
	}
	if err := writeFile(missing, []byte("1")); !os.IsNotExist(err) {
		t.Errorf("writeFile of a missing file: %v, want not-exist (it must not create it)", err)
	}
}
