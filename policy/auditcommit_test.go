package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitQueued waits until n lines are queued behind the commit in progress.
func waitQueued(t testing.TB, c *auditCommitter, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		c.mu.Lock()
		got := len(c.pending)
		c.mu.Unlock()
		if got >= n {
			return
		}
	}
	t.Fatalf("%d lines never got queued", n)
}

func auditLine(t testing.TB, tool string, i int) []byte {
	b, err := json.Marshal(AuditRecord{Tool: tool, RunID: fmt.Sprint(i), Time: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestAuditGroupCommit holds the first commit's fsync until every other
// caller has queued its line: the rest must then go to disk together, with
// one more fsync, and no caller may return before the fsync covering its
// line has returned.
func TestAuditGroupCommit(t *testing.T) {
	const n = 16
	c := newAuditCommitter(filepath.Join(t.TempDir(), "audit.jsonl"))
	var returned, synced atomic.Int64 // callers answered; lines covered by a returned fsync
	first := make(chan struct{})
	var syncCalls atomic.Int64
	c.sync = func(f *os.File) error {
		if syncCalls.Add(1) == 1 {
			close(first)
			waitQueued(t, c, n-1)
		}
		// Only callers whose lines an earlier fsync covered may have returned.
		if r, s := returned.Load(), synced.Load(); r > s {
			t.Errorf("%d callers answered, but only %d lines were covered by a returned fsync", r, s)
		}
		err := f.Sync()
		if data, rerr := os.ReadFile(c.path); rerr == nil {
			synced.Store(int64(bytes.Count(data, []byte{'\n'})))
		}
		return err
	}

	var wg sync.WaitGroup
	appendOne := func(i int) {
		defer wg.Done()
		if err := c.append(auditLine(t, "t", i)); err != nil {
			t.Error(err)
		}
		returned.Add(1)
	}
	wg.Add(1)
	go appendOne(0)
	<-first
	for i := 1; i < n; i++ {
		wg.Add(1)
		go appendOne(i)
	}
	wg.Wait()
	if got := syncCalls.Load(); got != 2 {
		t.Errorf("%d fsyncs for %d concurrent appends, want 2 (the first line alone, then the %d queued behind it)", got, n, n-1)
	}
	recs, err := ReadAudit(c.path, AuditFilter{})
	if err != nil || len(recs) != n {
		t.Fatalf("%d records, %v; want %d", len(recs), err, n)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		seen[r.RunID] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct lines of %d", len(seen), n)
	}
}

// TestAuditGroupCommitFailedSync fails the fsync of a batch: every caller
// whose line it covered gets the error, and the next append succeeds.
func TestAuditGroupCommitFailedSync(t *testing.T) {
	const n = 8
	c := newAuditCommitter(filepath.Join(t.TempDir(), "audit.jsonl"))
	errDisk := errors.New("disk on fire")
	first := make(chan struct{})
	var calls atomic.Int64
	c.sync = func(f *os.File) error {
		switch calls.Add(1) {
		case 1:
			close(first)
			waitQueued(t, c, n-1)
			return f.Sync()
		case 2:
			return errDisk
		}
		return f.Sync()
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); errs[0] = c.append(auditLine(t, "t", 0)) }()
	<-first
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func(i int) { defer wg.Done(); errs[i] = c.append(auditLine(t, "t", i)) }(i)
	}
	wg.Wait()
	if errs[0] != nil {
		t.Errorf("the first batch's caller: %v, want nil", errs[0])
	}
	for i, err := range errs[1:] {
		if !errors.Is(err, errDisk) {
			t.Errorf("caller %d of the failed batch: %v, want the fsync's error", i+1, err)
		}
	}
	if err := c.append(auditLine(t, "after", 0)); err != nil {
		t.Errorf("append after a failed fsync: %v", err)
	}
	if got := calls.Load(); got != 3 {
		t.Errorf("%d fsyncs, want 3", got)
	}
}

// TestAuditGroupCommitTornTail: a line torn by a crashed writer is ended
// before the batch, so every line of the batch stays whole.
func TestAuditGroupCommitTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, []byte(`{"tool":"torn","ti`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newAuditCommitter(path)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := c.append(auditLine(t, "t", i)); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	recs, err := ReadAudit(path, AuditFilter{Tool: "t"})
	var corrupt *CorruptAuditError
	if err != nil && !errors.As(err, &corrupt) {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Errorf("%d whole lines after a torn one, want 4", len(recs))
	}
}

// TestCommitterForSharesPaths: two spellings of one log share a committer.
func TestCommitterForSharesPaths(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if committerFor("audit.jsonl") != committerFor(filepath.Join(dir, "audit.jsonl")) {
		t.Error("a relative and an absolute path to one log got two committers")
	}
}

// BenchmarkAppendAuditConcurrent appends one line from each of 32
// goroutines at once per iteration and reports the fsyncs that cost
// (fsyncs/op: about 1–2 with group commit, 32 without).
func BenchmarkAppendAuditConcurrent(b *testing.B) {
	const writers = 32
	c := newAuditCommitter(filepath.Join(b.TempDir(), "audit.jsonl"))
	lines := make([][]byte, writers)
	for i := range lines {
		lines[i] = auditLine(b, "bench", i)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				if err := c.append(lines[w]); err != nil {
					b.Error(err)
				}
			}(w)
		}
		wg.Wait()
	}
	b.StopTimer()
	c.mu.Lock()
	b.ReportMetric(float64(c.syncs)/float64(b.N), "fsyncs/op")
	b.ReportMetric(float64(writers), "lines/op")
	c.mu.Unlock()
}
