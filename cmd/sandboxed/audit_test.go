package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

func TestAudit(t *testing.T) {
	isolate(t)
	path := sandbox.AuditPath(sandbox.StateDir())
	now := time.Now().UTC()
	for _, r := range []policy.AuditRecord{
		{Time: now.Add(-10 * 24 * time.Hour), Tool: "hello", RunID: "run-old", Status: "ok", Tier: "process", User: "ada"},
		{Time: now.Add(-2 * time.Hour), Tool: "hello", RunID: "run-2h", Status: "failed", ExitCode: 3, Tier: "process", User: "ada"},
		{Time: now.Add(-5 * time.Minute), Tool: "fetch", RunID: "run-5m", Status: "denied", ExitCode: 126, Tier: "container", User: "bob"},
	} {
		if err := policy.AppendAudit(path, r); err != nil {
			t.Fatal(err)
		}
	}

	out, errOut, code := runApp(t, "audit")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "TIME") || !strings.Contains(lines[0], "RUN ID") {
		t.Fatalf("table:\n%s", out)
	}
	if f := strings.Fields(lines[3]); len(f) != 9 || f[2] != "fetch" || f[3] != "denied" || f[4] != "126" || f[5] != "container" || f[6] != "bob" || f[7] != "-" || f[8] != "run-5m" {
		t.Errorf("row %q", lines[3])
	}

	ids := func(args ...string) []string {
		t.Helper()
		out, errOut, code := runApp(t, append([]string{"audit", "--format", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		var recs []policy.AuditRecord
		if err := json.Unmarshal([]byte(out), &recs); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		var got []string
		for _, r := range recs {
			got = append(got, r.RunID)
		}
		return got
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "run-old run-2h run-5m"},
		{[]string{"--tool", "hello"}, "run-old run-2h"},
		{[]string{"--since", "24h"}, "run-2h run-5m"},
		{[]string{"--since", "30m"}, "run-5m"},
		{[]string{"--since", "30d"}, "run-old run-2h run-5m"},
		{[]string{"--since", "7d", "--tool", "hello"}, "run-2h"},
		{[]string{"--tool", "nothing"}, ""},
	} {
		if got := strings.Join(ids(tc.args...), " "); got != tc.want {
			t.Errorf("%v: got %q, want %q", tc.args, got, tc.want)
		}
	}
	if out, _, _ := runApp(t, "audit", "--format", "json", "--tool", "nothing"); strings.TrimSpace(out) != "[]" {
		t.Errorf("no records: %q, want []", out)
	}
	for _, bad := range [][]string{{"--since", "yesterday"}, {"--format", "csv"}, {"extra"}} {
		if _, _, code := runApp(t, append([]string{"audit"}, bad...)...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", bad, code, exitUsage)
		}
	}
}

func TestAuditMissingLog(t *testing.T) {
	isolate(t)
	out, errOut, code := runApp(t, "audit")
	if code != 0 || out != "" || !strings.Contains(errOut, "no audit records") {
		t.Errorf("exit %d, out %q, err %q", code, out, errOut)
	}
}
