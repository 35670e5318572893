package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/tier"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/landlock"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// ApproveIsolationProcess approves running a container-tier tool in the
// process tier (--isolation process).
const ApproveIsolationProcess = "isolation-process"

// Request is one `sandboxed run`: a loaded definition, its arguments, and
// what the operator and the caller said.
type Request struct {
	// Trace, when set, is told when each phase of the run ends
	// (SANDBOXED_TRACE=1): the run's own, so that a server's concurrent
	// runs each trace to their caller.
	Trace  *Tracer
	Def    *tool.Definition
	Input  tool.Input
	Policy *policy.Policy
	// PolicyFile is where Policy came from ("" for the built-in default).
	PolicyFile string
	// Isolation overrides the definition's tier for this run ("" keeps it).
	Isolation string
	// Approvals are the --approve values.
	Approvals []string
	// Answered are approvals the user gave when asked (the values of
	// PrepareError.Approvals, after the CLI's prompt). They allow like
	// Approvals, but the audit line does not list them as --approve flags.
	Answered []string
	// Stdout and Stderr receive the tool's output live (nil in --json).
	Stdout, Stderr io.Writer
	// Stdin is the terminal for interactive tools; nil feeds them their
	// default response (interactive-options.default-response).
	Stdin io.Reader
	// Egress starts the run's egress proxy (isolation/egress) from the
	// plan's egress section; nil refuses network grants when the run
	// starts.
	Egress EgressStarter
	// DryRun plans without running: the controller does not even make its
	// own directories. Planning itself never changes the host.
	DryRun bool
	// OwnDirs are sandboxed's own directories, denied to every grant
	// whatever the policy says (ProtectOwnDirs); nil means those of this
	// process's environment (StateDir, RuntimeDir, the cache).
	OwnDirs []string
	// RuntimeDir holds the run's host directory; "" is RuntimeDir().
	RuntimeDir string
	// Cwd is the run's working directory; "" is the process's own.
	Cwd string
	// FindTool finds the tools of use-tool steps and dependencies; nil
	// searches the standard scopes (ScopeFinder).
	FindTool ToolFinder
	// Env is the environment the run's env: grants and inherited
	// environment read; nil is the process's own (a server passes its
	// caller's).
	Env []string
	// Cluster is the operator's backend choice (--backend, --runtime-class).
	Cluster Cluster
	// Review has the tool write into working copies of its write grants;
	// the change reaches them once approved (run --review). An approval
	// "writes" applies it without asking; else ReviewWrites is asked.
	Review bool
	// ReviewWrites, when set, shows a reviewed run's change (text made
	// safe for a terminal) and says whether to apply it; nil applies
	// nothing unless "writes" is approved.
	ReviewWrites func(change *ChangesInfo) (bool, error)
	// StateDir holds the change records; "" is the controller's.
	StateDir string
}

// Prepared is a run planned and allowed, ready to execute or to print.
type Prepared struct {
	RunID    string
	Bound    *tool.Bound
	Grants   []permissions.Grant
	Decision *policy.Decision
	Facts    *HostFacts
	Plan     *isolation.Plan
	Steps    []JobStep
	Notes    []string

	watches []protectedWatch // looked at again after the run
	input   PlanInput        // what the plan was built from (withRunID)
}

// withRunID is the run planned again under another run id (that of the
// warm sandbox it claims): the run record, the plan, its cgroup and host
// directory all carry the one id.
func (p *Prepared) withRunID(runID string) (*Prepared, error) {
	in := p.input
	in.RunID = runID
	plan, steps, watches, err := buildPlan(in)
	if err != nil {
		return nil, err
	}
	cp := *p
	cp.RunID, cp.Plan, cp.Steps, cp.watches, cp.input = runID, plan, steps, watches, in
	return &cp, nil
}

// PrepareError is a run that was refused or could not be prepared; the
// Result says so, with the status and error the caller reports.
type PrepareError struct {
	Result   *Result
	Decision *policy.Decision // set when the policy refused
	// Approvals, when set, are what the policy asks approval for, as
	// --approve values: approving them all lets the run go. A caller with
	// a user to ask shows Decision's items, and prepares again with the
	// answer in Request.Answered, or reports Declined.
	Approvals []string
	Err       error
}

func (e *PrepareError) Error() string { return e.Err.Error() }
func (e *PrepareError) Unwrap() error { return e.Err }

// Declined is the refusal of a run whose approval the user declined when
// asked (e is the refusal that asked).
func (e *PrepareError) Declined() *PrepareError {
	r := *e.Result
	r.Status = StatusDenied
	r.Error = &ErrorInfo{Code: policy.CodeUserRejected, Message: "you declined the run", Hint: e.Decision.Hint()}
	r.ExitCode = r.ProcessExitCode()
	return &PrepareError{Result: &r, Decision: e.Decision, Err: policy.ErrDenied}
}

// AskFailed is the refusal of a run whose approval could not be asked
// for (the terminal failed); e is the refusal that asked.
func (e *PrepareError) AskFailed(err error) *PrepareError {
	r := *e.Result
	r.Status = StatusError
	r.Error = &ErrorInfo{Code: CodeUnexpected, Message: "ask for approval: " + err.Error()}
	r.ExitCode = r.ProcessExitCode()
	return &PrepareError{Result: &r, Decision: e.Decision, Err: err}
}

// Prepare binds, resolves, decides and plans a run without running it.
// It reads the host and changes nothing on it (facts.go). A refusal is a
// *PrepareError carrying a Result (status denied or error); a run that
// needs the user's approval is one whose Approvals say what to ask.
//
// Its phases: gather the host facts; bind the tool and resolve its grants
// (bindRun); decide (decideRun, with refusalOf); check and gather what the
// plan needs under the grants; build the plan (buildPlan).
func Prepare(req *Request, runID string) (*Prepared, error) {
	rf := refuser{req: req, runID: runID}
	facts, err := GatherFacts(req.Cwd, req.RuntimeDir, req.OwnDirs)
	if err != nil {
		return nil, rf.refuse(StatusError, CodeInitFailed, err.Error(), "", err, nil)
	}
	if req.Env != nil {
		facts.Env = req.Env
	}
	pol := ProtectOwnDirs(req.Policy, facts.OwnDirs)
	br, perr := bindRun(req, facts, rf)
	if perr != nil {
		return nil, perr
	}
	d, perr := decideRun(req, pol, facts, br, rf)
	if perr != nil {
		return nil, perr
	}
	if err := CheckNoSockets(br.grants, facts.Cwd); err != nil {
		return nil, rf.refuse(StatusDenied, CodeSecurity, err.Error(), "grant the files the tool needs, not a directory that holds sockets", err, &d)
	}
	gatherMasks(facts, &d, mountGrants(br.grants))
	gatherWriteGrants(facts, mountGrants(br.grants))
	gatherCgroup(facts, d.Isolation, kubernetesRun(PlanInput{Decision: &d, Cluster: req.Cluster}), planLimits(&d))
	if d.Isolation == tier.Landlock && slices.Contains(d.AcceptGaps, tier.GapMasks) {
		if g, own := ownDirInGrant(mountGrants(br.grants), facts.OwnDirs); g != "" {
			msg := fmt.Sprintf("the landlock tier cannot hide %s, sandboxed's own directory, inside the grant of %s (Landlock cannot narrow a grant), and the masks gap the policy accepts never covers it", own, g)
			return nil, rf.refuse(StatusDenied, CodeSecurity, msg, "grant a narrower directory that does not hold "+own+", or run the tool in the process or container tier", ErrOwnDirInGrant, &d)
		}
	}

	in := PlanInput{
		RunID: runID, Bound: br.bound, Grants: br.grants, Decision: &d, Facts: facts,
		EnvDeny: pol.Environment.Deny, SubTools: br.comp.subs, Cluster: req.Cluster,
		Changes: ChangesInput{StateDir: req.StateDir, Review: req.Review, Bounds: pol.UndoBounds()},
	}
	if msg := reviewRefusal(req, d, in); msg != "" {
		return nil, rf.refuse(StatusError, CodeValidation, msg, "run it without --review (`sandboxed undo RUN_ID` can still put its writes back)", ErrPlan, &d)
	}
	plan, steps, watches, err := buildPlan(in)
	if err != nil {
		return nil, rf.refuse(StatusError, CodeInitFailed, err.Error(), hintFor(err), err, &d)
	}
	def := req.Def
	notes := append(append([]string(nil), d.Notes...), br.comp.notes...)
	notes = append(notes, quotaNotes(plan.Egress)...)
	for _, g := range isolation.ReducedGrantAccess(plan, os.Geteuid(), os.Stat) {
		notes = append(notes, g.String())
	}
	notes = append(notes, approximationNotes(plan)...)
	if n := isolationNote(def.Security.Isolation, d, req.Isolation); n != "" {
		notes = append(notes, n)
	}
	return &Prepared{RunID: runID, Bound: br.bound, Grants: br.grants, Decision: &d, Facts: facts, Plan: plan, Steps: steps, Notes: notes, watches: watches, input: in}, nil
}

// refuser makes the refusals of one run's preparation.
type refuser struct {
	req   *Request
	runID string
}

func (rf refuser) refuse(st Status, code, msg, hint string, err error, d *policy.Decision) *PrepareError {
	def := rf.req.Def
	r := &Result{RunID: rf.runID, Tool: def.Name, Version: def.Version, Isolation: string(def.Security.Isolation),
		Status: st, Steps: []StepResult{}, Egress: []EgressEntry{}, StartedAt: time.Now().UTC(),
		Error: &ErrorInfo{Code: code, Message: msg, Hint: hint}}
	r.ExitCode = r.ProcessExitCode()
	return &PrepareError{Result: r, Decision: d, Err: err}
}

// boundRun is a bound tool with its grants resolved on the host and its
// sub-tools bound; resolveErr is a grant path that could not be resolved,
// reported once the policy has decided.
type boundRun struct {
	bound      *tool.Bound
	grants     []permissions.Grant
	comp       *composition
	resolveErr error
}

// bindRun binds the tool to its arguments, resolves its permissions into
// grants and their paths on the host, and binds its sub-tools.
func bindRun(req *Request, facts *HostFacts, rf refuser) (*boundRun, *PrepareError) {
	def := req.Def
	cwd, home := facts.Cwd, facts.Home
	tmp := filepath.Join(os.TempDir(), "sandboxed-tmp")
	benv := tool.BindEnv{ToolName: def.Name, Workspace: cwd, Temp: tmp, Home: home}
	b, err := tool.Bind(def, req.Input, benv)
	if err != nil {
		code := CodeInvalidParams
		if errors.Is(err, tool.ErrMissingParam) {
			code = CodeMissingParam
		}
		return nil, rf.refuse(StatusError, code, err.Error(), "see `sandboxed tool get "+def.Name+"` for the parameters", err, nil)
	}
	grants, err := permissions.Resolve(b.Permissions, cwd, home)
	if err != nil {
		return nil, rf.refuse(StatusError, CodeValidation, err.Error(), "fix security.required-permissions (grammar: "+tool.PermissionGrammar+")", err, nil)
	}
	// A path that cannot be resolved is reported after the policy: a
	// denied path is denied whether or not it exists.
	resolveErr := ResolveMounts(grants, false)
	comp, err := compose(req.FindTool, b, grants, benv, cwd, home)
	if err != nil {
		if errors.Is(err, ErrBeyondCaller) {
			return nil, rf.refuse(StatusDenied, CodePermission, err.Error(), "a sub-tool runs in its caller's sandbox and may ask for no more than the caller", err, nil)
		}
		return nil, rf.refuse(StatusError, CodeResourceMissing, err.Error(), "", err, nil)
	}
	return &boundRun{bound: b, grants: grants, comp: comp, resolveErr: resolveErr}, nil
}

// decideRun asks the policy about the run, with the approvals given
// (--approve values and answers) and the --isolation override.
func decideRun(req *Request, pol *policy.Policy, facts *HostFacts, br *boundRun, rf refuser) (policy.Decision, *PrepareError) {
	def := req.Def
	// --isolation may weaken the definition's tier only with an approval:
	// isolation-none (decided by the policy) or isolation-process (here).
	var approvals []string
	downgradeOK := false
	for _, a := range req.Approvals {
		if a == ApproveIsolationProcess {
			downgradeOK = true
			continue
		}
		if a == ApproveWrites {
			continue // the controller reads it (review.go)
		}
		approvals = append(approvals, a)
	}
	if err := policy.ValidateApprovals(approvals); err != nil {
		return policy.Decision{}, rf.refuse(StatusError, CodeValidation, err.Error(), "", err, nil)
	}
	if (req.Isolation == string(tool.IsolationProcess) || req.Isolation == string(isolation.TierLandlock)) &&
		def.Security.Isolation == tool.IsolationContainer && !downgradeOK {
		msg := fmt.Sprintf("--isolation %s is weaker than the container isolation %s asks for", req.Isolation, def.Name)
		return policy.Decision{}, rf.refuse(StatusDenied, CodePermission, msg, "to run it so anyway: --approve "+ApproveIsolationProcess, policy.ErrApprovalRequired, nil)
	}
	preq := policy.NewRequest(def, br.grants, facts.Cwd, facts.Home)
	preq.Approvals = append(approvals, req.Answered...)
	if req.Isolation != "" {
		preq.Isolation = tool.Isolation(req.Isolation)
	}
	preq.CwdResolved, preq.HomeResolved = facts.CwdResolved, facts.HomeResolved
	preq.Commands = callerCommands(br.bound)
	d := pol.Decide(preq)
	if (d.LandlockStandIn || d.LandlockRefused) && d.Isolation == tool.IsolationProcess &&
		req.Cluster.Backend != isolation.BackendKubernetes && d.Backend != isolation.BackendKubernetes {
		// The landlock tier may stand in where the process tier cannot
		// run, or the policy refuses it there: find out whether it can,
		// here and now.
		if why := landlock.ProcessTierBlocked(); why != "" {
			preq.NoProcessTier = why
			d = pol.Decide(preq)
		}
	}
	if perr := refusalOf(d, br.resolveErr, rf); perr != nil {
		return d, perr
	}
	return d, nil
}

// refusalOf is the refusal of a run the policy decided d on, with
// resolveErr the grant path that could not be resolved; nil when the run
// may go on. A denial wins over a missing path, a missing path over a
// needed approval; a run that needs approval says which approvals (so
// that the user is asked before the path is looked at again).
func refusalOf(d policy.Decision, resolveErr error, rf refuser) *PrepareError {
	var perr *PrepareError
	switch {
	case d.Verdict == policy.Deny:
		err := d.Err()
		perr = rf.refuse(StatusDenied, CodePermission, err.Error(), d.Hint(), err, &d)
	case resolveErr != nil:
		perr = rf.refuse(StatusError, CodeResourceMissing, resolveErr.Error(), "", resolveErr, &d)
	case d.Verdict != policy.Allow:
		err := d.Err()
		perr = rf.refuse(StatusDenied, CodePermission, err.Error(), d.Hint(), err, &d)
	default:
		return nil
	}
	if d.Verdict == policy.NeedsApproval {
		perr.Approvals = d.MissingApprovals()
	}
	return perr
}

// EgressStarter starts the egress proxy of a run. The CLI implements it
// over isolation/egress (cmd/sandboxed/egress.go), where the proxy's
// resolver is chosen (the host's, or the end-to-end tests' hosts file);
// nil means no run of this controller may have egress.
type EgressStarter interface {
	// Start starts the proxy the plan's egress section describes (its
	// rules, on its socket), with the run's secrets (credential values,
	// CA), and returns a function that stops the proxy and returns its
	// connection records.
	Start(ctx context.Context, e *isolation.Egress, secrets *RunSecrets) (stop func() []EgressEntry, err error)
}

// InvokingHome is the home directory of the user who asked for the run:
// under sudo, SUDO_USER's, not root's — `~` in grants, the policy's `~`
// rules and the user scope all mean that user's home.
func InvokingHome() string {
	if sudo := os.Getenv("SUDO_USER"); sudo != "" && os.Geteuid() == 0 {
		if u, err := user.Lookup(sudo); err == nil && u.HomeDir != "" {
			return u.HomeDir
		}
	}
	home, _ := os.UserHomeDir()
	return home
}

// invokingUser is the uid and gid of the user who asked for the run.
func invokingUser() (uint32, uint32) {
	return invokingUserOf(os.Geteuid(), os.Getuid(), os.Getgid(), os.Getenv("SUDO_USER"), user.Lookup)
}

// invokingUserOf is invokingUser for the given ids, SUDO_USER and user
// database.
func invokingUserOf(euid, uid, gid int, sudo string, lookup func(string) (*user.User, error)) (uint32, uint32) {
	// Under sudo the invoking user is the one who asked; without it there
	// is no name to look up (reading the user database costs a run 0.1 ms).
	// SUDO_USER is believed only from root: any process can set it, and a
	// user's run must not be planned as another user's.
	if sudo == "" || euid != 0 {
		return uint32(uid), uint32(gid)
	}
	if u, err := lookup(sudo); err == nil {
		var uid, gid uint32
		fmt.Sscan(u.Uid, &uid)
		fmt.Sscan(u.Gid, &gid)
		return uid, gid
	}
	return uint32(uid), uint32(gid)
}

// Prepare plans req as this controller runs it: its own directories are
// denied to every grant (and made first, unless req.DryRun, so that they
// resolve), and the run's host directory is under its runtime directory.
// It returns what Prepare does.
func (c *Controller) Prepare(req *Request) (*Prepared, error) {
	r := *req
	if r.OwnDirs == nil {
		r.OwnDirs = OwnDirs(c.StateDir, c.RuntimeDir)
	}
	if r.RuntimeDir == "" {
		r.RuntimeDir = c.RuntimeDir
	}
	if r.StateDir == "" {
		r.StateDir = c.StateDir
	}
	if !r.DryRun {
		c.makeOwnDirs()
		if c.StateDir != "" {
			warmRecord()
		}
	}
	return Prepare(&r, NewRunID(time.Now()))
}

// Refused records a run that was refused before it started (its run
// record and audit line) and returns its Result.
func (c *Controller) Refused(req *Request, pe *PrepareError) (*Result, error) {
	if pe.Result.Status == StatusError {
		// The host cannot run it here (not a policy's refusal).
		tier := pe.Result.Isolation
		if pe.Decision != nil && pe.Decision.Isolation != "" {
			tier = string(pe.Decision.Isolation)
		} else if req.Isolation != "" {
			tier = req.Isolation
		}
		pe.Result.Error = c.withEnvFix(isolation.Tier(tier), pe.Result.Error)
	}
	return pe.Result, c.finish(pe.Result, nil, nil, nil, func(r *Result) error { return c.audit(req, nil, pe.Decision, r) }, req.Trace)
}

// RunPrepared executes a prepared run of req and returns its Result.
func (c *Controller) RunPrepared(ctx context.Context, req *Request, p *Prepared) (*Result, error) {
	// A credential that is not there refuses the run before anything of
	// it starts (--dry-run and explain do not look).
	if msg, hint, err := missingCredential(p.Plan.Egress, req.Def, p.Facts.Env); err != nil {
		rf := refuser{req: req, runID: p.RunID}
		return c.Refused(req, rf.refuse(StatusError, CodeInitFailed, msg, hint, err, p.Decision))
	}
	p, warm := c.warmFor(p)
	job := &Job{warm: warm, Plan: p.Plan, Version: req.Def.Version, Steps: p.Steps, Stdout: req.Stdout, Stderr: req.Stderr, Stdin: req.Stdin,
		Notes: p.Notes, decision: p.Decision, Proxy: req.Egress, watches: p.watches, hostEnv: p.Facts.Env,
		create: &writeDirs{grants: p.Grants, uid: int(p.Facts.UID), gid: int(p.Facts.GID)}}
	job.ApproveWrites, job.ReviewWrites = slices.Contains(req.Approvals, ApproveWrites), req.ReviewWrites
	job.Audit = func(r *Result) error { return c.audit(req, p, p.Decision, r) }
	job.Trace = req.Trace
	job.Trace.Mark("prepare (bind, policy, plan)")
	return c.Execute(ctx, job)
}

// Run prepares and executes req. Refusals come back as a Result too, and
// are recorded like every other run; a run that needs approval is refused
// (the CLI asks first: see PrepareError.Approvals).
func (c *Controller) Run(ctx context.Context, req *Request) (*Result, *Prepared, error) {
	p, err := c.Prepare(req)
	if err != nil {
		var pe *PrepareError
		if errors.As(err, &pe) {
			res, err := c.Refused(req, pe)
			return res, nil, err
		}
		return nil, nil, err
	}
	res, err := c.RunPrepared(ctx, req, p)
	return res, p, err
}

// isolationNote says why d runs the tool in another tier than its
// definition asks for (want), where the policy's own notes do not: a raise
// has its note in d.Notes already, and the landlock tier standing in for
// the process tier is not a raise (it is the weaker tier). "" when the tier
// is the one asked for, or the caller chose it (asked).
func isolationNote(want tool.Isolation, d policy.Decision, asked string) string {
	want = orDefault(want, tool.IsolationProcess)
	switch {
	case asked != "" || d.Isolation == want || d.RaisedFrom != "":
		return ""
	case d.Isolation == tier.Landlock:
		return fmt.Sprintf("the landlock tier runs the tool in the %s tier's place, which cannot run on this host (the policy's stand-in)", want)
	}
	return fmt.Sprintf("isolation %s by the policy, where the definition asks for %s", d.Isolation, want)
}

// orDefault is t, or def when t is unset.
func orDefault(t, def tool.Isolation) tool.Isolation {
	if t == "" {
		return def
	}
	return t
}
