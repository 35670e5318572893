package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	if err := writeRecord(state, r, nil, []byte("out"), nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"result.json", "stdout", "stderr"} {
		if _, err := os.Stat(filepath.Join(RunDir(state, r.RunID), name)); err != nil {
			t.Error(err)
		}
	}
	if left, _ := os.ReadDir(stagingDir(state)); len(left) != 0 {
		t.Errorf("left in staging: %v", left)
	}
}

// TestWriteRecordStaged: a record staged while its run ran lands whole,
// with what the run's end wrote in its files; a staging directory that
// does not fit the record (no plan where one was staged, too old to be
// safe from gc) is removed and the record written afresh.
func TestWriteRecordStaged(t *testing.T) {
	plan := &isolation.Plan{RunID: "20260101T000000-aaaaaaaaaaaa", Tool: "t"}
	tests := []struct {
		name     string
		withPlan bool // the record written has a plan
		age      bool // the staging directory is older than gc allows
		files    []string
	}{
		{"staged", true, false, []string{"plan.json", "result.json", "stderr", "stdout"}},
		{"staged with a plan, written without", false, false, []string{"result.json", "stderr", "stdout"}},
		{"staged too long ago", true, true, []string{"plan.json", "result.json", "stderr", "stdout"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := t.TempDir()
			runID := fmt.Sprintf("20260101T000000-%012d", i)
			staged := stageRecord(state, runID, true)
			<-staged.done
			if staged.dir == "" {
				t.Fatal("nothing staged")
			}
			if tt.age {
				staged.made = staged.made.Add(-halfRecordAge)
			}
			r := &Result{RunID: runID, Status: StatusOK, Stdout: "out"}
			var p *isolation.Plan
			if tt.withPlan {
				p = plan
			}
			if err := writeRecord(state, r, p, []byte("out"), []byte("err"), staged); err != nil {
				t.Fatal(err)
			}
			var got []string
			entries, err := os.ReadDir(RunDir(state, runID))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				got = append(got, e.Name())
			}
			if !slices.Equal(got, tt.files) {
				t.Errorf("record holds %v, want %v", got, tt.files)
			}
			for name, want := range map[string]string{"stdout": "out", "stderr": "err"} {
				if b, _ := os.ReadFile(filepath.Join(RunDir(state, runID), name)); string(b) != want {
					t.Errorf("%s holds %q, want %q", name, b, want)
				}
			}
			var res Result
			if b, err := os.ReadFile(filepath.Join(RunDir(state, runID), "result.json")); err != nil || json.Unmarshal(b, &res) != nil || res.RunID != runID {
				t.Errorf("result.json: %v, run id %q", err, res.RunID)
			}
			if left, _ := os.ReadDir(stagingDir(state)); len(left) != 0 {
				t.Errorf("left in staging: %v", left)
			}
		})
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
