package sandbox

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/tool"
)

func named(name string, args ...string) JobStep {
	return JobStep{Name: name, Cmd: isolation.Command{Name: name, Args: args}}
}

func runJob(t *testing.T, j *Job) (*Result, *fakeBackend) {
	t.Helper()
	fb := &fakeBackend{log: &execLog{}}
	c := &Controller{RuntimeDir: filepath.Join(t.TempDir(), "run"),
		Backends: map[isolation.Tier]isolation.Backend{isolation.TierProcess: fb}}
	res, err := c.Execute(context.Background(), c.in(j))
	if err != nil {
		t.Fatal(err)
	}
	return res, fb
}

func stepByName(t *testing.T, res *Result, name string) StepResult {
	t.Helper()
	for _, s := range res.Steps {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no step %s in %+v", name, res.Steps)
	return StepResult{}
}

func TestParallelStepsOverlap(t *testing.T) {
	setup := named("setup", "echo", "s")
	a, b, c := named("a", "sleep", "200"), named("b", "sleep", "200"), named("c", "sleep", "200")
	a.Parallel, a.WaitFor = true, []string{"setup"}
	b.Parallel, b.WaitFor = true, []string{"setup"}
	c.Parallel = true // runs alongside b: waits for what b waits for
	report := named("report", "echo", "r")
	report.WaitFor = []string{"a", "b", "c"}
	res, fb := runJob(t, job(5*time.Second, setup, a, b, c, report))
	if res.Status != StatusOK {
		t.Fatalf("status %s %+v", res.Status, res.Steps)
	}
	s := fb.log.find("setup")[0]
	var ends []time.Time
	starts := map[string]time.Time{}
	for _, n := range []string{"a", "b", "c"} {
		e := fb.log.find(n)[0]
		if e.start.Before(s.end) {
			t.Errorf("%s started before setup ended", n)
		}
		starts[n] = e.start
		ends = append(ends, e.end)
	}
	// Each started before any other ended: they overlapped.
	for n, st := range starts {
		for _, en := range ends {
			if !st.Before(en) {
				t.Errorf("%s started after another parallel step ended: not concurrent", n)
			}
		}
	}
	r := fb.log.find("report")[0]
	for _, en := range ends {
		if r.start.Before(en) {
			t.Error("report started before the steps it waits for ended")
		}
	}
	if want := []string{"setup", "a", "b", "c", "report"}; len(res.Steps) != len(want) {
		t.Fatalf("steps %+v", res.Steps)
	} else {
		for i, n := range want {
			if res.Steps[i].Name != n {
				t.Errorf("step %d is %s, want %s (definition order)", i, res.Steps[i].Name, n)
			}
		}
	}
}

func TestSequentialByDefault(t *testing.T) {
	res, fb := runJob(t, job(5*time.Second, named("one", "sleep", "30"), named("two", "sleep", "1")))
	if res.Status != StatusOK {
		t.Fatal(res.Status)
	}
	if fb.log.find("two")[0].start.Before(fb.log.find("one")[0].end) {
		t.Error("two started before one ended")
	}
}

func TestFailureSkipsDependents(t *testing.T) {
	build := named("build", "exit", "2")
	test := named("test", "echo", "t")
	other := named("other", "echo", "o")
	other.WaitFor = []string{"setup"}
	setup := named("setup", "echo", "s")
	deploy := named("deploy", "echo", "d")
	deploy.WaitFor = []string{"test"}
	// setup; build (fails); test (sequential: waits for build) ; other waits for setup only.
	res, fb := runJob(t, job(5*time.Second, setup, build, test, other, deploy))
	if res.Status != StatusFailed || res.ExitCode != 2 {
		t.Fatalf("status %s exit %d", res.Status, res.ExitCode)
	}
	for _, n := range []string{"test", "deploy"} {
		s := stepByName(t, res, n)
		if !s.Skipped || s.Status != StatusSkipped || !strings.Contains(s.Reason, "build") {
			t.Errorf("%s: %+v, want skipped because build failed", n, s)
		}
	}
	if len(fb.log.find("other")) != 1 {
		t.Error("other (independent of build) did not run")
	}
}

func TestContinueOnError(t *testing.T) {
	bad := named("bad", "exit", "4")
	bad.ContinueOnError = true
	res, _ := runJob(t, job(5*time.Second, bad, named("after", "echo", "x")))
	if res.Status != StatusOK || res.ExitCode != 0 || stepByName(t, res, "after").Skipped {
		t.Fatalf("status %s exit %d steps %+v", res.Status, res.ExitCode, res.Steps)
	}
}

func TestConditions(t *testing.T) {
	first := named("first", "exit", "1")
	first.ContinueOnError = true
	onFail := named("on-fail", "echo", "recovering")
	onFail.Condition = func(o map[string]tool.StepOutput) (bool, error) { return o["first"].ExitCode != 0, nil }
	onOK := named("on-ok", "echo", "never")
	onOK.Condition = func(o map[string]tool.StepOutput) (bool, error) { return o["first"].ExitCode == 0, nil }
	last := named("last", "echo", "end")
	bad := named("bad-cond", "echo", "x")
	bad.ContinueOnError = true
	bad.Condition = func(map[string]tool.StepOutput) (bool, error) { return false, errors.New("boom") }
	res, fb := runJob(t, job(5*time.Second, first, onFail, onOK, bad, last))
	if s := stepByName(t, res, "on-ok"); !s.Skipped || s.Status != StatusSkipped {
		t.Errorf("on-ok %+v, want skipped", s)
	}
	if len(fb.log.find("on-fail")) != 1 || len(fb.log.find("last")) != 1 {
		t.Error("on-fail or last did not run (a step skipped by its condition must not block the next)")
	}
	if s := stepByName(t, res, "bad-cond"); s.Status != StatusError || !strings.Contains(s.Reason, "boom") {
		t.Errorf("bad-cond %+v", s)
	}
	if res.Status != StatusOK {
		t.Errorf("status %s", res.Status)
	}
}

func TestRetryAndFallback(t *testing.T) {
	flaky := named("flaky", "failn", "2")
	flaky.Attempts, flaky.RetryDelay = 3, 20*time.Millisecond
	hopeless := named("hopeless", "failn", "99")
	hopeless.Attempts = 2
	hopeless.Fallback = []string{"echo", "plan-b"}
	res, fb := runJob(t, job(5*time.Second, flaky, hopeless))
	if s := stepByName(t, res, "flaky"); s.Status != StatusOK || s.Attempts != 3 || s.Fallback {
		t.Errorf("flaky %+v, want ok after 3 attempts", s)
	}
	calls := fb.log.find("flaky")
	if len(calls) != 3 || calls[1].start.Sub(calls[0].end) < 20*time.Millisecond {
		t.Errorf("flaky ran %d times; want 3 with the delay between", len(calls))
	}
	if s := stepByName(t, res, "hopeless"); s.Status != StatusOK || s.Attempts != 2 || !s.Fallback {
		t.Errorf("hopeless %+v, want ok through its fallback after 2 attempts", s)
	}
	if !strings.Contains(res.Stdout, "plan-b") || res.Status != StatusOK {
		t.Errorf("status %s stdout %q", res.Status, res.Stdout)
	}
}

func TestStepOutputsAndBufferMode(t *testing.T) {
	gen := named("gen", "echo", "secret-intermediate")
	gen.Mode = tool.OutputBuffer
	use := named("use", "cat")
	use.Stdin = []byte("shown")
	res, _ := runJob(t, job(5*time.Second, gen, use))
	if strings.Contains(res.Stdout, "secret-intermediate") || res.Stdout != "shown" {
		t.Errorf("stdout %q: a buffer-mode step's output is kept for later steps, not shown", res.Stdout)
	}
}

func TestCleanupRunsAfterFailure(t *testing.T) {
	cl := named("cleanup", "echo", "cleaned")
	cl.Cleanup = true
	res, fb := runJob(t, job(5*time.Second, named("main", "exit", "3"), cl))
	if res.Status != StatusFailed || res.ExitCode != 3 {
		t.Fatalf("status %s exit %d", res.Status, res.ExitCode)
	}
	if s := stepByName(t, res, "cleanup"); !s.Cleanup || s.Status != StatusOK || len(fb.log.find("cleanup")) != 1 {
		t.Errorf("cleanup %+v", s)
	}
	if fb.starts != 1 {
		t.Errorf("%d sandboxes, want 1 (cleanup in the run's own)", fb.starts)
	}
}

func TestCleanupAfterTimeout(t *testing.T) {
	cl := named("cleanup", "echo", "cleaned")
	cl.Cleanup = true
	res, fb := runJob(t, job(50*time.Millisecond, named("main", "hang"), named("never", "echo", "x"), cl))
	if res.Status != StatusTimeout || res.ExitCode != 124 {
		t.Fatalf("status %s exit %d", res.Status, res.ExitCode)
	}
	if s := stepByName(t, res, "never"); !s.Skipped {
		t.Errorf("never %+v, want skipped", s)
	}
	s := stepByName(t, res, "cleanup")
	if !s.Cleanup || s.Status != StatusOK || len(fb.log.find("cleanup")) != 1 {
		t.Errorf("cleanup %+v", s)
	}
	if fb.starts != 2 || fb.sb.closed != 1 {
		t.Errorf("starts %d closed %d: want a fresh sandbox for cleanup, closed", fb.starts, fb.sb.closed)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "fresh sandbox") {
		t.Errorf("notes %v", res.Notes)
	}
}

func TestUseToolSubSteps(t *testing.T) {
	sub1 := named("fetch", "echo", "data")
	sub2 := named("count", "exit", "0")
	use := JobStep{Name: "clone", UseTool: "other", Sub: []JobStep{sub1, sub2}}
	after := named("after", "echo", "x")
	res, _ := runJob(t, job(5*time.Second, use, after))
	if res.Status != StatusOK {
		t.Fatalf("status %s %+v", res.Status, res.Steps)
	}
	names := []string{}
	for _, s := range res.Steps {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "clone,clone/fetch,clone/count,after" {
		t.Errorf("steps %s", got)
	}
	if s := stepByName(t, res, "clone"); s.UseTool != "other" {
		t.Errorf("clone %+v", s)
	}

	failing := JobStep{Name: "clone", UseTool: "other", Sub: []JobStep{named("x", "exit", "5")}}
	res, _ = runJob(t, job(5*time.Second, failing, named("after", "echo", "x")))
	if res.Status != StatusFailed || res.ExitCode != 5 || !stepByName(t, res, "after").Skipped {
		t.Errorf("status %s exit %d %+v", res.Status, res.ExitCode, res.Steps)
	}
}

func TestStepDeps(t *testing.T) {
	a, b := named("a", "x"), named("b", "x")
	b.WaitFor = []string{"c"}
	c := named("c", "x")
	c.WaitFor = []string{"b"}
	if _, err := stepDeps([]JobStep{a, b, c}); !errors.Is(err, ErrPlan) {
		t.Errorf("cycle: %v", err)
	}
	d := named("d", "x")
	d.WaitFor = []string{"nope"}
	if _, err := stepDeps([]JobStep{a, d}); !errors.Is(err, ErrPlan) {
		t.Errorf("unknown wait-for: %v", err)
	}
}

func TestInteractiveInput(t *testing.T) {
	ask := named("ask", "cat")
	ask.Interactive, ask.InputTimeout, ask.Stdin = true, 50*time.Millisecond, []byte("y\n")

	// No terminal: the default response.
	res, _ := runJob(t, job(5*time.Second, ask))
	if res.Stdout != "y\n" {
		t.Errorf("no terminal: stdout %q", res.Stdout)
	}
	// A terminal where the user types.
	j := job(5*time.Second, ask)
	j.Stdin = strings.NewReader("typed\n")
	res, _ = runJob(t, j)
	if res.Stdout != "typed\n" {
		t.Errorf("typed: stdout %q", res.Stdout)
	}
	// A terminal where nobody types: the default after the timeout.
	pr, pw := io.Pipe()
	defer pw.Close()
	j = job(5*time.Second, ask)
	j.Stdin = pr
	res, _ = runJob(t, j)
	if res.Stdout != "y\n" {
		t.Errorf("silent terminal: stdout %q", res.Stdout)
	}
}
