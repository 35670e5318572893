package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
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
	Def    *tool.Definition
	Input  tool.Input
	Policy *policy.Policy
	// PolicyFile is where Policy came from ("" for the built-in default).
	PolicyFile string
	// Isolation overrides the definition's tier for this run ("" keeps it).
	Isolation string
	// Approvals are the --approve values.
	Approvals []string
	// Prompt asks the user to approve what the decision still needs; nil
	// when there is no terminal, and the run is then refused.
	Prompt func(d *policy.Decision) (bool, error)
	// Stdout and Stderr receive the tool's output live (nil in --json).
	Stdout, Stderr io.Writer
	// Stdin is the terminal for interactive tools; nil feeds them their
	// default response (interactive-options.default-response).
	Stdin io.Reader
	// Egress, when set, starts the run's egress proxy (isolation/egress);
	// nil refuses network grants.
	Egress EgressStarter
	// DryRun plans without touching the host (no directory is created).
	DryRun bool
	// OwnDirs are sandboxed's own directories, denied to every grant
	// whatever the policy says (ProtectOwnDirs); nil means those of this
	// process's environment (StateDir, RuntimeDir, the cache).
	OwnDirs []string
	// Cwd is the run's working directory; "" is the process's own.
	Cwd string
	// FindTool finds the tools of use-tool steps and dependencies; nil
	// searches the standard scopes (ScopeFinder).
	FindTool ToolFinder
}

// Prepared is a run planned and allowed, ready to execute or to print.
type Prepared struct {
	RunID    string
	Bound    *tool.Bound
	Grants   []permissions.Grant
	Decision *policy.Decision
	Plan     *isolation.Plan
	Steps    []JobStep
	Notes    []string

	watches []protectedWatch // looked at again after the run
}

// PrepareError is a run that was refused or could not be prepared; the
// Result says so, with the status and error the caller reports.
type PrepareError struct {
	Result   *Result
	Decision *policy.Decision // set when the policy refused
	Err      error
}

func (e *PrepareError) Error() string { return e.Err.Error() }
func (e *PrepareError) Unwrap() error { return e.Err }

// Prepare binds, resolves, decides and plans a run without running it.
// A refusal is a *PrepareError carrying a Result (status denied or error).
func Prepare(req *Request, runID string) (*Prepared, error) {
	if req.Policy != nil {
		own := req.OwnDirs
		if own == nil {
			own = OwnDirs(StateDir(), RuntimeDir())
		}
		r := *req
		r.Policy = ProtectOwnDirs(req.Policy, own)
		req = &r
	}
	def := req.Def
	refuse := func(st Status, code, msg, hint string, err error, d *policy.Decision) (*Prepared, error) {
		r := &Result{RunID: runID, Tool: def.Name, Version: def.Version, Isolation: string(def.Security.Isolation),
			Status: st, Steps: []StepResult{}, Egress: []EgressEntry{}, StartedAt: time.Now().UTC(),
			Error: &ErrorInfo{Code: code, Message: msg, Hint: hint}}
		r.ExitCode = r.ProcessExitCode()
		return nil, &PrepareError{Result: r, Decision: d, Err: err}
	}

	cwd, err := req.Cwd, error(nil)
	if cwd == "" {
		cwd, err = os.Getwd()
	}
	if err != nil {
		return refuse(StatusError, CodeInitFailed, "working directory: "+err.Error(), "", err, nil)
	}
	home := InvokingHome()
	tmp := filepath.Join(os.TempDir(), "sandboxed-tmp")
	benv := tool.BindEnv{ToolName: def.Name, Workspace: cwd, Temp: tmp, Home: home}
	b, err := tool.Bind(def, req.Input, benv)
	if err != nil {
		code := CodeInvalidParams
		if errors.Is(err, tool.ErrMissingParam) {
			code = CodeMissingParam
		}
		return refuse(StatusError, code, err.Error(), "see `sandboxed tool get "+def.Name+"` for the parameters", err, nil)
	}
	grants, err := permissions.Resolve(b.Permissions, cwd, home)
	if err != nil {
		return refuse(StatusError, CodeValidation, err.Error(), "fix security.required-permissions (grammar: "+tool.PermissionGrammar+")", err, nil)
	}
	// A path that cannot be resolved is reported after the policy: a
	// denied path is denied whether or not it exists.
	resolveErr := ResolveMounts(grants, false)
	comp, err := compose(req.FindTool, b, grants, benv, cwd, home)
	if err != nil {
		if errors.Is(err, ErrBeyondCaller) {
			return refuse(StatusDenied, CodePermission, err.Error(), "a sub-tool runs in its caller's sandbox and may ask for no more than the caller", err, nil)
		}
		return refuse(StatusError, CodeResourceMissing, err.Error(), "", err, nil)
	}

	// --isolation may weaken the definition's tier only with an approval:
	// isolation-none (decided by the policy) or isolation-process (here).
	var approvals []string
	downgradeOK := false
	for _, a := range req.Approvals {
		if a == ApproveIsolationProcess {
			downgradeOK = true
			continue
		}
		approvals = append(approvals, a)
	}
	if err := policy.ValidateApprovals(approvals); err != nil {
		return refuse(StatusError, CodeValidation, err.Error(), "", err, nil)
	}
	if req.Isolation == string(tool.IsolationProcess) && def.Security.Isolation == tool.IsolationContainer && !downgradeOK {
		msg := fmt.Sprintf("--isolation process is weaker than the container isolation %s asks for", def.Name)
		return refuse(StatusDenied, CodePermission, msg, "to run it so anyway: --approve "+ApproveIsolationProcess, policy.ErrApprovalRequired, nil)
	}
	preq := policy.NewRequest(def, grants, cwd, home)
	preq.Approvals = approvals
	if req.Isolation != "" {
		preq.Isolation = tool.Isolation(req.Isolation)
	}
	if r, err := filepath.EvalSymlinks(cwd); err == nil {
		preq.CwdResolved = r
	}
	if r, err := filepath.EvalSymlinks(home); err == nil && r != home {
		preq.HomeResolved = r
	}
	d := req.Policy.Decide(preq)
	if d.Verdict == policy.NeedsApproval && req.Prompt != nil {
		ok, perr := req.Prompt(&d)
		if perr != nil {
			return refuse(StatusError, CodeUnexpected, "ask for approval: "+perr.Error(), "", perr, &d)
		}
		if ok {
			preq.Approvals = append(preq.Approvals, d.MissingApprovals()...)
			d = req.Policy.Decide(preq)
		} else {
			return refuse(StatusDenied, policy.CodeUserRejected, "you declined the run", d.Hint(), policy.ErrDenied, &d)
		}
	}
	if d.Verdict == policy.Deny || (d.Verdict != policy.Allow && resolveErr == nil) {
		err := d.Err()
		return refuse(StatusDenied, CodePermission, err.Error(), d.Hint(), err, &d)
	}
	if resolveErr != nil {
		return refuse(StatusError, CodeResourceMissing, resolveErr.Error(), "", resolveErr, &d)
	}
	if err := CheckNoSockets(grants, cwd); err != nil {
		return refuse(StatusDenied, CodeSecurity, err.Error(), "grant the files the tool needs, not a directory that holds sockets", err, &d)
	}
	if !req.DryRun {
		uid, gid := invokingUser()
		if err := CreateWriteDirs(grants, int(uid), int(gid)); err != nil {
			return refuse(StatusError, CodeInitFailed, err.Error(), "", err, &d)
		}
	}

	uid, gid := invokingUser()
	in := PlanInput{
		RunID: runID, Bound: b, Grants: grants, Decision: &d, Cwd: cwd, Home: home,
		UID: uid, GID: gid, LookupEnv: os.LookupEnv, HostEnv: os.Environ(),
		EnvDeny: req.Policy.Environment.Deny, SubTools: comp.subs,
	}
	var egressGrants bool
	for _, g := range grants {
		if g.Egress != nil || g.Localhost != nil {
			egressGrants = true
		}
	}
	if egressGrants {
		if req.Egress == nil {
			return refuse(StatusError, CodeInitFailed, "network permissions are not supported in this build",
				"remove the network: permissions", isolation.ErrUnsupported, &d)
		}
		in.ExtraEnv = req.Egress.Env()
	}
	plan, steps, watches, err := buildPlan(in)
	if err != nil {
		return refuse(StatusError, CodeInitFailed, err.Error(), "", err, &d)
	}
	notes := append(append([]string(nil), d.Notes...), comp.notes...)
	if d.Isolation != def.Security.Isolation && req.Isolation == "" {
		notes = append(notes, fmt.Sprintf("isolation raised from %s to %s by the policy", def.Security.Isolation, d.Isolation))
	}
	return &Prepared{RunID: runID, Bound: b, Grants: grants, Decision: &d, Plan: plan, Steps: steps, Notes: notes, watches: watches}, nil
}

// EgressStarter starts the egress proxy of a run; implemented by the CLI
// over isolation/egress so this package stays free of its details.
type EgressStarter interface {
	// Env is the proxy environment the tool gets.
	Env() []string
	// Start starts the proxy for the grants on a socket inside hostDir and
	// returns the plan's Egress section and a function that stops the
	// proxy and returns its connection records.
	Start(ctx context.Context, hostDir string, grants []permissions.Grant, deny []string) (*isolation.Egress, func() []EgressEntry, error)
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

func invokingUser() (uint32, uint32) {
	// Under sudo the invoking user is the one who asked.
	if u, err := user.Lookup(os.Getenv("SUDO_USER")); err == nil && os.Getenv("SUDO_USER") != "" {
		var uid, gid uint32
		fmt.Sscan(u.Uid, &uid)
		fmt.Sscan(u.Gid, &gid)
		return uid, gid
	}
	return uint32(os.Getuid()), uint32(os.Getgid())
}

// Run prepares and executes req. Refusals come back as a Result too, and
// are recorded like every other run.
func (c *Controller) Run(ctx context.Context, req *Request) (*Result, *Prepared, error) {
	runID := NewRunID(time.Now())
	if req.OwnDirs == nil {
		r := *req
		r.OwnDirs = OwnDirs(c.StateDir, c.RuntimeDir)
		req = &r
	}
	if !req.DryRun {
		c.makeOwnDirs()
	}
	p, err := Prepare(req, runID)
	if err != nil {
		var pe *PrepareError
		if errors.As(err, &pe) {
			return pe.Result, nil, c.finish(pe.Result, nil, nil, func(r *Result) error { return c.audit(req, nil, pe.Decision, r) })
		}
		return nil, nil, err
	}
	job := &Job{Plan: p.Plan, Version: req.Def.Version, Steps: p.Steps, Stdout: req.Stdout, Stderr: req.Stderr, Stdin: req.Stdin, Notes: p.Notes, watches: p.watches}
	if hasNetwork(p.Grants) {
		job.Prepare = func(ctx context.Context, plan *isolation.Plan) error {
			e, stop, err := req.Egress.Start(ctx, plan.HostDir, p.Grants, p.Decision.EgressDeny)
			if err != nil {
				return err
			}
			plan.Egress = e
			job.Egress = stop
			return nil
		}
	}
	job.Audit = func(r *Result) error { return c.audit(req, p, p.Decision, r) }
	c.Trace.Mark("prepare (bind, policy, plan)")
	res, err := c.Execute(ctx, job)
	return res, p, err
}

func hasNetwork(gs []permissions.Grant) bool {
	for _, g := range gs {
		if g.Egress != nil || g.Localhost != nil {
			return true
		}
	}
	return false
}
