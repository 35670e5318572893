package sandbox

import (
	"slices"
	"strings"
	"testing"
)

// drive runs the dag synchronously: every ready step "runs" at once with
// the status fail gives it (ok when not listed). It returns the order in
// which steps started and each step's result as "name:status[:reason]".
func drive(t *testing.T, steps []JobStep, fail map[string]bool) (started []string, results []string, hardFail string) {
	t.Helper()
	deps, err := stepDeps(steps)
	if err != nil {
		t.Fatal(err)
	}
	g := newDAG(steps, deps)
	for i, blocker, ok := g.next(); ok; i, blocker, ok = g.next() {
		if blocker != "" {
			g.block(i, blocker, StepResult{Name: steps[i].Name, Status: StatusSkipped, Skipped: true, Reason: "step " + blocker + " failed"})
			continue
		}
		g.start(i)
		started = append(started, steps[i].Name)
		st := StepResult{Name: steps[i].Name, Status: StatusOK}
		if fail[steps[i].Name] {
			st.Status, st.ExitCode = StatusFailed, 1
		}
		g.finish(i, []StepResult{st})
	}
	all, hf := g.results()
	for _, r := range all {
		s := r.Name + ":" + string(r.Status)
		if r.Reason != "" {
			s += ":" + r.Reason
		}
		results = append(results, s)
	}
	if hf != nil {
		hardFail = hf.Name
	}
	return started, results, hardFail
}

func TestDAG(t *testing.T) {
	seq := func(names ...string) []JobStep {
		var out []JobStep
		for _, n := range names {
			out = append(out, JobStep{Name: n})
		}
		return out
	}
	tests := []struct {
		name     string
		steps    []JobStep
		fail     map[string]bool
		started  []string
		results  []string
		hardFail string
	}{
		{"a sequence runs in order", seq("a", "b", "c"), nil, []string{"a", "b", "c"},
			[]string{"a:ok", "b:ok", "c:ok"}, ""},
		{"a failure skips everything after it, naming the step that failed", seq("a", "b", "c"), map[string]bool{"a": true},
			[]string{"a"}, []string{"a:failed", "b:skipped:step a failed", "c:skipped:step a failed"}, "a"},
		{"continue-on-error lets the next steps run", func() []JobStep {
			s := seq("a", "b")
			s[0].ContinueOnError = true
			return s
		}(), map[string]bool{"a": true}, []string{"a", "b"}, []string{"a:failed", "b:ok"}, ""},
		{"a parallel step that waits for nothing runs whatever fails", func() []JobStep {
			s := seq("a", "c", "b")
			s[1].Parallel = true
			s[2].WaitFor = []string{"a"}
			return s
		}(), map[string]bool{"a": true}, []string{"a", "c"}, []string{"a:failed", "c:ok", "b:skipped:step a failed"}, "a"},
		{"the first failure in definition order is the run's", func() []JobStep {
			s := seq("a", "b")
			s[1].Parallel = true
			return s
		}(), map[string]bool{"a": true, "b": true}, []string{"a", "b"}, []string{"a:failed", "b:failed"}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			started, results, hf := drive(t, tt.steps, tt.fail)
			if !slices.Equal(started, tt.started) {
				t.Errorf("started %v, want %v", started, tt.started)
			}
			if !slices.Equal(results, tt.results) {
				t.Errorf("results\n got %s\nwant %s", strings.Join(results, " "), strings.Join(tt.results, " "))
			}
			if hf != tt.hardFail {
				t.Errorf("hard failure %q, want %q", hf, tt.hardFail)
			}
		})
	}
}

// A step does not start while a step it waits for runs; parallel steps do.
func TestDAGWaitsForRunningSteps(t *testing.T) {
	steps := []JobStep{{Name: "a"}, {Name: "b", Parallel: true}, {Name: "c"}}
	deps, err := stepDeps(steps)
	if err != nil {
		t.Fatal(err)
	}
	g := newDAG(steps, deps)
	var ready []string
	for i, _, ok := g.next(); ok; i, _, ok = g.next() {
		g.start(i)
		ready = append(ready, steps[i].Name)
	}
	if !slices.Equal(ready, []string{"a", "b"}) {
		t.Fatalf("ready while nothing finished: %v, want [a b]", ready)
	}
	g.finish(0, []StepResult{{Name: "a", Status: StatusOK}})
	if _, _, ok := g.next(); ok {
		t.Fatal("c is ready while b runs")
	}
	g.finish(1, []StepResult{{Name: "b", Status: StatusOK}})
	if i, _, ok := g.next(); !ok || steps[i].Name != "c" {
		t.Fatalf("c not ready after a and b: %d %v", i, ok)
	}
}
