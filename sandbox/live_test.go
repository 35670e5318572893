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
	old := filepath.Join(runs, ".20260101T000000-aaaaaaaaaaaa-123")
	fresh := filepath.Join(runs, ".20260101T000000-bbbbbbbbbbbb-456")
	whole := filepath.Join(runs, "20260101T000000-cccccccccccc")
	for _, d := range []string{old, fresh, whole} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * halfRecordAge)
	os.Chtimes(old, past, past)
	os.Chtimes(whole, past, past)
	c := &Controller{StateDir: state, RuntimeDir: filepath.Join(state, "run")}
	reaped, err := c.GC(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(reaped) != 1 || !strings.Contains(reaped[0], old) {
		t.Errorf("reaped %v, want only %s", reaped, old)
	}
	for _, d := range []string{fresh, whole} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
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
