package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stepsResult is `run --json` with the per-step part.
type stepsResult struct {
	result
	Steps []struct {
		Name     string `json:"name"`
		Status   string `json:"status"`
		ExitCode int    `json:"exit_code"`
		Skipped  bool   `json:"skipped"`
		Attempts int    `json:"attempts"`
		Fallback bool   `json:"fallback"`
		Cleanup  bool   `json:"cleanup"`
		Reason   string `json:"reason"`
	} `json:"steps"`
	Notes []string `json:"notes"`
}

func runSteps(t *testing.T, dir string, args ...string) (stepsResult, cli) {
	t.Helper()
	c := sandboxed(t, dir, append([]string{"run", "--json"}, args...)...)
	var r stepsResult
	if err := json.Unmarshal([]byte(c.stdout), &r); err != nil {
		t.Fatalf("run --json %v: exit %d, not a result: %v\nstdout: %s\nstderr: %s", args, c.code, err, c.stdout, c.stderr)
	}
	return r, c
}

func writeFile(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func example(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "examples", "tools", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParallelStepsOverlap(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"out/.keep": ""})
		tool := writeFile(t, filepath.Join(dir, "par.yaml"), `name: par
description: three one-second steps at once
steps:
  - name: setup
    bash: echo ready
  - name: one
    bash: date +%s%N > out/one.start; sleep 1; date +%s%N > out/one.end
    parallel: true
    wait-for: [setup]
  - name: two
    bash: date +%s%N > out/two.start; sleep 1; date +%s%N > out/two.end
    parallel: true
    wait-for: [setup]
  - name: three
    bash: date +%s%N > out/three.start; sleep 1; date +%s%N > out/three.end
    parallel: true
    wait-for: [setup]
  - name: report
    bash: ls out | wc -l
    wait-for: [one, two, three]
security:
  required-permissions: ["filesystem:write:./out"]
tags: [write]
`)
		r, c := runSteps(t, dir, "--isolation", tier, tool)
		expect(t, r.result, c, "ok", 0)
		stamp := func(n string) int64 {
			b, err := os.ReadFile(filepath.Join(dir, "out", n))
			if err != nil {
				t.Fatal(err)
			}
			v, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			return v
		}
		names := []string{"one", "two", "three"}
		for _, a := range names {
			for _, b := range names {
				if stamp(a+".start") >= stamp(b+".end") {
					t.Errorf("%s started after %s ended: the parallel steps did not overlap", a, b)
				}
			}
		}
		// No wall-clock bound: the stamps above prove the overlap, and a
		// loaded machine may take longer than 2 s for three 1 s steps.
		if r.Stdout != "ready\n6\n" { // six stamps
			t.Errorf("stdout %q", r.Stdout)
		}
	})
}

func TestCommitStatsExample(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"commits.json": `[
	 {"sha": "1", "commit": {"author": {"name": "Ada"}, "message": "quote ' and == and $(id)"}},
	 {"sha": "2", "commit": {"author": {"name": "Bob"}, "message": "x"}},
	 {"sha": "3", "commit": {"author": {"name": "Ada"}, "message": "y"}}
	]`})
		r, c := runSteps(t, dir, "--isolation", tier, example(t, "commit-stats"), "FILE=commits.json")
		expect(t, r.result, c, "ok", 0)
		if r.Stdout != "Ada: 2 commits\nBob: 1 commits\n" {
			t.Errorf("stdout %q: want only the formatted lines (buffer-mode steps are not shown)", r.Stdout)
		}
		if len(r.Steps) != 3 {
			t.Errorf("steps %+v", r.Steps)
		}
	})
}

func TestFetchFallbackExample(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"primary/README": "from primary\n", "mirror/README": "from mirror\n"})
		r, c := runSteps(t, dir, "--isolation", tier, example(t, "fetch-fallback"))
		expect(t, r.result, c, "ok", 0)
		if r.Steps[1].Name != "try-mirror" || !r.Steps[1].Skipped || r.Steps[1].Status != "skipped" {
			t.Errorf("try-mirror %+v: want skipped by its run-condition", r.Steps[1])
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "fetched", "README")); string(b) != "from primary\n" {
			t.Errorf("fetched/README %q", b)
		}

		dir = workdir(t, map[string]string{"mirror/README": "from mirror\n"})
		r, c = runSteps(t, dir, "--isolation", tier, example(t, "fetch-fallback"))
		expect(t, r.result, c, "ok", 0)
		if r.Steps[0].Status != "failed" || r.Steps[0].Attempts != 2 {
			t.Errorf("try-primary %+v: want failed after 2 attempts", r.Steps[0])
		}
		if !strings.Contains(r.Stdout, "copied from mirror") || !strings.Contains(r.Stdout, "Successfully fetched") {
			t.Errorf("stdout %q", r.Stdout)
		}

		dir = workdir(t, map[string]string{"elsewhere/.keep": ""})
		r, c = runSteps(t, dir, "--isolation", tier, example(t, "fetch-fallback"))
		expect(t, r.result, c, "failed", 1)
		if !r.Steps[1].Fallback || r.Steps[1].ExitCode != 3 || !strings.Contains(r.Stderr, "mirror unavailable") {
			t.Errorf("try-mirror %+v stderr %q: want its fallback to have run", r.Steps[1], r.Stderr)
		}
	})
}

func TestParallelBuildExample(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{
			"frontend/a.js": "a();\n", "frontend/b.js": "b();\n",
			"backend/main.txt": "server\n", "docs/guide.md": "# Guide\n",
		})
		r, c := runSteps(t, dir, "--isolation", tier, example(t, "parallel-build"))
		expect(t, r.result, c, "ok", 0)
		if b, _ := os.ReadFile(filepath.Join(dir, "dist", "app.js")); string(b) != "a();\nb();\n" {
			t.Errorf("dist/app.js %q", b)
		}
		if _, err := os.Stat(filepath.Join(dir, "dist", "docs", "guide.md")); err != nil {
			t.Error(err)
		}
		if len(r.Steps) == 0 {
			t.Fatalf("no steps reported: %+v", r.result)
		}
		last := r.Steps[len(r.Steps)-1]
		if !last.Cleanup || last.Status != "ok" {
			t.Errorf("last step %+v: want the cleanup command", last)
		}

		// A failing build skips the report, and the run fails with its code.
		os.RemoveAll(filepath.Join(dir, "dist"))
		os.Remove(filepath.Join(dir, "backend", "main.txt"))
		r, c = runSteps(t, dir, "--isolation", tier, example(t, "parallel-build"))
		expect(t, r.result, c, "failed", 1)
		for _, s := range r.Steps {
			if s.Name == "report" && (!s.Skipped || !strings.Contains(s.Reason, "build-backend")) {
				t.Errorf("report %+v: want skipped because build-backend failed", s)
			}
		}
	})
}

func TestConditionValuesAreLiterals(t *testing.T) {
	begin(t)
	dir := workdir(t, nil)
	tool := writeFile(t, filepath.Join(dir, "cond.yaml"), `name: cond
description: an output that looks like an expression stays a value
steps:
  - name: probe
    bash: echo 'x" == "x" || "1'
  - name: guarded
    bash: echo GUARDED-RAN
    run-condition: '{probe.output} == "ok" && {probe.exit-code} == 0'
  - name: always
    bash: echo ALWAYS-RAN
    run-condition: '{probe.exit-code} == 0 && ({guarded.exit-code} == "" || {guarded.exit-code} != 0)'
tags: [read]
`)
	r, c := runSteps(t, dir, tool)
	expect(t, r.result, c, "ok", 0)
	if strings.Contains(r.Stdout, "GUARDED-RAN") || !strings.Contains(r.Stdout, "ALWAYS-RAN") {
		t.Errorf("stdout %q", r.Stdout)
	}
}

func TestCleanupAfterTimeout(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"out/.keep": ""})
		tool := writeFile(t, filepath.Join(dir, "slow.yaml"), `name: slow
description: runs past its time limit
steps:
  - name: hang
    bash: echo started > out/state; sleep 60
  - name: never
    bash: echo never > out/never
resources:
  timeout: 3000
  cleanup:
    - final-command: "echo cleaned > out/cleanup-ran"
security:
  required-permissions: ["filesystem:write:./out"]
tags: [write]
`)
		r, c := runSteps(t, dir, "--isolation", tier, tool)
		expect(t, r.result, c, "timeout", 124)
		if b, err := os.ReadFile(filepath.Join(dir, "out", "cleanup-ran")); err != nil || string(b) != "cleaned\n" {
			t.Errorf("the cleanup command did not run after the timeout: %v %q", err, b)
		}
		if _, err := os.Stat(filepath.Join(dir, "out", "never")); err == nil {
			t.Error("a step after the timeout ran")
		}
		if len(r.Steps) == 0 {
			t.Fatalf("no steps reported: %+v", r.result)
		}
		last := r.Steps[len(r.Steps)-1]
		if !last.Cleanup || last.Status != "ok" {
			t.Errorf("steps %+v: want the cleanup reported", r.Steps)
		}
	})
}

func TestSubToolBeyondCallerRefused(t *testing.T) {
	begin(t)
	dir := workdir(t, map[string]string{"out/.keep": "", ".sandboxed/tools/writer.yaml": `name: writer
description: writes into DIR
version: 1.2.0
bash: echo written > {DIR}/w.txt && echo WRITER-RAN
parameters:
  DIR:
    type: string
    description: where
    required: true
security:
  required-permissions: ["filesystem:write:{DIR}"]
tags: [write]
`})
	caller := func(perm, constraint string) string {
		return writeFile(t, filepath.Join(dir, "caller.yaml"), `name: caller
description: uses writer
dependencies:
  - tool: writer
    version: "`+constraint+`"
    required: true
steps:
  - name: first
    bash: echo FIRST-RAN > out/first
  - name: write
    use-tool: writer
    with:
      DIR: out
  - name: show
    bash: cat out/w.txt
security:
  required-permissions: ["`+perm+`"]
tags: [write]
`)
	}
	// Asks for write where the caller may only read: refused before anything runs.
	r, c := runSteps(t, dir, caller("filesystem:read:./out", ">=1.0.0"))
	expect(t, r.result, c, "denied", 126)
	if r.Error == nil || !strings.Contains(r.Error.Message, "filesystem:write:out") || !strings.Contains(r.Error.Message, "writer") {
		t.Errorf("error %+v: want the sub-tool's extra permission named", r.Error)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "first")); err == nil {
		t.Error("a step ran before the refusal")
	}
	// Covered: the sub-tool runs in the same sandbox, its output is the step's.
	r, c = runSteps(t, dir, caller("filesystem:write:./out", "^1.0.0"))
	expect(t, r.result, c, "ok", 0)
	if !strings.Contains(r.Stdout, "WRITER-RAN") || !strings.Contains(r.Stdout, "written") {
		t.Errorf("stdout %q", r.Stdout)
	}
	// A required dependency in the wrong version refuses the run.
	r, _ = runSteps(t, dir, caller("filesystem:write:./out", "^2.0.0"))
	if r.Status == "ok" || r.Error == nil || !strings.Contains(r.Error.Message, `writer is version 1.2.0; "^2.0.0" is needed`) {
		t.Errorf("status %s error %+v", r.Status, r.Error)
	}
}

// Ctrl-C (SIGINT) to sandboxed mid-run: the cleanup commands still run,
// the result says USER_CANCELLED, and the leak check finds nothing left
// (no process, cgroup, container, mount or socket).
func TestCleanupAfterInterrupt(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) { interruptRun(t, tier, false) })
}

// TestCleanupAfterInterruptServed is the same through a server: the
// client's Ctrl-C reaches the server, which tears the run down and reports
// as a cold run does.
func TestCleanupAfterInterruptServed(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) { interruptRun(t, tier, true) })
}

func interruptRun(t *testing.T, tier string, served bool) {
	dir := workdir(t, map[string]string{"out/.keep": ""})
	tool := writeFile(t, filepath.Join(dir, "slow.yaml"), `name: slow
description: interrupted while it runs
steps:
  - name: hang
    bash: echo started > out/state; sleep 60
resources:
  timeout: 60000
  cleanup:
    - final-command: "echo cleaned > out/cleanup-ran"
security:
  isolation: `+tier+`
  required-permissions: ["filesystem:write:./out"]
tags: [write]
`)
	var srv *serveProc
	if served {
		srv = startServer(t, dir, "--pool-size", "1")
	}
	cmd := command("run", "--json", tool)
	cmd.Dir = dir
	cmd.Env = runEnv()
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "out", "state")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the step never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("sandboxed did not end after SIGINT")
	}
	var r stepsResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("not a result: %v\n%s", err, out.String())
	}
	if r.Status != "error" || r.Error == nil || r.Error.Code != "USER_CANCELLED" {
		t.Errorf("status %s error %+v", r.Status, r.Error)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out", "cleanup-ran")); err != nil || string(b) != "cleaned\n" {
		t.Errorf("the cleanup command did not run after the interrupt: %v %q", err, b)
	}
	if served && srv.callsReach(1) != 1 {
		t.Errorf("the run did not go through the server:\n%s", srv.log.String())
	}
}
