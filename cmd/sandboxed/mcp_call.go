package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxed-dev/sandboxed/internal/units"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/sandbox"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// progressEvery is how often a call with a progress token is reported.
const progressEvery = time.Second

// elicitTimeout bounds how long a call waits for the user's answer to an
// approval request; no answer is a refusal.
const elicitTimeout = 10 * time.Minute

// freeAfter is the size of output after which a call (or a read of a
// run's output) gives the memory it took back to the system once it is
// answered, so that a resident server returns to its size after a flood:
// its garbage collector's target (residentGCPercent) would otherwise keep
// several times the output.
const freeAfter = 1 << 20

// givingBack is set while a giveMemoryBack is pending.
var givingBack atomic.Bool

// giveMemoryBack collects and returns freed memory to the system shortly
// after the answer in hand is written; calls while one is pending share it.
func giveMemoryBack() {
	if !givingBack.CompareAndSwap(false, true) {
		return
	}
	time.AfterFunc(200*time.Millisecond, func() {
		givingBack.Store(false)
		debug.FreeOSMemory()
	})
}

// mcpHandler serves the calls of a server's tools: each goes through the
// policy (asking the client's user where it can) and the controller, and
// comes back as a result within the output budget.
type mcpHandler struct {
	log       *mcpLog
	ctl       *sandbox.Controller
	cluster   sandbox.Cluster // --backend and --runtime-class
	pol       *policy.Policy
	polPath   string
	approvals []string
	// review: calls write into working copies of their write grants, and
	// the change is applied once the client's user accepts it (mcp
	// --review).
	review bool
	trace  bool // SANDBOXED_TRACE=1: each call's trace on stderr
	budget int  // of output in a result
	out    *outputStore
	// stopping, when set, ends when the server is told to stop: the
	// calls in flight are interrupted with its cause.
	stopping context.Context

	mu sync.Mutex
	// approved are approvals the user gave "for this session" through
	// elicitation, by tool name.
	approved map[string][]string
}

// handler serves the calls of def, run in cwd.
func (h *mcpHandler) handler(def *tool.Definition, cwd string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		if h.stopping != nil {
			var cancel context.CancelCauseFunc
			ctx, cancel = context.WithCancelCause(ctx)
			defer cancel(nil)
			defer context.AfterFunc(h.stopping, func() { cancel(context.Cause(h.stopping)) })()
		}
		var trace *sandbox.Tracer
		if h.trace {
			// From the handler's start, to the server's stderr.
			trace = sandbox.NewTracer(h.log.w, start)
		}
		args := []byte(req.Params.Arguments)
		if len(strings.TrimSpace(string(args))) == 0 || string(args) == "null" {
			args = []byte("{}")
		}
		in, err := tool.ParseParamsJSON(args)
		if err != nil {
			return errorResult(err.Error()), nil
		}
		sreq := &sandbox.Request{
			Def: def, Input: in, Policy: h.pol, PolicyFile: h.polPath,
			Approvals: h.approvals, Answered: h.sessionApprovals(def.Name),
			Egress: newEgressStarter(), Cluster: h.cluster, Cwd: cwd,
			Trace: trace,
		}
		if h.review {
			sreq.Review = true
			sreq.ReviewWrites = func(ch *sandbox.ChangesInfo) (bool, error) { return h.elicitChange(ctx, req.Session, def, ch) }
		}
		if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
			var out, errOut outputCounter
			sreq.Stdout, sreq.Stderr = &out, &errOut
			stop := h.progress(ctx, req.Session, tok, start, &out, &errOut)
			defer stop()
		}
		res, err := h.run(ctx, req.Session, sreq)
		if res == nil {
			h.log.callf(ctx, req.Session, "error", "call %s: %v", def.Name, err)
			return errorResult("run " + def.Name + ": " + err.Error()), nil
		}
		if err != nil {
			h.log.callf(ctx, req.Session, "warning", "%s: %v", def.Name, err)
		}
		h.log.callf(ctx, req.Session, "info", "call %s: %s, exit %d (run %s)", def.Name, res.Status, res.ExitCode, res.RunID)
		// Warnings are for the operator as much as for the agent.
		for _, w := range res.Warnings {
			h.log.callf(ctx, req.Session, "warning", "%s: %s", def.Name, w)
		}
		r := callResult(res, h.budget, h.out.links)
		if len(res.Stdout)+len(res.Stderr) > freeAfter {
			// The result holds excerpts only; the output itself goes
			// with res once the answer is written.
			giveMemoryBack()
		}
		return r, nil
	}
}

// run prepares and runs a call as `sandboxed run` would; where the policy
// asks for an approval and the client can ask its user (elicitation), it
// asks, and runs the call once approved.
func (h *mcpHandler) run(ctx context.Context, ss *mcp.ServerSession, req *sandbox.Request) (*sandbox.Result, error) {
	p, err := h.ctl.Prepare(req)
	var pe *sandbox.PrepareError
	if errors.As(err, &pe) && len(pe.Approvals) > 0 && canElicit(ss) {
		// The policy asks (a denial never gets here: Approvals is only
		// set for a run that approvals let go).
		switch ans, aerr := h.elicit(ctx, ss, req.Def, pe); {
		case aerr != nil:
			h.log.callf(ctx, ss, "warning", "%s: ask the user for approval: %v (taken as a refusal)", req.Def.Name, aerr)
			err = pe.Declined()
		case ans == approveCall || ans == approveSession:
			req.Answered = append(req.Answered, pe.Approvals...)
			if ans == approveSession {
				h.approveForSession(req.Def.Name, pe.Approvals)
			}
			p, err = h.ctl.Prepare(req)
		default:
			err = pe.Declined()
		}
	}
	switch {
	case errors.As(err, &pe):
		return h.ctl.Refused(req, pe)
	case err != nil:
		return nil, err
	}
	return h.ctl.RunPrepared(ctx, req, p)
}

// The answers to an approval request.
const (
	approveCall    = "this call"
	approveSession = "this session"
	approveNo      = "no"
)

// canElicit reports whether the client declared it can ask its user, on
// a protocol where a server may ask during a call: from 2026-07-28 a
// server asks by returning input requests instead (multi round-trip
// requests), which this server does not make; such a call gets the
// refusal that says which approval to give.
func canElicit(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil && p.ProtocolVersion < firstStatelessProtocol
}

// firstStatelessProtocol is the first MCP version without sessions.
const firstStatelessProtocol = "2026-07-28"

// elicit asks the client's user to approve what pe asks for: the same
// items, risks and justification as the terminal prompt, and the choice
// of this call or every call of the tool in this session. It returns the
// answer (approveNo when declined or dismissed).
func (h *mcpHandler) elicit(ctx context.Context, ss *mcp.ServerSession, def *tool.Definition, pe *sandbox.PrepareError) (string, error) {
	var msg strings.Builder
	describeApproval(&msg, def, pe.Decision)
	fmt.Fprintf(&msg, "Approving allows %s for this tool alone (as --approve %s would).\n",
		strings.Join(pe.Approvals, ", "), strings.Join(pe.Approvals, " --approve "))
	fmt.Fprintf(&msg, "Approve for this call only, for every call of %s until the MCP server stops, or not at all?", def.Name)
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"approve": map[string]any{
				"type":        "string",
				"title":       "Approve " + def.Name + "?",
				"description": "approving lets the tool have: " + strings.Join(pe.Approvals, ", "),
				"enum":        []string{approveCall, approveSession, approveNo},
			},
		},
		"required": []string{"approve"},
	}
	ctx, cancel := context.WithTimeout(ctx, elicitTimeout)
	defer cancel()
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: msg.String(), RequestedSchema: schema})
	if err != nil {
		return approveNo, err
	}
	if res.Action != "accept" {
		return approveNo, nil
	}
	ans, _ := res.Content["approve"].(string)
	switch ans {
	case approveCall, approveSession:
		return ans, nil
	}
	return approveNo, nil
}

// The answers to a review's request.
const (
	reviewApply   = "apply"
	reviewDiscard = "discard"
)

// maxElicitedDiff bounds the diff a review's request shows. A larger
// change is not put to the user at all: what the prompt cut off (where a
// tool could pad the harmful path out of sight) would be approved unseen.
const maxElicitedDiff = 32 << 10

// errCannotAskReview is a reviewed call whose client cannot ask its user.
var errCannotAskReview = errors.New("the client cannot ask its user (no elicitation on this session), so the change was not applied; start the server with --approve writes to apply reviewed changes without asking")

// elicitChange shows a reviewed call's change to the client's user and
// reports whether they accepted it. Declined, dismissed, unanswered or
// not askable, the change is not applied: nothing reaches the host.
func (h *mcpHandler) elicitChange(ctx context.Context, ss *mcp.ServerSession, def *tool.Definition, ch *sandbox.ChangesInfo) (bool, error) {
	if !canElicit(ss) {
		return false, errCannotAskReview
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "sandboxed: %s changed %d path(s) in working copies of its write grants: %d deleted, %d modified, %d created. Nothing has reached your files yet.\n",
		def.Name, ch.Created+ch.Modified+ch.Deleted, ch.Deleted, ch.Modified, ch.Created)
	diff := ch.Diff // control characters escaped (changeset.Render)
	if len(diff) > maxElicitedDiff {
		return false, fmt.Errorf("the change's diff (%d bytes) is larger than a prompt shows (%d), so it was not put to the user and not applied: review it on a terminal with sandboxed run --review, or start the server with --approve writes", len(diff), maxElicitedDiff)
	}
	msg.WriteString(diff)
	undo := "sandboxed undo RUN_ID"
	if ch.RunID != "" {
		undo = "sandboxed undo " + ch.RunID
	}
	fmt.Fprintf(&msg, "Apply this change to your files? (%s puts it back, also if applying is interrupted)", undo)
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"apply": map[string]any{
				"type":        "string",
				"title":       "Apply the change of " + def.Name + "?",
				"description": "apply writes the change to your files (" + undo + " puts it back); discard leaves them as they are",
				"enum":        []string{reviewApply, reviewDiscard},
			},
		},
		"required": []string{"apply"},
	}
	ctx, cancel := context.WithTimeout(ctx, elicitTimeout)
	defer cancel()
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: msg.String(), RequestedSchema: schema})
	if err != nil {
		return false, err
	}
	ans, _ := res.Content["apply"].(string)
	return res.Action == "accept" && ans == reviewApply, nil
}

// sessionApprovals are the approvals given for every call of tool name.
func (h *mcpHandler) sessionApprovals(name string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.approved[name]...)
}

// approveForSession keeps approvals for the calls of tool name to come.
func (h *mcpHandler) approveForSession(name string, approvals []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.approved == nil {
		h.approved = map[string][]string{}
	}
	h.approved[name] = append(h.approved[name], approvals...)
}

// describeApproval says what a run asks for that the policy does not
// allow without the user's approval: each item with its risk and the
// policy's reason, and the tool's justification. The terminal prompt and
// the MCP approval request both show it.
func describeApproval(w io.Writer, def *tool.Definition, d *policy.Decision) {
	fmt.Fprintf(w, "sandboxed: %s asks for what the policy does not allow without your approval:\n", def.Name)
	for _, it := range d.Items {
		if it.Verdict != policy.NeedsApproval {
			continue
		}
		fmt.Fprintf(w, "  - %s [%s risk]\n      %s\n      why the policy asks: %s\n", it.Subject, it.Risk, it.Description, it.Reason)
	}
	if j := def.Security.Justification; j != "" {
		fmt.Fprintf(w, "  the tool's justification: %q\n", j)
	}
}

// outputCounter counts the bytes of a stream as the tool writes them.
type outputCounter struct{ n atomic.Int64 }

func (c *outputCounter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return len(p), nil
}

// progress reports a call's time and output every progressEvery until
// the returned function is called.
func (h *mcpHandler) progress(ctx context.Context, ss *mcp.ServerSession, token any, start time.Time, out, errOut *outputCounter) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			elapsed := time.Since(start)
			msg := fmt.Sprintf("running for %s; output so far: stdout %s, stderr %s",
				elapsed.Round(100*time.Millisecond), units.FormatSize(out.n.Load()), units.FormatSize(errOut.n.Load()))
			if err := ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: elapsed.Seconds(), Message: msg}); err != nil {
				return
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// mcpLog is the server's log: each line goes to stderr and, as
// notifications/message, to the clients that asked for its level.
type mcpLog struct {
	w   io.Writer // stderr, never the protocol stream
	srv atomic.Pointer[mcp.Server]
}

// logf logs a line of the server's (not of a call).
func (l *mcpLog) logf(level mcp.LoggingLevel, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(l.w, "sandboxed: mcp: %s\n", msg)
	srv := l.srv.Load()
	if srv == nil {
		return
	}
	for ss := range srv.Sessions() {
		// The SDK sends it only at or above the level the client set.
		_ = ss.Log(context.Background(), &mcp.LoggingMessageParams{Level: level, Logger: "sandboxed", Data: msg})
	}
}

// callf logs a line of a call: to stderr, and to the session of the call,
// at the level the client set for the session or (protocol 2026-07-28)
// in the call's request.
func (l *mcpLog) callf(ctx context.Context, ss *mcp.ServerSession, level mcp.LoggingLevel, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(l.w, "sandboxed: mcp: %s\n", msg)
	if ss != nil {
		_ = ss.Log(context.WithoutCancel(ctx), &mcp.LoggingMessageParams{Level: level, Logger: "sandboxed", Data: msg})
	}
}
