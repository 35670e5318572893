package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// Steps of one run form a graph (DAG) and run in one sandbox:
//
//   - a step with wait-for waits for exactly those steps;
//   - else a parallel step waits for what the step before it waits for,
//     so it runs alongside that step;
//   - else (sequential, the default) it waits for every step before it;
//   - every step also waits for the steps whose results its command,
//     fallback or run-condition references.
//
// A step whose dependencies are done starts at once, so independent steps
// overlap (Sandbox.Exec is safe to call concurrently). A step that failed
// without continue-on-error fails the run; the steps that depend on it,
// directly or not, are skipped. A step whose run-condition is false is
// skipped too, but its dependents still run (their own conditions decide).
// The run fails, with the exit code of the first such step in definition
// order, when a step failed without continue-on-error; otherwise it
// succeeds (exit 0), whatever the steps with continue-on-error did.
// Cleanup commands (resources.cleanup) run after all of it, always.

// cleanupStepTimeout bounds each cleanup command, which runs after the run's
// own time may be up.
const cleanupStepTimeout = 10 * time.Second

// StatusSkipped is the status of a step that did not run: its run-condition
// was false, a step it depends on failed, or the run ended first.
const StatusSkipped Status = "skipped"

// stepsOutcome is what the steps of a run came to.
type stepsOutcome struct {
	// hardFail is the first step (in definition order) that failed without
	// continue-on-error; nil when none did.
	hardFail *StepResult
	outputs  map[string]tool.StepOutput
	// stdout is what the steps printed (buffer-mode steps excepted), for a
	// use-tool step's output.
	stdout *outputs
}

// stepDeps returns, per step, the indexes of the steps it waits for.
func stepDeps(steps []JobStep) ([][]int, error) {
	idx := make(map[string]int, len(steps))
	for i, st := range steps {
		if _, dup := idx[st.Name]; dup {
			return nil, fmt.Errorf("steps: two steps are named %q: %w", st.Name, ErrPlan)
		}
		idx[st.Name] = i
	}
	deps := make([][]int, len(steps))
	for i, st := range steps {
		set := map[int]bool{}
		switch {
		case len(st.WaitFor) > 0:
			for _, w := range st.WaitFor {
				j, ok := idx[w]
				if !ok {
					return nil, fmt.Errorf("step %s waits for %s, which is not a step: %w", st.Name, w, ErrPlan)
				}
				set[j] = true
			}
		case st.Parallel && i > 0:
			for _, j := range deps[i-1] {
				set[j] = true
			}
		default:
			for j := 0; j < i; j++ {
				set[j] = true
			}
		}
		for _, ref := range stepRefsOf(st) {
			if j, ok := idx[ref]; ok && j != i {
				set[j] = true
			}
		}
		for j := range set {
			deps[i] = append(deps[i], j)
		}
	}
	// Refuse cycles (wait-for pointing forward in a loop).
	state := make([]int, len(steps))
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case 1:
			return fmt.Errorf("steps wait for each other in a cycle through %s: %w", steps[i].Name, ErrPlan)
		case 2:
			return nil
		}
		state[i] = 1
		for _, j := range deps[i] {
			if err := visit(j); err != nil {
				return err
			}
		}
		state[i] = 2
		return nil
	}
	for i := range steps {
		if err := visit(i); err != nil {
			return nil, err
		}
	}
	return deps, nil
}

// stepRefsOf returns the names of the steps st reads results of.
func stepRefsOf(st JobStep) []string {
	if st.Bound == nil {
		return nil
	}
	var out []string
	add := func(refs []string) {
		for _, r := range refs {
			if step, _, ok := strings.Cut(r, "."); ok {
				out = append(out, step)
			}
		}
	}
	add(st.Bound.StepRefs())
	if st.Bound.Fallback != nil {
		add(st.Bound.Fallback.StepRefs())
	}
	out = append(out, st.Bound.ConditionRefs()...)
	return out
}

// syncWriter serialises writes of concurrent steps to one live writer.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

type live struct {
	stdout, stderr io.Writer
	tty            *terminalInput // nil without a terminal
}

func liveWriters(job *Job) live {
	var l live
	if job.Stdin != nil {
		l.tty = newTerminalInput(job.Stdin)
	}
	if job.Stdout != nil {
		l.stdout = &syncWriter{w: job.Stdout}
	}
	if job.Stderr != nil {
		l.stderr = &syncWriter{w: job.Stderr}
	}
	return l
}

func splitCleanup(steps []JobStep) (main, cleanup []JobStep) {
	for _, st := range steps {
		if st.Cleanup {
			cleanup = append(cleanup, st)
		} else {
			main = append(main, st)
		}
	}
	return main, cleanup
}

// stepState is where a step is in the schedule.
type stepState int

const (
	statePending stepState = iota
	stateRunning
	stateDone    // ran (ok, or failed with continue-on-error) or skipped by its condition
	stateBlocked // failed without continue-on-error, or skipped because of such a failure
)

type stepDone struct {
	i  int
	sr []StepResult // the step's result first, then its sub-steps' (use-tool)
	so tool.StepOutput
}

// runSteps runs steps as a DAG in sb and appends their results to res.Steps
// in definition order.
func (c *Controller) runSteps(ctx context.Context, sb isolation.Sandbox, steps []JobStep, lv live, res *Result, outs *outputs) stepsOutcome {
	results, oc := c.schedule(ctx, sb, steps, lv, outs, "")
	res.Steps = append(res.Steps, results...)
	return oc
}

// schedule runs steps and returns their results (sub-steps of use-tool
// steps follow their step, named parent/child) and the outcome. prefix
// names the use-tool step they belong to ("" at the top).
func (c *Controller) schedule(ctx context.Context, sb isolation.Sandbox, steps []JobStep, lv live, outs *outputs, prefix string) ([]StepResult, stepsOutcome) {
	oc := stepsOutcome{outputs: map[string]tool.StepOutput{}, stdout: &outputs{}}
	sinks := []*outputs{outs, oc.stdout}
	deps, err := stepDeps(steps)
	if err != nil {
		sr := StepResult{Name: prefix + "steps", Status: StatusError, ExitCode: ExitCodeFor(StatusError, 0, ""), Reason: err.Error()}
		oc.hardFail = &sr
		return []StepResult{sr}, oc
	}
	g := newDAG(steps, deps)
	doneCh := make(chan stepDone)
	running := 0
	// Only this goroutine touches oc.outputs; each started step gets a copy.
	snapshot := func() map[string]tool.StepOutput {
		m := make(map[string]tool.StepOutput, len(oc.outputs))
		for k, v := range oc.outputs {
			m[k] = v
		}
		return m
	}
	for {
		for i, blocker, ok := g.next(); ok; i, blocker, ok = g.next() {
			st := steps[i]
			name := prefix + st.Name
			switch {
			case blocker != "":
				g.block(i, blocker, StepResult{Name: name, Status: StatusSkipped, Skipped: true, Reason: "step " + blocker + " failed"})
				continue
			case ctx.Err() != nil:
				g.block(i, "(run ended)", StepResult{Name: name, Status: StatusSkipped, Skipped: true, Reason: "the run ended before it started"})
				continue
			}
			outputs := snapshot()
			if st.Condition != nil {
				ok, err := st.Condition(outputs)
				if err != nil {
					r := StepResult{Name: name, Status: StatusError, ExitCode: ExitCodeFor(StatusError, 0, ""), Reason: err.Error()}
					if st.ContinueOnError {
						g.settle(i, r)
					} else {
						g.block(i, "", r)
					}
					continue
				}
				if !ok {
					reason := "run-condition is false"
					if st.Bound != nil && st.Bound.ConditionSource() != "" {
						reason = fmt.Sprintf("run-condition %q is false", st.Bound.ConditionSource())
					}
					g.settle(i, StepResult{Name: name, Status: StatusSkipped, Skipped: true, Reason: reason})
					continue
				}
			}
			g.start(i)
			running++
			go func(i int, st JobStep) {
				srs, so := c.runStep(ctx, sb, st, lv, sinks, outputs, prefix)
				doneCh <- stepDone{i: i, sr: srs, so: so}
			}(i, st)
		}
		if running == 0 {
			break
		}
		d := <-doneCh
		running--
		oc.outputs[steps[d.i].Name] = d.so
		g.finish(d.i, d.sr)
	}
	all, hardFail := g.results()
	oc.hardFail = hardFail
	return all, oc
}

// runStep runs one step: its attempts, then its fallback if they all
// failed; or, for a use-tool step, the sub-tool's steps.
func (c *Controller) runStep(ctx context.Context, sb isolation.Sandbox, st JobStep, lv live, sinks []*outputs, outputs map[string]tool.StepOutput, prefix string) ([]StepResult, tool.StepOutput) {
	name := prefix + st.Name
	t0 := time.Now()
	if st.UseTool != "" {
		subs, oc := c.schedule(ctx, sb, st.Sub, lv, sinks[0], name+"/")
		sr := StepResult{Name: name, Status: StatusOK, DurationMS: time.Since(t0).Milliseconds(), Attempts: 1, UseTool: st.UseTool}
		if oc.hardFail != nil {
			sr.Status, sr.ExitCode = oc.hardFail.Status, oc.hardFail.ExitCode
			sr.Reason = "sub-step " + oc.hardFail.Name + " failed"
		}
		if sr.Status == StatusSkipped {
			sr.Status = StatusFailed
		}
		out, errs := oc.stdout.join()
		for _, s := range sinks[1:] {
			s.mu.Lock()
			s.out = append(s.out, oc.stdout.out...)
			s.mu.Unlock()
		}
		return append([]StepResult{sr}, subs...), tool.StepOutput{Output: string(out.kept), Error: string(errs.kept), ExitCode: sr.ExitCode}
	}

	attempts := st.Attempts
	if attempts < 1 {
		attempts = 1
	}
	var sr StepResult
	var so tool.StepOutput
	for a := 1; a <= attempts; a++ {
		sr, so = c.execOnce(ctx, sb, st, st.Cmd.Args, lv, sinks, outputs, false)
		sr.Attempts = a
		if sr.Status == StatusOK || ctx.Err() != nil || a == attempts {
			break
		}
		if st.RetryDelay > 0 {
			t := time.NewTimer(st.RetryDelay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			if ctx.Err() != nil {
				break
			}
		}
	}
	if sr.Status != StatusOK && ctx.Err() == nil && (len(st.Fallback) > 0 || (st.Bound != nil && st.Bound.Fallback != nil)) {
		n := sr.Attempts
		sr, so = c.execOnce(ctx, sb, st, st.Fallback, lv, sinks, outputs, true)
		sr.Attempts, sr.Fallback = n, true
	}
	sr.Name = name
	sr.DurationMS = time.Since(t0).Milliseconds()
	return []StepResult{sr}, so
}

// execOnce runs argv (the step's command, or its fallback) once.
func (c *Controller) execOnce(ctx context.Context, sb isolation.Sandbox, st JobStep, argv []string, lv live, sinks []*outputs, outputs map[string]tool.StepOutput, fallback bool) (StepResult, tool.StepOutput) {
	liveOut := lv.stdout
	if st.Mode == tool.OutputBuffer {
		liveOut = nil
	}
	out := newCapture(st.BufferLimit, liveOut)
	errw := newCapture(st.BufferLimit, lv.stderr)
	for i, s := range sinks {
		s.mu.Lock()
		if st.Mode != tool.OutputBuffer {
			s.out = append(s.out, out)
		}
		if i == 0 {
			s.err = append(s.err, errw)
		}
		s.mu.Unlock()
	}
	cmd := st.Cmd
	cmd.Args = argv
	stdin := st.Stdin
	if st.Bound != nil {
		var err error
		bc := &st.Bound.BoundCommand
		if fallback {
			bc = st.Bound.Fallback
		}
		if bc != nil && len(bc.StepRefs()) > 0 {
			cmd.Args, _, err = bc.Resolve(outputs)
		} else if bc != nil && fallback {
			cmd.Args = bc.Argv
		}
		if err == nil {
			var in string
			in, err = st.Bound.ResolveInput(outputs)
			if in != "" {
				stdin = []byte(in)
			}
		}
		if err != nil {
			fmt.Fprintf(errw, "sandboxed: step %s: %v\n", st.Name, err)
			sr := StepResult{Name: st.Name, Status: StatusError, ExitCode: ExitCodeFor(StatusError, 0, ""), Reason: err.Error()}
			return sr, tool.StepOutput{ExitCode: sr.ExitCode}
		}
	}
	sctx := ctx
	if st.Timeout > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeoutCause(ctx, st.Timeout, context.DeadlineExceeded)
		defer cancel()
	}
	stdio := isolation.Stdio{Stdout: out, Stderr: errw}
	switch {
	case st.Interactive && lv.tty != nil && (st.Bound == nil || st.Bound.Input == ""):
		stdio.Stdin = lv.tty.stepReader(stdin, st.InputTimeout)
	case stdin != nil:
		stdio.Stdin = bytes.NewReader(stdin)
	}
	t0 := time.Now()
	exit, err := sb.Exec(sctx, cmd, stdio)
	sr := StepResult{Name: st.Name, ExitCode: exit.Code, DurationMS: time.Since(t0).Milliseconds()}
	switch {
	case sctx.Err() != nil && ctx.Err() == nil && errors.Is(context.Cause(sctx), context.DeadlineExceeded):
		sr.Status = StatusTimeout
		sr.ExitCode = ExitCodeFor(StatusTimeout, 0, "")
		sr.Reason = fmt.Sprintf("killed at the step's time limit of %s", st.Timeout)
	case ctx.Err() != nil:
		sr.Status = StatusError
		if sr.ExitCode == 0 {
			sr.ExitCode = ExitKilled // the run's end killed it (SIGKILL)
		}
		sr.Reason = "killed: the run ended"
	case err != nil:
		sr.Status = StatusError
		if sr.ExitCode == 0 {
			sr.ExitCode = ExitCodeFor(StatusError, 0, "")
		}
		sr.Reason = err.Error()
		fmt.Fprintf(errw, "sandboxed: step %s: %v\n", st.Name, err)
	case exit.Code != 0:
		sr.Status = StatusFailed
	default:
		sr.Status = StatusOK
	}
	return sr, tool.StepOutput{Output: string(out.Bytes()), Error: string(errw.Bytes()), ExitCode: sr.ExitCode}
}

// runCleanup runs the cleanup commands in sb, one after another, each on a
// context of its own: they run after failures and after the run's time is
// up. Their results are added to res.Steps (Cleanup set); a failing cleanup
// is noted and does not change the run's status.
func (c *Controller) runCleanup(ctx context.Context, sb isolation.Sandbox, cleanups []JobStep, lv live, res *Result, outs *outputs, done map[string]tool.StepOutput) {
	for _, st := range cleanups {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupStepTimeout)
		if st.Timeout <= 0 || st.Timeout > cleanupStepTimeout {
			st.Timeout = cleanupStepTimeout
		}
		sr, _ := c.execOnce(cctx, sb, st, st.Cmd.Args, lv, []*outputs{outs}, done, false)
		cancel()
		sr.Cleanup, sr.Attempts = true, 1
		res.Steps = append(res.Steps, sr)
		if sr.Status != StatusOK {
			res.Notes = append(res.Notes, fmt.Sprintf("cleanup %s failed (exit %d)", st.Name, sr.ExitCode))
		}
	}
}

// cleanupFresh runs the cleanup commands of a run whose sandbox was killed
// (timeout, interrupt) in a fresh sandbox of the same plan, with a short
// deadline of its own.
func (c *Controller) cleanupFresh(ctx context.Context, b isolation.Backend, p *isolation.Plan, cleanups []JobStep, lv live, res *Result, outs *outputs) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	sb, err := b.Start(sctx, p)
	if err != nil {
		res.Notes = append(res.Notes, "cleanup commands did not run: start a sandbox for them: "+err.Error())
		for _, st := range cleanups {
			res.Steps = append(res.Steps, StepResult{Name: st.Name, Status: StatusSkipped, Skipped: true, Cleanup: true,
				Reason: "no sandbox to run it in"})
		}
		return
	}
	res.Notes = append(res.Notes, "cleanup commands ran in a fresh sandbox after the run was killed")
	c.runCleanup(sctx, sb, cleanups, lv, res, outs, nil)
	if err := sb.Close(sctx); err != nil {
		res.Notes = append(res.Notes, "clean up the cleanup sandbox: "+err.Error())
	}
}
