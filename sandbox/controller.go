package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// cleanupTimeout bounds teardown, which runs on its own context so a run
// that timed out or was interrupted still cleans up.
const cleanupTimeout = 30 * time.Second

// ErrInterrupted is the cause set on the run context when sandboxed itself
// gets SIGINT or SIGTERM.
var ErrInterrupted = errors.New("interrupted")

// Controller runs plans on backends and reports results.
type Controller struct {
	StateDir   string
	RuntimeDir string
	Backends   map[isolation.Tier]isolation.Backend
	// Record, when set, is called with the final result before Execute
	// returns (the audit log); its error fails the run report.
	Record func(*Result) error
	// Trace, when set, is told when each phase of a run ends.
	Trace *Tracer
}

// Job is one run to execute: its plan and the commands of its steps.
type Job struct {
	Plan    *isolation.Plan
	Version string
	Steps   []JobStep
	// Stdout and Stderr, when set, receive the tool's output live as well
	// (the terminal); the Result keeps a capped copy either way.
	Stdout, Stderr io.Writer
	// Stdin, when set, is the terminal: interactive steps read it (see
	// steps_interactive.go). Nil feeds them their default response.
	Stdin io.Reader
	// Egress, when set, is called after the sandbox is gone to collect the
	// proxy's connection records.
	Egress func() []EgressEntry
	// Audit, when set, writes the run's audit line; it runs beside the
	// run record, once the result is final.
	Audit func(*Result) error

	watches []protectedWatch // protected globs under write grants (Prepare)
	// Notes are copied into the Result (e.g. "tier raised to process").
	Notes []string
	// Prepare, when set, runs after the run's host directory exists and
	// before the sandbox starts (the egress proxy starts here).
	Prepare func(ctx context.Context, p *isolation.Plan) error
}

// JobStep is one command of a job.
type JobStep struct {
	Name            string
	Cmd             isolation.Command
	Stdin           []byte
	Timeout         time.Duration // 0: only the run's timeout applies
	BufferLimit     int64         // 0: DefaultBufferLimit
	ContinueOnError bool
	// Bound, when set, is the step as bound; a command that references the
	// output of earlier steps is resolved from it just before it runs.
	Bound *tool.BoundStep

	// Scheduling (see steps.go): a step waits for WaitFor when given; else
	// a Parallel step waits for what the step before it waits for; else it
	// waits for every step before it. A step also waits for the steps whose
	// results it references.
	Parallel bool
	WaitFor  []string
	// Condition, when set, decides whether the step runs (run-condition);
	// it sees the results of the steps finished so far.
	Condition func(outputs map[string]tool.StepOutput) (bool, error)
	// Attempts is how many times the command is tried (retry.attempts;
	// 0 or 1: once), RetryDelay the pause between tries.
	Attempts   int
	RetryDelay time.Duration
	// Fallback is the argv run once when every attempt failed
	// (error-handling.fallback); its result becomes the step's.
	Fallback []string
	// Mode is the output mode: OutputBuffer keeps stdout for later steps
	// and the step's record only (not shown live, not part of the run's
	// stdout); stream and the default show it live and add it to the run's
	// stdout.
	Mode tool.OutputMode
	// UseTool names the sub-tool of a use-tool step, whose steps are Sub;
	// they run in the same sandbox.
	UseTool string
	Sub     []JobStep
	// Interactive marks a step of an interactive tool: with a terminal it
	// reads the user's input, waiting up to InputTimeout before Stdin (the
	// default response) is used instead.
	Interactive  bool
	InputTimeout time.Duration
	// Cleanup marks a resources.cleanup command: it runs after every other
	// step, whatever happened, also after a timeout or an interrupt.
	Cleanup bool
}

// Execute runs the job and returns its Result. Every outcome, including a
// sandbox that failed to start, comes back as a Result with a status;
// the error return is for failures to record the run.
//
// Teardown (kill, close, remove the run's host directory) always runs, on
// a context of its own, also when ctx is cancelled.
func (c *Controller) Execute(ctx context.Context, job *Job) (*Result, error) {
	p := job.Plan
	start := time.Now()
	res := &Result{
		RunID:     p.RunID,
		Tool:      p.Tool,
		Version:   job.Version,
		Isolation: string(p.Tier),
		StartedAt: start.UTC(),
		Steps:     []StepResult{},
		Egress:    []EgressEntry{},
		Notes:     job.Notes,
	}
	outs := &outputs{}
	c.run(ctx, job, res, outs)

	if job.Egress != nil {
		if e := job.Egress(); e != nil {
			res.Egress = e
		}
	}
	// Protected paths the tool created where none existed to protect.
	res.Warnings = append(res.Warnings, createdProtected(job.watches)...)
	c.Trace.Mark("teardown (stats, close, gc wait)")
	res.DurationMS = time.Since(start).Milliseconds()
	stdout, stderr := outs.join()
	res.Stdout, res.Stderr = stdout.text, stderr.text
	res.StdoutTruncated, res.StderrTruncated = stdout.truncated, stderr.truncated
	err := c.finish(res, stdout.kept, stderr.kept, job.Audit)
	c.Trace.Mark("run record and audit")
	return res, err
}

// outputs collects the captures of every step (and sandboxed's own notes
// about them), so each byte of output is held once.
type outputs struct {
	mu       sync.Mutex
	out, err []*capture
}

type joined struct {
	text      string // kept output, with a truncation marker per cut stream
	kept      []byte // kept output, without markers (the run record)
	truncated bool
}

func (o *outputs) join() (stdout, stderr joined) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return joinCaptures(o.out), joinCaptures(o.err)
}

func joinCaptures(cs []*capture) joined {
	var j joined
	var text []byte
	for _, c := range cs {
		b := c.Bytes()
		j.kept = append(j.kept, b...)
		if c.Truncated() {
			j.truncated = true
			text = append(text, c.String()...)
		} else {
			text = append(text, b...)
		}
	}
	j.text = string(text)
	return j
}

func (c *Controller) finish(res *Result, stdout, stderr []byte, audit func(*Result) error) error {
	// The run record and the audit line (which waits for its fsync) are
	// written side by side.
	recorded := make(chan error, 1)
	go func() {
		if c.StateDir == "" {
			recorded <- nil
			return
		}
		recorded <- writeRecord(c.StateDir, res, stdout, stderr)
	}()
	var errs []error
	if c.Record != nil {
		if err := c.Record(res); err != nil {
			errs = append(errs, fmt.Errorf("record run %s: %w", res.RunID, err))
		}
	}
	if audit != nil {
		errs = append(errs, audit(res))
	}
	errs = append(errs, <-recorded)
	return errors.Join(errs...)
}

func (c *Controller) run(ctx context.Context, job *Job, res *Result, outs *outputs) {
	p := job.Plan
	fail := func(st Status, code, msg, hint string) {
		if hint != "" && strings.Contains(msg, hint) {
			hint = "" // the message already says how to fix it
		}
		res.Status = st
		res.Error = &ErrorInfo{Code: code, Message: msg, Hint: hint}
		res.ExitCode = res.ProcessExitCode()
	}
	b := c.Backends[p.Tier]
	if b == nil {
		fail(StatusError, CodeInitFailed, fmt.Sprintf("isolation tier %q is not available in this build", p.Tier), "run `sandboxed doctor`")
		return
	}
	if err := b.Check(ctx, p); err != nil {
		fail(StatusError, CodeInitFailed, err.Error(), hintFor(err))
		return
	}
	c.Trace.Mark("check")

	// The run's private host directory: sockets and bookkeeping, labelled
	// by run id so gc can find it after a crash.
	if p.HostDir == "" {
		p.HostDir = fmt.Sprintf("%s/%s", c.RuntimeDir, p.RunID)
	}
	if err := ensurePrivateDir(c.RuntimeDir); err != nil {
		fail(StatusError, CodeInitFailed, err.Error(), "set SANDBOXED_RUNTIME_DIR to a directory only you can write")
		return
	}
	release, err := holdRun(p.RunID)
	if err != nil {
		fail(StatusError, CodeInitFailed, err.Error(), "")
		return
	}
	defer release()
	if err := os.Mkdir(p.HostDir, 0o700); err != nil {
		fail(StatusError, CodeInitFailed, fmt.Sprintf("create run dir %s: %v", p.HostDir, err), "")
		return
	}
	defer os.RemoveAll(p.HostDir)
	// Reap what crashed runs of this tier left, alongside this run's start
	// (`sandboxed gc` covers every tier).
	gcDone := make(chan struct{})
	go func() {
		defer close(gcDone)
		gctx, gcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer gcancel()
		_, _ = c.gc(gctx, b)
	}()
	defer func() { <-gcDone }()
	if job.Prepare != nil {
		if err := job.Prepare(ctx, p); err != nil {
			fail(StatusError, CodeInitFailed, "prepare run: "+err.Error(), hintFor(err))
			return
		}
	}

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if p.Limits.Timeout > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeoutCause(runCtx, p.Limits.Timeout, context.DeadlineExceeded)
		defer stop()
	}

	c.Trace.Mark("prepare (run dir, proxy)")
	sb, err := b.Start(runCtx, p)
	c.Trace.Mark("start sandbox")
	if ll, ok := sb.(interface{ Landlock() int }); ok && err == nil {
		c.Trace.Note("landlock abi %d", ll.Landlock())
	}
	if err != nil {
		switch {
		case runCtx.Err() != nil:
			c.ended(runCtx, res)
		default:
			fail(StatusError, CodeInitFailed, "start sandbox: "+err.Error(), hintFor(err))
		}
		return
	}
	teardown := func() {
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer ccancel()
		if st, err := sb.Stats(cctx); err == nil {
			res.PeakMemoryBytes = st.PeakMemoryBytes
			if st.OOMKilled && res.Status != StatusTimeout {
				res.Status = StatusOOM
				res.ExitCode = 137
				res.Error = &ErrorInfo{
					Code:    CodeQuota,
					Message: fmt.Sprintf("killed by the memory limit of %s", humanBytes(p.Limits.MemoryBytes)),
					Hint:    "raise resources.max-memory in the definition (and the policy's memory cap) if the tool needs more",
				}
			}
		}
		if err := sb.Close(cctx); err != nil && res.Status == StatusOK {
			res.Status = StatusError
			res.ExitCode = 125
			res.Error = &ErrorInfo{Code: CodeUnexpected, Message: "clean up sandbox: " + err.Error()}
		}
	}

	// The watchdog: when the run's time is up or sandboxed is interrupted,
	// every process of the sandbox gets SIGTERM, then SIGKILL after the grace.
	var killed atomic.Bool
	done := make(chan struct{})
	watchdogDone := make(chan struct{})
	go func() {
		defer close(watchdogDone)
		select {
		case <-runCtx.Done():
			killed.Store(true)
			kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer kcancel()
			_ = sb.Kill(kctx, p.Limits.KillGrace)
		case <-done:
		}
	}()

	res.Status = StatusOK
	live := liveWriters(job)
	main, cleanups := splitCleanup(job.Steps)
	oc := c.runSteps(runCtx, sb, main, live, res, outs)
	c.Trace.Mark("steps")
	close(done)
	<-watchdogDone

	runEnded := runCtx.Err() != nil || killed.Load()
	switch {
	case runEnded:
		c.ended(runCtx, res)
	case oc.hardFail != nil && oc.hardFail.Status == StatusTimeout:
		res.Status = StatusTimeout
		res.ExitCode = 124
		res.Error = &ErrorInfo{Code: CodeTimeout, Message: fmt.Sprintf("step %s was killed at its time limit", oc.hardFail.Name),
			Hint: "raise the step's timeout if it needs longer"}
	case oc.hardFail != nil:
		res.Status = StatusFailed
		res.ExitCode = oc.hardFail.ExitCode
		if oc.hardFail.Status == StatusError {
			res.Error = &ErrorInfo{Code: CodeExecFailed, Message: fmt.Sprintf("step %s could not run", oc.hardFail.Name)}
		}
	default:
		// Every step succeeded, was skipped by its condition, or failed
		// with continue-on-error (ignore-errors): the run succeeded.
		res.ExitCode = 0
	}
	if len(cleanups) > 0 && runEnded {
		// The sandbox was killed with the run: the cleanup commands get a
		// fresh one of the same plan, after this one is gone.
		teardown()
		c.cleanupFresh(ctx, b, p, cleanups, live, res, outs)
		return
	}
	if len(cleanups) > 0 {
		c.runCleanup(ctx, sb, cleanups, live, res, outs, oc.outputs)
	}
	teardown()
}

// ended sets the status of a run whose context ended before it did.
func (c *Controller) ended(runCtx context.Context, res *Result) {
	cause := context.Cause(runCtx)
	switch {
	case errors.Is(cause, context.DeadlineExceeded):
		res.Status = StatusTimeout
		res.ExitCode = 124
		res.Error = &ErrorInfo{Code: CodeTimeout, Message: "killed at the run's time limit",
			Hint: "raise timeout (or resources.timeout) in the definition if the tool needs longer"}
	default:
		res.Status = StatusError
		res.ExitCode = 130
		res.Error = &ErrorInfo{Code: CodeUserCancelled, Message: "interrupted; the sandbox was torn down"}
	}
}

// hintFor returns the fix an error carries, if it says one.
func hintFor(err error) string {
	var u *isolation.UnsupportedError
	if errors.As(err, &u) {
		return u.Fix
	}
	if errors.Is(err, isolation.ErrUnsupported) {
		return "run `sandboxed doctor` to see what this host can enforce"
	}
	return ""
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return strings.TrimSpace(fmt.Sprintf("%d bytes", n))
}
