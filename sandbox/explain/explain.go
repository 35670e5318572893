package explain

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/sandbox"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// PolicySource says where the policy in force came from: path, or the
// built-in default when path is "".
func PolicySource(path string) PolicyInfo {
	if path == "" {
		return PolicyInfo{Source: "built-in default"}
	}
	return PolicyInfo{Source: path, File: path}
}

// Tool reviews def with the arguments given. It plans the run with
// sandbox.Prepare (DryRun: nothing on the host changes) when the tool
// binds; when the policy asks for approvals it plans again with them, to
// show how the run would be enforced; otherwise it explains the
// definition's raw strings.
//
// iso, when set, is the tier asked for instead of the definition's (run
// --isolation). hostID, when not nil, says which host ids a plan's user
// runs as (the backend's user namespace: process.HostIdentity); explain
// names them where they differ from the ids inside.
func Tool(def *tool.Definition, input tool.Input, approvals []string, iso string, pol *policy.Policy, polPath string, cluster sandbox.Cluster, hostID HostIdentity) Explanation {
	cwd, _ := os.Getwd()
	home := sandbox.InvokingHome()
	in := ExplainInput{
		Def: def, Policy: PolicySource(polPath), Home: home,
		HostPath: filepath.SplitList(os.Getenv("PATH")),
	}
	in.Arguments.Given = sortedKeys(input)
	in.Arguments.Missing = missingParams(def, input)
	in.Arguments.Approvals = approvals

	runID := sandbox.NewRunID(time.Now())
	req := &sandbox.Request{Def: def, Input: input, Policy: pol, PolicyFile: polPath, Isolation: iso, Approvals: approvals, DryRun: true, Cluster: cluster}
	p, err := sandbox.Prepare(req, runID)
	var pe *sandbox.PrepareError
	switch {
	case err == nil:
		in.Arguments.Bound = true
		fillFromPrepared(&in, p, *p.Decision, false)
		fillHostID(&in, p.Plan, hostID)
	case errors.As(err, &pe) && pe.Decision != nil:
		d := *pe.Decision
		if d.Verdict == policy.NeedsApproval {
			req.Approvals = append(append([]string(nil), approvals...), d.MissingApprovals()...)
			p2, err2 := sandbox.Prepare(req, runID)
			if err2 == nil {
				in.Arguments.Bound = true
				fillFromPrepared(&in, p2, d, true)
				fillHostID(&in, p2.Plan, hostID)
				break
			}
			in.Notes = append(in.Notes, "even approved, the run could not be planned: "+firstLine(err2))
		}
		in.Arguments.Bound = true
		var grants []permissions.Grant
		for _, it := range d.Items {
			if it.Grant != nil {
				grants = append(grants, *it.Grant)
			}
		}
		in.Grants = grants
		fillDecision(&in, d)
		reviewPlan(&in, def, nil, d, pol)
		if d.Verdict == policy.Allow {
			in.Notes = append(in.Notes, "the run could not be planned: "+pe.Result.Error.Message)
		}
	default:
		explainRaw(&in, def, input, approvals, pol, cwd, home, err)
	}
	in.Rules = pol
	switch {
	case len(in.Arguments.Missing) > 0 && len(in.Templated) > 0:
		in.Arguments.Note = "arguments " + strings.Join(in.Arguments.Missing, ", ") + " not given: permissions that use them are explained from their templates"
	case len(in.Arguments.Missing) > 0:
		in.Arguments.Note = "arguments " + strings.Join(in.Arguments.Missing, ", ") + " not given; no permission uses them"
	case !in.Arguments.Bound:
		in.Arguments.Note = "the tool could not be bound; the definition's raw strings are explained"
	}
	return Explain(in)
}

// HostIdentity says which host uid and gid a plan's user runs as; ok is
// false when the backend cannot say.
type HostIdentity func(*isolation.Plan) (uid, gid uint32, ok bool)

// fillHostID records the host ids of the plan's user, when hostID knows.
func fillHostID(in *ExplainInput, pl *isolation.Plan, hostID HostIdentity) {
	if hostID == nil || pl == nil {
		return
	}
	if uid, gid, ok := hostID(pl); ok {
		in.HostID = &isolation.ID{UID: uid, GID: gid}
	}
}

// explainRaw explains a tool that does not bind (missing or invalid
// arguments, a path that does not exist): permissions are substituted with
// what is known, the rest stay templates, and the policy decides the
// resolvable ones on their declared paths.
func explainRaw(in *ExplainInput, def *tool.Definition, input tool.Input, approvals []string, pol *policy.Policy, cwd, home string, cause error) {
	perms := def.Security.RequiredPermissions
	b, berr := tool.Bind(def, input, tool.BindEnv{ToolName: def.Name, Workspace: cwd, Temp: filepath.Join(os.TempDir(), "sandboxed-tmp"), Home: home})
	if berr == nil {
		perms = b.Permissions
		in.Arguments.Bound = true
	} else if len(in.Arguments.Missing) == 0 {
		in.Notes = append(in.Notes, "the tool does not bind with these arguments: "+firstLine(berr))
	}
	var grants []permissions.Grant
	for i, raw := range perms {
		s := raw
		if berr != nil {
			s = substituteKnown(def, input, raw)
		}
		if ps := permissions.PermissionParams(s); len(ps) > 0 {
			in.Templated = append(in.Templated, TemplatedPermission{Index: i, Permission: s, Params: ps})
			continue
		}
		gs, err := permissions.Resolve([]string{s}, cwd, home)
		if err != nil {
			in.Unresolvable = append(in.Unresolvable, TemplatedPermission{Index: i, Permission: s, Reason: firstLine(err)})
			continue
		}
		for _, g := range gs {
			g.Index = i
			grants = append(grants, g)
		}
	}
	if err := sandbox.ResolveMounts(grants, false); err != nil {
		in.Notes = append(in.Notes, "on this host: "+firstLine(err))
	} else if berr == nil {
		in.Notes = append(in.Notes, "the run could not be planned: "+firstLine(cause))
	}
	preq := policy.NewRequest(def, grants, cwd, home)
	preq.Approvals = approvals
	if r, err := filepath.EvalSymlinks(cwd); err == nil {
		preq.CwdResolved = r
	}
	d := sandbox.ProtectOwnDirs(pol, sandbox.OwnDirs(sandbox.StateDir(), sandbox.RuntimeDir())).Decide(preq)
	in.Grants = grants
	fillDecision(in, d)
	var bound *tool.Bound
	if berr == nil {
		bound = b
	}
	reviewPlan(in, def, bound, d, pol)
}

// substituteKnown replaces {NAME} references in a permission by the given
// argument or the parameter's default, leaving the others.
func substituteKnown(def *tool.Definition, input tool.Input, perm string) string {
	for _, name := range permissions.PermissionParams(perm) {
		v, ok := input[name]
		if !ok {
			if dv, ok2 := def.DefaultParameters[name]; ok2 {
				v, ok = dv, true
			}
		}
		if !ok {
			for _, p := range def.Parameters {
				if p.Name == name && p.HasDefault {
					v, ok = p.Default, true
				}
			}
		}
		if ok {
			if s := fmt.Sprint(v); !strings.Contains(s, "{") {
				perm = strings.ReplaceAll(perm, "{"+name+"}", s)
			}
		}
	}
	return perm
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func sortedKeys(in tool.Input) []string {
	out := make([]string, 0, len(in))
	for k := range in {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// missingParams are the required parameters with no value given and no
// default.
func missingParams(def *tool.Definition, input tool.Input) []string {
	var out []string
	for _, p := range def.Parameters {
		if !p.Required || p.HasDefault {
			continue
		}
		if _, ok := input[p.Name]; ok {
			continue
		}
		if _, ok := def.DefaultParameters[p.Name]; ok {
			continue
		}
		out = append(out, p.Name)
	}
	return out
}

func fillDecision(in *ExplainInput, d policy.Decision) {
	in.Decision = d
	for _, n := range d.Notes {
		if !slices.Contains(in.Notes, n) {
			in.Notes = append(in.Notes, n)
		}
	}
}

// fillFromPrepared takes the grants and plan of a prepared run; d is the
// decision to report (without the approvals explain added to plan it).
func fillFromPrepared(in *ExplainInput, p *sandbox.Prepared, d policy.Decision, ifApproved bool) {
	in.Grants = p.Grants
	fillDecision(in, d)
	in.Plan, in.Planned = p.Plan, true
	for _, n := range p.Notes {
		if !slices.Contains(in.Notes, n) {
			in.Notes = append(in.Notes, n)
		}
	}
	if ifApproved {
		in.Notes = append(in.Notes, "the mechanisms shown are those of the run once approved")
	}
}

// reviewPlan takes the sandbox the planner would make for a run that
// could not be planned (sandbox.ReviewPlan); b is nil when the tool did
// not bind. Where not even that can be made, the review says why and
// shows no plan.
func reviewPlan(in *ExplainInput, def *tool.Definition, b *tool.Bound, d policy.Decision, pol *policy.Policy) {
	pl, err := sandbox.ReviewPlan(def, b, in.Grants, d, pol)
	if err != nil {
		in.Notes = append(in.Notes, "the sandbox could not be planned: "+firstLine(err))
		pl = nil
	}
	in.Plan, in.Planned = pl, false
}
