package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/tool"
)

func TestMask(t *testing.T) {
	params := map[string]string{
		"LOCATION": "Paris", "API_TOKEN": "t0k", "githubSecret": "s3", "db_password": "pw", "PASSWD": "p",
		"ssh_key": "k", "Credentials": "c", "PIN": "1234", "FORMAT": "3",
	}
	got := Mask(params, []string{"pin"})
	want := map[string]string{
		"LOCATION": "Paris", "API_TOKEN": Masked, "githubSecret": Masked, "db_password": Masked, "PASSWD": Masked,
		"ssh_key": Masked, "Credentials": Masked, "PIN": Masked, "FORMAT": "3",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Mask = %v, want %v", got, want)
	}
	if params["API_TOKEN"] != "t0k" {
		t.Error("Mask changed its input")
	}
	if Mask(nil, nil) != nil {
		t.Error("Mask(nil) is not nil")
	}
}

func TestMaskText(t *testing.T) {
	params := map[string]string{"TOKEN": "abc123", "LONG_TOKEN": "xxabc123xx", "EMPTY_SECRET": "", "CITY": "Paris"}
	vals := SensitiveValues(params, nil)
	if len(vals) != 2 {
		t.Fatalf("SensitiveValues = %q", vals)
	}
	got := MaskText("curl -H 'Authorization: abc123' https://x/?k=xxabc123xx&city=Paris", vals)
	want := "curl -H 'Authorization: ***' https://x/?k=***&city=Paris"
	if got != want {
		t.Errorf("MaskText = %q, want %q", got, want)
	}
	if got := MaskText("nothing", []string{""}); got != "nothing" {
		t.Errorf("empty value masked: %q", got)
	}
}

func TestAuditRecordJSON(t *testing.T) {
	r := baseRequest()
	r.Approvals = []string{"elevated"}
	r.Privilege = tool.PrivilegeElevated
	r.Grants = grants(t, "filesystem:read:.")
	d := Default().Decide(r)
	rec := NewAuditRecord("run-1", r, d)
	rec.Time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rec.Status, rec.ExitCode = "ok", 0
	rec.Egress = []AuditEgress{{Host: "a.com", Port: 443, Verdict: "allow", Connections: 1, BytesUp: 10, BytesDown: 20}}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"time", "user", "host", "run_id", "tool", "version", "definition_path", "approvals", "verdict",
		"decisions", "tier", "security_tier", "status", "exit_code", "egress"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON has no %q: %s", k, b)
		}
	}
	for _, k := range []string{"output", "commands", "error"} {
		if _, ok := m[k]; ok {
			t.Errorf("JSON has empty %q: %s", k, b)
		}
	}
	if !strings.Contains(string(b), `"approved_by":"--approve elevated"`) || !strings.Contains(string(b), `"bytes_down":20`) {
		t.Errorf("JSON = %s", b)
	}
	if rec.Tier != "process" || rec.SecurityTier != TierReadOnly || len(rec.Decisions) != len(d.Items) {
		t.Errorf("record = %+v", rec)
	}
}

func TestAppendReadAudit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state", "audit.jsonl")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, name := range []string{"a", "b", "a"} {
		rec := AuditRecord{Time: t0.Add(time.Duration(i) * time.Hour), RunID: fmt.Sprint(i), Tool: name, Status: "ok"}
		if err := AppendAudit(path, rec); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	all, err := ReadAudit(path, AuditFilter{})
	if err != nil || len(all) != 3 || all[2].RunID != "2" {
		t.Fatalf("ReadAudit = %+v, %v", all, err)
	}
	as, _ := ReadAudit(path, AuditFilter{Tool: "a"})
	if len(as) != 2 {
		t.Errorf("Tool filter: %d records", len(as))
	}
	since, _ := ReadAudit(path, AuditFilter{Since: t0.Add(time.Hour)})
	if len(since) != 2 || since[0].RunID != "1" {
		t.Errorf("Since filter: %+v", since)
	}
	if recs, err := ReadAudit(filepath.Join(dir, "none.jsonl"), AuditFilter{}); recs != nil || err != nil {
		t.Errorf("missing log: %v, %v", recs, err)
	}
	// A zero time is set on append.
	if err := AppendAudit(path, AuditRecord{Tool: "now"}); err != nil {
		t.Fatal(err)
	}
	recs, _ := ReadAudit(path, AuditFilter{Tool: "now"})
	if len(recs) != 1 || time.Since(recs[0].Time) > time.Minute {
		t.Errorf("time not set: %+v", recs)
	}
}

func TestReadAuditTornLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := AppendAudit(path, AuditRecord{Tool: "a", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// A writer killed mid-line.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":"2026-01-01T00:00:00Z","tool":"tor`)
	f.Close()
	recs, err := ReadAudit(path, AuditFilter{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("torn last line: %+v, %v", recs, err)
	}
	// The next append starts on a line of its own; the torn line is then
	// reported, and the records around it are still read.
	if err := AppendAudit(path, AuditRecord{Tool: "b", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	recs, err = ReadAudit(path, AuditFilter{})
	var ce *CorruptAuditError
	if !errors.Is(err, ErrAuditCorrupt) || !errors.As(err, &ce) || !reflect.DeepEqual(ce.Lines, []int{2}) {
		t.Errorf("err = %v, want line 2 corrupt", err)
	}
	if len(recs) != 2 || recs[0].Tool != "a" || recs[1].Tool != "b" {
		t.Errorf("records = %+v", recs)
	}
}

func TestPruneAudit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	now := time.Now().UTC()
	for _, age := range []time.Duration{40 * 24 * time.Hour, 31 * 24 * time.Hour, 2 * time.Hour, 0} {
		if err := AppendAudit(path, AuditRecord{Tool: fmt.Sprint(age), Time: now.Add(-age)}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := PruneAudit(path, 30*24*time.Hour)
	if err != nil || n != 2 {
		t.Fatalf("PruneAudit = %d, %v; want 2", n, err)
	}
	recs, err := ReadAudit(path, AuditFilter{})
	if err != nil || len(recs) != 2 {
		t.Fatalf("after prune: %+v, %v", recs, err)
	}
	if n, err := PruneAudit(path, 30*24*time.Hour); err != nil || n != 0 {
		t.Errorf("second prune = %d, %v", n, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after prune = %v", fi.Mode().Perm())
	}
	if n, err := PruneAudit(path+".missing", time.Hour); n != 0 || err != nil {
		t.Errorf("prune of a missing log = %d, %v", n, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("prune left files behind: %v", entries)
	}
}

// TestAppendAuditConcurrent appends from many goroutines and prunes
// meanwhile; every line must be whole and none lost.
func TestAppendAuditConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := AppendAudit(path, AuditRecord{Tool: "old", Time: time.Now().Add(-48 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 25
	var wg sync.WaitGroup
	big := strings.Repeat("x", 64<<10) // larger than a pipe buffer: one write must still be one line
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := AppendAudit(path, AuditRecord{Tool: "t", RunID: fmt.Sprint(w, "-", i), Output: big}); err != nil {
					t.Error(err)
				}
			}
		}(w)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := PruneAudit(path, time.Hour); err != nil {
			t.Error(err)
		}
	}()
	wg.Wait()
	recs, err := ReadAudit(path, AuditFilter{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != writers*each {
		t.Errorf("%d records, want %d", len(recs), writers*each)
	}
}

// TestAppendAuditAcrossProcesses appends from child processes (this test
// binary re-executed) to check the flock between processes.
func TestAppendAuditAcrossProcesses(t *testing.T) {
	if p := os.Getenv("SANDBOXED_AUDIT_CHILD"); p != "" {
		// Five goroutines at once, so group commits of several lines
		// interleave with the other processes' ones.
		var wg sync.WaitGroup
		failed := atomic.Bool{}
		for g := 0; g < 5; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 10; i++ {
					if err := AppendAudit(p, AuditRecord{Tool: "child", Output: strings.Repeat("y", 8<<10)}); err != nil {
						fmt.Fprintln(os.Stderr, err)
						failed.Store(true)
					}
				}
			}()
		}
		wg.Wait()
		if failed.Load() {
			os.Exit(1)
		}
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var cmds []*exec.Cmd
	for i := 0; i < 4; i++ {
		c := exec.Command(os.Args[0], "-test.run=^TestAppendAuditAcrossProcesses$")
		c.Env = append(os.Environ(), "SANDBOXED_AUDIT_CHILD="+path)
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := ReadAudit(path, AuditFilter{})
	if err != nil || len(recs) != 200 {
		t.Errorf("%d records, %v; want 200", len(recs), err)
	}
}
