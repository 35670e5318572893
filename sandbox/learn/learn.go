package learn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/sandbox"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// ApproveLearn is the --approve value a learning run needs: the tool is
// untrusted, and while learning it sees more than its permissions will
// give it later.
const ApproveLearn = "learn"

// anyHost is the learning run's network: every public host, through the
// recording proxy (which still refuses loopback, private, link-local and
// metadata addresses).
const anyHost = string(tool.PermNetExternal) + ":*"

// ErrNeedsApproval: a learning run was asked for without --approve learn.
var ErrNeedsApproval = errors.New("learning runs the tool and needs approval")

// ErrNoFile: the definition has no file of its own to write the draft into.
var ErrNoFile = errors.New("the definition has no file to edit")

// Request is one `sandboxed permissions learn`.
type Request struct {
	Def        *tool.Definition
	Input      tool.Input
	Policy     *policy.Policy
	PolicyFile string
	// Approvals are the --approve values; ApproveLearn must be one (the
	// CLI adds it when the user says yes on a terminal).
	Approvals []string
	// Stdout and Stderr receive the tool's output live (nil in --json).
	Stdout, Stderr io.Writer
	Egress         sandbox.EgressStarter
	// Cwd is the run's working directory; "" is the process's own.
	Cwd string
}

// Session is a learning run planned: what its sandbox will show. Start
// one with New, say what it shows (View), then Run it.
type Session struct {
	req    *Request
	cwd    string
	home   string
	params []Param
	view   []string
}

// Report is what a learning run found. The field names are stable
// (`permissions learn --json`).
type Report struct {
	Tool string `json:"tool"`
	// File is the definition's file ("" for a definition without one).
	File string `json:"file,omitempty"`
	// View is what the learning sandbox showed of the host besides what
	// every sandbox shows (read-only).
	View []string `json:"view"`
	// Parameters are the parameters whose values are paths.
	Parameters []Param `json:"parameters,omitempty"`
	// Observed are the paths the run read, wrote and executed.
	Observed []isolation.Access `json:"observed"`
	// Egress are the connections the recording proxy saw.
	Egress []sandbox.EgressEntry `json:"egress"`
	Draft  *Draft                `json:"draft"`
	// Added are the permissions --write added to the definition.
	Added []string `json:"added,omitempty"`
	// Run is the learning run's result (status, exit code, output).
	Run *sandbox.Result `json:"run"`
}

// New plans a learning run of req: it binds the tool to its arguments to
// find the parameters that name paths and what the sandbox will show. It
// runs nothing.
func New(req *Request) (*Session, error) {
	cwd := req.Cwd
	if cwd == "" {
		var err error
		if cwd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("learn: working directory: %w", err)
		}
	}
	home, _ := os.UserHomeDir()
	def := req.Def
	b, err := tool.Bind(def, req.Input, tool.BindEnv{
		ToolName: def.Name, Workspace: cwd, Home: home,
		Temp: filepath.Join(os.TempDir(), "sandboxed-tmp"),
	})
	if err != nil {
		return nil, err
	}
	s := &Session{req: req, cwd: cwd, home: home}
	for _, p := range b.Params {
		if path, ok := paramPath(p, cwd, home); ok {
			s.params = append(s.params, Param{Name: p.Name, Path: path})
		}
	}
	s.view = learningView(s.params, cwd, osHost{})
	return s, nil
}

// View is what the learning sandbox shows of the host besides what every
// sandbox shows, read-only.
func (s *Session) View() []string { return s.view }

// Params are the parameters whose values are paths.
func (s *Session) Params() []Param { return s.params }

// paramPath is the host path a parameter's value names, if it names one:
// an absolute path (or ~/...), or a relative one that exists under cwd.
func paramPath(p tool.BoundParam, cwd, home string) (string, bool) {
	if p.Source == tool.SourceNone || p.Text == "" || strings.ContainsAny(p.Text, "\n\x00") {
		return "", false
	}
	v := p.Text
	switch {
	case v == "~" || strings.HasPrefix(v, "~/"):
		if home == "" {
			return "", false
		}
		v = filepath.Join(home, v[1:])
	case filepath.IsAbs(v):
	default:
		if strings.Contains(v, "://") {
			return "", false
		}
		v = filepath.Join(cwd, v)
		if _, err := os.Lstat(v); err != nil {
			return "", false
		}
	}
	v = filepath.Clean(v)
	if v == "/" {
		return "", false
	}
	return v, true
}

// learningView is what the learning sandbox shows read-only: each
// parameter's path (or, for one that does not exist yet, its nearest
// existing directory) and the working directory, leaving out what every
// sandbox shows anyway and what another entry holds.
func learningView(params []Param, cwd string, host HostInfo) []string {
	var view []string
	add := func(p string) {
		for p != "/" {
			if exists, _ := host.Stat(p); exists {
				break
			}
			p = filepath.Dir(p)
		}
		// A path under /tmp is the host's: the sandbox's own /tmp is
		// private, so the view shows it. Other given paths show anyway.
		if p == "/" || p == "/tmp" || (given(p) && !within(p, "/tmp")) {
			return
		}
		view = appendNew(view, p)
	}
	for _, pp := range params {
		add(pp.Path)
	}
	if cwd != "" {
		add(cwd)
	}
	view = dropCovered(view, nil)
	slices.Sort(view)
	return view
}

// given reports a path every process-tier sandbox shows.
func given(p string) bool {
	for _, g := range sbinit.GivenPaths() {
		if within(p, g) {
			return true
		}
	}
	return false
}

// osHost is the real host.
type osHost struct{}

func (osHost) Stat(path string) (bool, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return false, false
	}
	return true, fi.IsDir()
}

// Run runs the tool once in the learning sandbox and drafts its
// permissions. The sandbox is the process tier's with, instead of the
// definition's permissions, the view read-only and any public host
// through the recording proxy; the plan is observed (Plan.Observe). The
// run is recorded (run record, audit line) like any other. A refusal
// (the policy, a missing approval) comes back as a Report whose Run says
// so, with an error.
func (s *Session) Run(ctx context.Context, ctl *sandbox.Controller) (*Report, error) {
	req := s.req
	if !slices.Contains(req.Approvals, ApproveLearn) && !slices.Contains(req.Approvals, policy.ApproveAll) {
		return nil, fmt.Errorf("%w: pass --approve learn (the tool runs once, sees %s read-only and may reach any public host)", ErrNeedsApproval, s.describeView())
	}
	def := *req.Def
	def.Security.Isolation = tool.IsolationProcess
	def.Security.RequiredPermissions = nil
	def.Pos.Permissions = nil
	// The policy knows nothing of learning: it decides on the learning
	// view's grants, which the learning approval answers (Answered: the
	// audit line does not list them as --approve flags).
	approvals := slices.DeleteFunc(slices.Clone(req.Approvals), func(a string) bool { return a == ApproveLearn })
	var answered []string
	for _, v := range s.view {
		perm := string(tool.PermFSRead) + ":" + v
		def.Security.RequiredPermissions = append(def.Security.RequiredPermissions, perm)
		answered = append(answered, perm)
	}
	def.Security.RequiredPermissions = append(def.Security.RequiredPermissions, anyHost)
	answered = append(answered, anyHost)

	sreq := &sandbox.Request{
		Def: &def, Input: req.Input, Policy: req.Policy, PolicyFile: req.PolicyFile,
		Approvals: approvals, Answered: answered, Stdout: req.Stdout, Stderr: req.Stderr, Egress: req.Egress, Cwd: s.cwd,
	}
	rep := &Report{Tool: def.Name, File: def.Source.Path, View: s.view, Parameters: s.params,
		Observed: []isolation.Access{}, Egress: []sandbox.EgressEntry{}}
	p, err := ctl.Prepare(sreq)
	var pe *sandbox.PrepareError
	if errors.As(err, &pe) && len(pe.Approvals) > 0 && learningOnly(pe.Approvals, answered) {
		// What the policy still asks approval for is the learning run
		// itself (running a tool of its tier): answered too.
		sreq.Answered = append(slices.Clone(answered), pe.Approvals...)
		p, err = ctl.Prepare(sreq)
	}
	if errors.As(err, &pe) {
		res, rerr := ctl.Refused(sreq, pe)
		rep.Run = res
		return rep, errors.Join(fmt.Errorf("learn %s: %w", def.Name, err), rerr)
	}
	if err != nil {
		return nil, err
	}
	if p.Plan.Tier != isolation.TierProcess {
		return nil, isolation.ObserveUnsupported(p.Plan.Tier)
	}
	// Set before the plan runs, and only here: an observed plan is one
	// no other command makes.
	p.Plan.Observe = true
	res, err := ctl.RunPrepared(ctx, sreq, p)
	if res == nil {
		return nil, err
	}
	rep.Run = res
	if res.Observed != nil {
		rep.Observed = res.Observed
	}
	rep.Egress = res.Egress
	rep.Draft = MakeDraft(res.Observed, res.Egress, Scene{
		View: s.view, Params: s.params, Cwd: s.cwd, Home: s.home, Given: given, Host: osHost{},
	})
	if res.Status == sandbox.StatusError || res.Status == sandbox.StatusDenied {
		msg := string(res.Status)
		if res.Error != nil {
			msg = res.Error.Message
		}
		return rep, errors.Join(fmt.Errorf("learn %s: the learning run failed: %s", def.Name, msg), err)
	}
	return rep, err
}

// learningOnly reports whether every approval asked for is one the
// learning approval covers: a grant of the learning view (in answered
// already) or the tool's security tier (tier:TIER).
func learningOnly(asked, answered []string) bool {
	for _, a := range asked {
		if !slices.Contains(answered, a) && !strings.HasPrefix(a, "tier:") {
			return false
		}
	}
	return true
}

// Touched are the observed accesses of paths every sandbox does not show
// anyway (the system directories, /proc, /dev, the sandbox's own /tmp):
// what the draft was made from.
func (r *Report) Touched() []isolation.Access {
	var out []isolation.Access
	for _, a := range r.Observed {
		if !given(a.Path) || slices.ContainsFunc(r.View, func(v string) bool { return within(a.Path, v) }) {
			out = append(out, a)
		}
	}
	return out
}

// Unapproved is the report of a learning run that was not approved, for
// `permissions learn --json`: nothing ran, and Run says so (status
// denied, the approval it needs as the hint).
func (s *Session) Unapproved() *Report {
	def := s.req.Def
	res := &sandbox.Result{Tool: def.Name, Version: def.Version, Isolation: string(tool.IsolationProcess),
		Status: sandbox.StatusDenied, Steps: []sandbox.StepResult{}, Egress: []sandbox.EgressEntry{},
		Error: &sandbox.ErrorInfo{Code: policy.CodePermissionDenied, Message: s.Describe(), Hint: "run it again with --approve " + ApproveLearn}}
	res.ExitCode = res.ProcessExitCode()
	return &Report{Tool: def.Name, File: def.Source.Path, View: s.view, Parameters: s.params,
		Observed: []isolation.Access{}, Egress: []sandbox.EgressEntry{}, Run: res}
}

// describeView says in words what the learning sandbox shows.
func (s *Session) describeView() string {
	if len(s.view) == 0 {
		return "only the system directories"
	}
	return strings.Join(s.view, ", ") + " and the system directories"
}

// Describe says what the tool will see and do while learning, for the
// user who approves it.
func (s *Session) Describe() string {
	return fmt.Sprintf("learning runs %s once, untrusted, in a process-tier sandbox: it sees %s read-only, "+
		"its writes there go to a throwaway layer (they are recorded, and nothing on the host changes), and it may reach any public host "+
		"through a recording proxy — more than its permissions will give it later", s.req.Def.Name, s.describeView())
}

// Write adds the draft's permissions to the definition's file in place
// (tool.AddPermissionsFile: comments and layout kept, atomically) and
// records what it added in the report. A definition without a file of
// its own, or in the global scope, is refused with the fix.
func (r *Report) Write(def *tool.Definition) error {
	path := def.Source.Path
	if path == "" {
		return fmt.Errorf("write %s: %w: copy it into a file (sandboxed tool get %s > FILE) and learn on that", def.Name, ErrNoFile, def.Name)
	}
	if def.Source.Scope == tool.ScopeGlobal {
		return fmt.Errorf("write %s: %s is in the global scope, which learning does not edit: %w; import it into your own (sandboxed tool import %s) and learn on that",
			def.Name, path, ErrNoFile, path)
	}
	if r.Draft == nil {
		return fmt.Errorf("write %s: nothing was learned", def.Name)
	}
	added, err := tool.AddPermissionsFile(path, r.Draft.Permissions)
	if err != nil {
		return err
	}
	r.Added = added
	return nil
}
