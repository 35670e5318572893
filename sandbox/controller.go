package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/cleanup"
	"github.com/sandboxed-dev/sandboxed/internal/units"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/landlock"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/policy"
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
	// Pool, when set, holds warm sandboxes runs claim (pool.go).
	Pool *Pool
	// Behind, when set, tears sandboxes down behind the results
	// (behind.go); nil tears down before Execute returns.
	Behind *Behind
	// EnvFix, when set, says how to let a tier run in the environment
	// sandboxed is in (inside a container: the engine's flags); it is
	// added to the fix of a run of that tier that could not start, as
	// doctor adds it to its trial of the tier.
	EnvFix func(tier isolation.Tier) string
	// GCEvery, when set, is how often a run also reaps what crashed runs
	// of its tier left (a resident controller's runs come many a second);
	// 0: every run does.
	GCEvery time.Duration

	gcMu   sync.Mutex
	lastGC map[isolation.Tier]time.Time
}

// gcDue reports whether a run of tier reaps crashed runs' leftovers
// as it starts, and if so notes that it does.
func (c *Controller) gcDue(tier isolation.Tier) bool {
	if c.GCEvery <= 0 {
		return true
	}
	c.gcMu.Lock()
	defer c.gcMu.Unlock()
	if time.Since(c.lastGC[tier]) < c.GCEvery {
		return false
	}
	if c.lastGC == nil {
		c.lastGC = map[isolation.Tier]time.Time{}
	}
	c.lastGC[tier] = time.Now()
	return true
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
	// Proxy starts the egress proxy of a plan with an egress section; nil
	// refuses such a plan.
	Proxy EgressStarter
	// Audit, when set, writes the run's audit line; it runs beside the
	// run record, once the result is final.
	Audit func(*Result) error
	// Trace, when set, is told when each phase of the run ends.
	Trace *Tracer

	watches []protectedWatch // protected globs under write grants (Prepare)
	redact  *redactor        // the credentials' values (setUpHost)
	create  *writeDirs       // missing directories of write grants (Prepare)
	warm    *pooled          // the warm sandbox the run claims, nil: cold
	// teardown, when set, tears the run's sandbox down behind its result
	// (closeLast); Execute starts it once the result is final.
	teardown func() error
	// Notes are copied into the Result (e.g. "tier raised to process").
	Notes []string
	// decision is the policy's for the run (Prepare; nil for a job made
	// otherwise): a failed run's hint says first when it raised the tier
	// (withRaise).
	decision *policy.Decision
	// hostEnv is the environment credentials are read from (the caller's
	// when a server runs the job); nil is this process's.
	hostEnv []string
	// changes records the write grants (Plan.Changes; setUpHost begins
	// it, Execute finishes it once the sandbox is gone).
	changes     *runChanges
	changesNote string // why the writes are not recorded
	// ApproveWrites applies a reviewed change without asking;
	// ReviewWrites, when set, asks (Request.ReviewWrites).
	ApproveWrites bool
	ReviewWrites  func(*ChangesInfo) (bool, error)
}

// writeDirs are the write grants whose missing directories the run
// creates when it starts, owned by uid:gid.
type writeDirs struct {
	grants   []permissions.Grant
	uid, gid int
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
	if e := c.run(ctx, job, res, outs); e != nil {
		res.Egress = e
		res.Warnings = append(res.Warnings, credentialWarnings(e)...)
		res.Warnings = append(res.Warnings, quotaWarnings(e)...)
	}
	if job.changesNote != "" {
		res.Notes = append(res.Notes, job.changesNote)
		res.Changes = &ChangesInfo{Unavailable: job.changesNote, Paths: []ChangedPath{}}
	}
	if job.changes != nil {
		// The sandbox is gone (closeLast): nothing writes any more.
		job.changes.finish(res, job.ApproveWrites, job.ReviewWrites)
		job.Trace.Mark("changes recorded")
	}
	// Protected paths the tool created where none existed to protect.
	res.Warnings = append(res.Warnings, createdProtected(job.watches)...)
	// What the teardown of earlier runs could not remove.
	res.Warnings = append(res.Warnings, c.Behind.takeLeaks()...)
	job.Trace.Mark("teardown (stats, close, gc wait)")
	res.DurationMS = time.Since(start).Milliseconds()
	stdout, stderr := outs.join()
	res.Stdout, res.Stderr = stdout.text, stderr.text
	res.StdoutTruncated, res.StderrTruncated = stdout.truncated, stderr.truncated
	// A credential's value never reaches a result, a record or the audit
	// log, even when a server echoed it back to the tool.
	job.redact.result(res)
	err := c.finish(res, p, job.redact.bytes(stdout.kept), job.redact.bytes(stderr.kept), job.Audit, job.Trace)
	job.Trace.Mark("run record and audit")
	// What waited for the result, so as not to take the CPU from it: the
	// sandbox's teardown and the pool's refill of the claimed sandbox.
	if job.teardown != nil {
		c.Behind.goTeardown(p.RunID, job.teardown)
		job.teardown = nil
	}
	job.warm.refillNow()
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

// finish writes the run record (with the plan the backend was given, nil
// for a run refused before planning) and the audit line.
func (c *Controller) finish(res *Result, plan *isolation.Plan, stdout, stderr []byte, audit func(*Result) error, trace *Tracer) error {
	// The run record and the audit line (which waits for its fsync) are
	// written side by side.
	start := time.Now()
	recorded := make(chan error, 1)
	var recordTook time.Duration
	go func() {
		if c.StateDir == "" {
			recorded <- nil
			return
		}
		err := writeRecord(c.StateDir, res, plan, stdout, stderr)
		recordTook = time.Since(start)
		recorded <- err
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
	auditTook := time.Since(start)
	errs = append(errs, <-recorded)
	trace.Note("run record written in %.2fms, audit line on disk in %.2fms (side by side)",
		float64(recordTook.Microseconds())/1000, float64(auditTook.Microseconds())/1000)
	return errors.Join(errs...)
}

// run runs the job's plan on its backend, in phases: check the plan, set
// the host up (hostSetup), start the sandbox, run the steps under the
// watchdog, settle the status (settle), run the cleanup commands, tear
// down. It fills res and returns the egress proxy's records.
func (c *Controller) run(ctx context.Context, job *Job, res *Result, outs *outputs) []EgressEntry {
	p := job.Plan
	fail := func(f *runFailure) {
		res.Status = StatusError
		res.Error = c.withEnvFix(p.Tier, withRaise(job.decision, f.info()))
		res.ExitCode = res.ProcessExitCode()
	}
	b := c.Backends[p.Tier]
	if p.Backend != "" {
		b = c.Backends[isolation.Tier(p.Backend)] // a run of a cluster
	}
	if w := job.warm; w != nil {
		// Until setUpHost owns it: a run refused before that drops it.
		defer func() {
			if !w.owned {
				w.drop()
			}
		}()
	}
	if b == nil {
		fail(&runFailure{CodeInitFailed, fmt.Sprintf("isolation tier %q is not available in this build", p.Tier), "run `sandboxed doctor`"})
		return nil
	}
	if err := b.Check(ctx, p); err != nil {
		fail(&runFailure{CodeInitFailed, err.Error(), failureHint(p, err)})
		return nil
	}
	job.Trace.Mark("check")

	host, f := c.setUpHost(ctx, job, b)
	if f != nil {
		fail(f)
		return nil
	}
	defer host.tearDown()

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// A cluster's pod start (scheduling, the image, the node's sandbox)
	// is not the tool's time: on Kubernetes the clock starts once the
	// sandbox is up, and the backend bounds its start itself.
	clockAfterStart := p.Backend == isolation.BackendKubernetes
	if p.Limits.Timeout > 0 && !clockAfterStart {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeoutCause(runCtx, p.Limits.Timeout, context.DeadlineExceeded)
		defer stop()
	}

	job.Trace.Mark("prepare (run dir, proxy)")
	sb, err := c.start(runCtx, b, job)
	if p.Limits.Timeout > 0 && clockAfterStart && err == nil {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeoutCause(runCtx, p.Limits.Timeout, context.DeadlineExceeded)
		defer stop()
	}
	job.Trace.Mark("start sandbox")
	if ll, ok := sb.(interface{ Landlock() int }); ok && err == nil {
		job.Trace.Note("landlock abi %d", ll.Landlock())
	}
	if err != nil {
		switch {
		case runCtx.Err() != nil:
			c.ended(runCtx, res)
		default:
			fail(&runFailure{CodeInitFailed, "start sandbox: " + err.Error(), failureHint(p, err)})
		}
		return host.stopEgress()
	}

	res.Status = StatusOK
	live := liveWriters(job)
	main, cleanups := splitCleanup(job.Steps)
	oc, killed := c.watchSteps(ctx, runCtx, sb, p.Limits.KillGrace, main, live, res, outs)
	job.Trace.Mark("steps")
	runEnded := runCtx.Err() != nil || killed
	if runEnded {
		c.ended(runCtx, res)
	} else {
		settle(res, oc.hardFail)
	}
	switch {
	case len(cleanups) > 0 && runEnded:
		// The sandbox was killed with the run: the cleanup commands get a
		// fresh one of the same plan, after this one is gone.
		c.closeSandbox(ctx, sb, p, res)
		c.cleanupFresh(ctx, b, p, cleanups, live, res, outs)
	case len(cleanups) > 0:
		c.runCleanup(ctx, sb, cleanups, live, res, outs, oc.outputs)
		return c.closeLast(ctx, job, sb, res, host)
	default:
		return c.closeLast(ctx, job, sb, res, host)
	}
	return host.stopEgress()
}

// closeLast closes the run's sandbox after its last command and stops its
// egress proxy, returning the proxy's records. With c.Behind the sandbox
// and the host setup are torn down behind the result, from now on, or, in
// a resident controller (c.Pool), once the result is final (job.teardown,
// which Execute starts): what the result needs of them (peak memory, the
// OOM verdict, the egress records) is read first.
func (c *Controller) closeLast(ctx context.Context, job *Job, sb isolation.Sandbox, res *Result, host *hostSetup) []EgressEntry {
	p := job.Plan
	copiedBack := c.copyBack(ctx, sb, res)
	if c.Behind == nil || (job.changes != nil && !copiedBack) {
		// A run whose writes are recorded is closed first: no process of
		// it may write while they are read. (A sandbox whose writes were
		// copied back writes no more to the host.)
		c.closeSandbox(ctx, sb, p, res)
		return host.stopEgress()
	}
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	c.readStats(cctx, sb, p, res)
	ccancel()
	eg := host.stopEgress()
	undo := host.undo.Release()
	teardown := func() error {
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer ccancel()
		err := sb.Close(cctx)
		undo()
		return err
	}
	if c.Pool == nil {
		// A one-shot run waits for its teardown before it exits: the
		// teardown runs beside the run record and the audit line.
		c.Behind.goTeardown(p.RunID, teardown)
	} else {
		job.teardown = teardown
	}
	return eg
}

// start starts the job's sandbox: it claims the job's warm sandbox, and
// starts one cold when there is none or the claim failed (a warm sandbox
// is destroyed by a failed claim; the cold start under the same run id
// checks and builds everything again).
func (c *Controller) start(ctx context.Context, b isolation.Backend, job *Job) (isolation.Sandbox, error) {
	if w := job.warm; w != nil {
		sb, err := w.w.Claim(ctx, job.Plan)
		if err == nil {
			job.Trace.Note("warm sandbox claimed")
			return sb, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		job.Trace.Note("claim of the warm sandbox failed, starting cold: %v", err)
	}
	return b.Start(ctx, job.Plan)
}

// runFailure is why a run could not start: an error code, a message and
// the fix.
type runFailure struct {
	code, msg, hint string
}

func (f *runFailure) info() *ErrorInfo {
	hint := f.hint
	if hint != "" && strings.Contains(f.msg, hint) {
		hint = "" // the message already says how to fix it
	}
	return &ErrorInfo{Code: f.code, Message: f.msg, Hint: hint}
}

// hostSetup is what a run made on the host before its sandbox started;
// tearDown undoes it.
type hostSetup struct {
	undo  cleanup.Cleanup
	proxy func() []EgressEntry
}

// setUpHost makes what the plan says the run needs on the host: the
// missing directories of write grants, the run's host directory (in a
// private runtime directory, held against gc), the egress proxy; and it
// reaps, beside it, what crashed runs of this tier left. On failure what
// was made is undone.
func (c *Controller) setUpHost(ctx context.Context, job *Job, b isolation.Backend) (_ *hostSetup, f *runFailure) {
	p := job.Plan
	h := &hostSetup{}
	defer func() {
		if f != nil {
			h.tearDown()
		}
	}()
	if !filepath.IsAbs(p.HostDir) {
		return h, &runFailure{CodeInitFailed, fmt.Sprintf("the plan's host directory %q is not an absolute path", p.HostDir), "set SANDBOXED_RUNTIME_DIR to an absolute path"}
	}
	if job.create != nil {
		if err := CreateWriteDirs(job.create.grants, job.create.uid, job.create.gid); err != nil {
			return h, &runFailure{CodeInitFailed, err.Error(), ""}
		}
	}
	if p.Changes != nil {
		rc, note, f := beginChanges(p, p.Tool)
		if f != nil {
			return h, f
		}
		job.changesNote, job.changes = note, rc
	}
	if err := ensurePrivateDir(filepath.Dir(p.HostDir)); err != nil {
		return h, &runFailure{CodeInitFailed, err.Error(), "set SANDBOXED_RUNTIME_DIR to a directory only you can write"}
	}
	if w := job.warm; w != nil {
		w.owned = true
		// The pool made the run's live hold and host directory with the
		// warm sandbox; the run owns them now.
		h.undo.Add(w.drop)
	} else {
		// The run's directory appears with its liveness lock held, before
		// any labelled resource exists; release removes it, then drops
		// the lock.
		release, err := holdRun(p.HostDir)
		if err != nil {
			return h, &runFailure{CodeInitFailed, err.Error(), ""}
		}
		h.undo.Add(release)
	}
	// Reap what crashed runs of this tier left, alongside this run's start
	// (`sandboxed gc` covers every tier).
	if c.gcDue(b.Tier()) {
		gcDone := make(chan struct{})
		go func() {
			defer close(gcDone)
			gctx, gcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer gcancel()
			_, _ = c.gc(gctx, nil, b)
		}()
		// Torn down first: the run's directory outlives the gc beside it.
		h.undo.Add(func() { <-gcDone })
	}
	if p.Egress != nil {
		if job.Proxy == nil {
			return h, &runFailure{CodeInitFailed, "network permissions are not supported in this build", "remove the network: permissions"}
		}
		secrets, err := startInspection(ctx, p.Egress, p.RunID, p.Limits.Timeout, job.hostEnv)
		if err != nil {
			return h, &runFailure{CodeInitFailed, "prepare run: " + err.Error(), ""}
		}
		job.redact = newRedactor(secrets.Values)
		stop, err := job.Proxy.Start(ctx, p.Egress, secrets)
		if err != nil {
			return h, &runFailure{CodeInitFailed, "prepare run: " + err.Error(), hintFor(err)}
		}
		h.proxy = stop
	}
	return h, nil
}

// tearDown undoes what setUpHost made, except the egress proxy
// (stopEgress). It is idempotent.
func (h *hostSetup) tearDown() {
	h.undo.Clean()
}

// stopEgress stops the egress proxy, if the run has one, and returns its
// records. It is idempotent.
func (h *hostSetup) stopEgress() []EgressEntry {
	if h.proxy == nil {
		return nil
	}
	stop := h.proxy
	h.proxy = nil
	return stop()
}

// watchSteps runs the steps under the watchdog: when the run's time is up
// or sandboxed is interrupted, every process of the sandbox gets SIGTERM,
// then SIGKILL after the grace. It reports whether the watchdog killed
// the sandbox.
func (c *Controller) watchSteps(ctx, runCtx context.Context, sb isolation.Sandbox, grace time.Duration, steps []JobStep, live live, res *Result, outs *outputs) (stepsOutcome, bool) {
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
			_ = sb.Kill(kctx, grace)
		case <-done:
		}
	}()
	oc := c.runSteps(runCtx, sb, steps, live, res, outs)
	close(done)
	<-watchdogDone
	return oc, killed.Load()
}

// settle sets the status of a run whose steps all ran (the run's time was
// not up): the first step that failed without continue-on-error decides.
func settle(res *Result, hardFail *StepResult) {
	switch {
	case hardFail != nil && hardFail.Status == StatusTimeout:
		res.Status = StatusTimeout
		res.ExitCode = ExitCodeFor(StatusTimeout, 0, CodeTimeout)
		res.Error = &ErrorInfo{Code: CodeTimeout, Message: fmt.Sprintf("step %s was killed at its time limit", hardFail.Name),
			Hint: "raise the step's timeout if it needs longer"}
	case hardFail != nil:
		res.Status = StatusFailed
		res.ExitCode = hardFail.ExitCode
		if hardFail.Status == StatusError {
			res.Error = &ErrorInfo{Code: CodeExecFailed, Message: fmt.Sprintf("step %s could not run", hardFail.Name)}
		}
	default:
		// Every step succeeded, was skipped by its condition, or failed
		// with continue-on-error (ignore-errors): the run succeeded.
		res.ExitCode = 0
	}
}

// copyBacker is a sandbox whose write grants are copies, brought back to
// the host by CopyBack (the Kubernetes backend's pods); Close does it
// when CopyBack was not called.
type copyBacker interface {
	CopyBack(ctx context.Context) error
}

// copyBack brings sb's write grants back now, when they are copies, so
// that the result (its change record, its protected-path warnings) is of
// what reached the host, whatever runs behind it. It reports whether it
// did; a failure is the run's error.
func (c *Controller) copyBack(ctx context.Context, sb isolation.Sandbox, res *Result) bool {
	cb, ok := sb.(copyBacker)
	if !ok {
		return false
	}
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer ccancel()
	if err := cb.CopyBack(cctx); err != nil && res.Status == StatusOK {
		res.Status = StatusError
		res.ExitCode = ExitCodeFor(StatusError, 0, CodeUnexpected)
		res.Error = &ErrorInfo{Code: CodeUnexpected, Message: "copy the write grants back: " + err.Error()}
	}
	return true
}

// closeSandbox reads the sandbox's peak memory and whether the OOM killer
// struck, then closes it, on a context of its own.
func (c *Controller) closeSandbox(ctx context.Context, sb isolation.Sandbox, p *isolation.Plan, res *Result) {
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer ccancel()
	c.readStats(cctx, sb, p, res)
	if err := sb.Close(cctx); err != nil && res.Status == StatusOK {
		res.Status = StatusError
		res.ExitCode = ExitCodeFor(StatusError, 0, CodeUnexpected)
		res.Error = &ErrorInfo{Code: CodeUnexpected, Message: "clean up sandbox: " + err.Error()}
	}
}

// readStats reads the sandbox's peak memory and whether the OOM killer
// struck into res.
func (c *Controller) readStats(cctx context.Context, sb isolation.Sandbox, p *isolation.Plan, res *Result) {
	if st, err := sb.Stats(cctx); err == nil {
		res.PeakMemoryBytes = st.PeakMemoryBytes
		res.Observed = st.Accesses
		if st.OOMKilled && res.Status != StatusTimeout {
			res.Status = StatusOOM
			res.ExitCode = ExitCodeFor(StatusOOM, 0, CodeQuota)
			res.Error = &ErrorInfo{
				Code:    CodeQuota,
				Message: fmt.Sprintf("killed by the memory limit of %s", units.FormatSize(p.Limits.MemoryBytes)),
				Hint:    "raise resources.max-memory in the definition (and the policy's memory cap) if the tool needs more",
			}
		}
	}
}

// ended sets the status of a run whose context ended before it did.
func (c *Controller) ended(runCtx context.Context, res *Result) {
	cause := context.Cause(runCtx)
	switch {
	case errors.Is(cause, context.DeadlineExceeded):
		res.Status = StatusTimeout
		res.ExitCode = ExitCodeFor(StatusTimeout, 0, CodeTimeout)
		res.Error = &ErrorInfo{Code: CodeTimeout, Message: "killed at the run's time limit",
			Hint: "raise timeout (or resources.timeout) in the definition if the tool needs longer"}
	default:
		res.Status = StatusError
		res.ExitCode = ExitCodeFor(StatusError, 0, CodeUserCancelled)
		res.Error = &ErrorInfo{Code: CodeUserCancelled, Message: "interrupted; the sandbox was torn down"}
	}
}

// withEnvFix adds EnvFix's fix for tier to the hint of e, the error of a
// run that could not start.
func (c *Controller) withEnvFix(tier isolation.Tier, e *ErrorInfo) *ErrorInfo {
	if c.EnvFix == nil || e == nil {
		return e
	}
	fix := c.EnvFix(tier)
	if fix == "" || strings.Contains(e.Hint, fix) {
		return e
	}
	if e.Hint == "" {
		e.Hint = fix
	} else {
		e.Hint += "; " + fix
	}
	return e
}

// withRaise puts first in a failed run's hint that the policy planned the
// run in a stronger tier than the one asked for: the failure is that
// tier's, and the way to the tier asked for goes through the policy, not
// through this host's setup. d is the policy's decision (nil: none).
func withRaise(d *policy.Decision, e *ErrorInfo) *ErrorInfo {
	if e == nil || d == nil || d.RaisedFrom == "" {
		return e
	}
	why := "this run was not in the tier asked for: " + d.RaiseNote
	if d.RaisedFrom == tool.IsolationNone {
		why += "; the policy never runs such a tool unsandboxed: to run it in none, install it " +
			"(sandboxed tool import FILE --scope user, then sandboxed run NAME: tools of the user and global scopes may run in none with --approve isolation-none) " +
			"or trust its folder in the policy's sources (sandboxed policy show)"
	}
	if e.Hint == "" {
		e.Hint = why
	} else {
		e.Hint = why + "; " + e.Hint
	}
	return e
}

// failureHint is the hint of a run that could not be checked or started:
// hintFor(err), or, for a process-tier run on a host where the process
// tier cannot run (a CI container), the way out: the landlock tier, for
// this run or by the policy. (Where the policy lets it stand in, the run
// was planned in the landlock tier already.)
func failureHint(p *isolation.Plan, err error) string {
	if p.Tier == isolation.TierProcess && p.Backend == "" {
		if why := landlock.ProcessTierBlocked(); why != "" {
			return why + ": run the tool in the landlock tier — --approve " + policy.ApproveIsolationLandlock +
				" for this run, or isolation.without-namespaces: landlock in the policy's sources rule (docs/ci.md)"
		}
	}
	return hintFor(err)
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
