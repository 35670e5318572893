package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

func TestGCRemovesHalfWrittenRecords(t *testing.T) {
	state := t.TempDir()
	runs := filepath.Join(state, "runs")
	staging := stagingDir(state)
	old := filepath.Join(staging, "20260101T000000-aaaaaaaaaaaa-123")
	fresh := filepath.Join(staging, "20260101T000000-bbbbbbbbbbbb-456")
	whole := filepath.Join(runs, "20260101T000000-cccccccccccc")
	legacy := filepath.Join(runs, ".20260101T000000-dddddddddddd-789") // staged beside the records
	for _, d := range []string{old, fresh, whole, legacy} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * halfRecordAge)
	for _, d := range []string{old, whole, legacy, staging} {
		os.Chtimes(d, past, past)
	}
	c := &Controller{StateDir: state, RuntimeDir: filepath.Join(state, "run")}

	// A run's own gc reads only the staging directory.
	reaped, err := c.gc(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(reaped) != 1 || !strings.Contains(reaped[0], old) {
		t.Errorf("a run's gc reaped %v, want only %s", reaped, old)
	}
	// sandboxed gc also reads the records' names for older leftovers.
	if reaped, err = c.GC(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(reaped) != 1 || !strings.Contains(reaped[0], legacy) {
		t.Errorf("gc reaped %v, want only %s", reaped, legacy)
	}
	for _, d := range []string{fresh, whole, staging} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
	}
}

// TestWriteRecordStages: a record is whole where it lands, and nothing of
// it stays in the staging directory.
func TestWriteRecordStages(t *testing.T) {
	state := t.TempDir()
	r := &Result{RunID: "20260101T000000-eeeeeeeeeeee", Status: StatusOK}
	if err := writeRecord(state, r, nil, []byte("out"), nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"result.json", "stdout"} {
		if _, err := os.Stat(filepath.Join(RunDir(state, r.RunID), name)); err != nil {
			t.Error(err)
		}
	}
	// An empty output is no file.
	if _, err := os.Stat(filepath.Join(RunDir(state, r.RunID), "stderr")); !os.IsNotExist(err) {
		t.Errorf("empty stderr: %v, want no file", err)
	}
	if left, _ := os.ReadDir(stagingDir(state)); len(left) != 0 {
		t.Errorf("left in staging: %v", left)
	}
}

func TestGCSkipsATierTheHostCannotRun(t *testing.T) {
	state := t.TempDir()
	noEngine := &fakeBackend{gcErr: fmt.Errorf("list containers: %w", &isolation.UnsupportedError{What: "the container tier: the Docker engine is unreachable"})}
	c := &Controller{StateDir: state, RuntimeDir: filepath.Join(state, "run")}
	if _, err := c.gc(context.Background(), noEngine); err != nil {
		t.Errorf("gc with a tier the host cannot run: %v", err)
	}
	broken := &fakeBackend{gcErr: errors.New("remove container x: in use")}
	if _, err := c.gc(context.Background(), broken); err == nil {
		t.Error("gc hid a backend's failure")
	}
}
