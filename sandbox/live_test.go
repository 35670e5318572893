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
	reaped, err := c.gc(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(reaped) != 1 || !strings.Contains(reaped[0], old) {
		t.Errorf("a run's gc reaped %v, want only %s", reaped, old)
	}
	// sandboxed gc also reads the records' names for older leftovers.
	rep, err := c.GC(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	reaped = rep.Removed
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
	if _, err := c.gc(context.Background(), nil, noEngine); err != nil {
		t.Errorf("gc with a tier the host cannot run: %v", err)
	}
	broken := &fakeBackend{gcErr: errors.New("remove container x: in use")}
	if _, err := c.gc(context.Background(), nil, broken); err == nil {
		t.Error("gc hid a backend's failure")
	}
}

// askingBackend is a tier whose leftovers belong to the given runs: its GC
// asks keep about each and reports those it would reap.
type askingBackend struct {
	fakeBackend
	runs []string
}

func (a *askingBackend) GC(_ context.Context, keep func(string) bool) ([]string, error) {
	var reaped []string
	for _, id := range a.runs {
		if !keep(id) {
			reaped = append(reaped, "cgroup of "+id)
		}
	}
	return reaped, nil
}

// TestGCJudgesByTheLock: gc reaps a run only when its directory is here
// and its lock is free; a run it cannot judge is left alone and reported.
func TestGCJudgesByTheLock(t *testing.T) {
	rt := filepath.Join(t.TempDir(), "run")
	if err := ensurePrivateDir(rt); err != nil {
		t.Fatal(err)
	}
	const (
		held    = "20260101T000000-aaaaaaaaaaaa" // a live controller's
		free    = "20260101T000000-bbbbbbbbbbbb" // a crashed controller's
		nowhere = "20260101T000000-cccccccccccc" // another host's or container's
		nolock  = "20260101T000000-dddddddddddd" // an older version's
	)
	release, err := holdRun(HostDir(rt, held))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	// A crashed controller leaves its directory and an unlocked file.
	if err := os.MkdirAll(HostDir(rt, free), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(HostDir(rt, free), "live.lock"), nil, 0o600)
	os.MkdirAll(HostDir(rt, nolock), 0o700)
	// One that died creating its directory, long ago, and one creating it now.
	oldTmp := filepath.Join(rt, ".creating-20260101T000000-eeeeeeeeeeee-1")
	newTmp := filepath.Join(rt, ".creating-20260101T000000-ffffffffffff-2")
	notOurs := filepath.Join(rt, "something-else")
	for _, d := range []string{oldTmp, newTmp, notOurs} {
		os.MkdirAll(d, 0o700)
	}
	past := time.Now().Add(-2 * creatingAge)
	os.Chtimes(oldTmp, past, past)
	os.Chtimes(notOurs, past, past)

	c := &Controller{RuntimeDir: rt, Backends: map[isolation.Tier]isolation.Backend{
		isolation.TierProcess: &askingBackend{runs: []string{held, free, nowhere, nolock}},
	}}
	rep, err := c.GC(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(rep.Removed, "\n")
	for _, want := range []string{"cgroup of " + free, "run dir " + HostDir(rt, free), "half-created run dir " + oldTmp} {
		if !strings.Contains(got, want) {
			t.Errorf("removed:\n%s\nwant %q", got, want)
		}
	}
	if len(rep.Removed) != 3 {
		t.Errorf("removed %d, want 3:\n%s", len(rep.Removed), got)
	}
	var left []string
	for _, u := range rep.LeftAlone {
		if u.Reason == "" {
			t.Errorf("run %s left alone without a reason", u.RunID)
		}
		left = append(left, u.RunID)
	}
	if strings.Join(left, " ") != nowhere+" "+nolock {
		t.Errorf("left alone %v, want %s and %s", left, nowhere, nolock)
	}
	for _, d := range []string{HostDir(rt, held), HostDir(rt, nolock), newTmp, notOurs} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v, want it kept", d, err)
		}
	}
	if !c.Live(held) || c.Live(free) || c.Live(nowhere) {
		t.Error("Live disagrees with the locks")
	}
}
