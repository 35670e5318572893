package sandbox

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

func TestRefusalOf(t *testing.T) {
	missing := errors.New("filesystem:read:/nope: /nope does not exist")
	needs := policy.Decision{Verdict: policy.NeedsApproval, Items: []policy.Item{{Subject: "network:external:*", Verdict: policy.NeedsApproval, ApproveFlag: "network:external:*"}}}
	deny := policy.Decision{Verdict: policy.Deny, Items: []policy.Item{{Subject: "filesystem:read:~/.ssh", Verdict: policy.Deny}}}
	allowD := policy.Decision{Verdict: policy.Allow}
	rf := refuser{req: &Request{Def: &tool.Definition{Name: "t"}}, runID: "RUN"}
	tests := []struct {
		name       string
		d          policy.Decision
		resolveErr error
		status     Status // "" when the run goes on
		code       string
		approvals  []string
	}{
		{"allowed", allowD, nil, "", "", nil},
		{"denied", deny, nil, StatusDenied, CodePermission, nil},
		{"a denial wins over a missing path", deny, missing, StatusDenied, CodePermission, nil},
		{"allowed but a path is missing", allowD, missing, StatusError, CodeResourceMissing, nil},
		{"needs approval: says which", needs, nil, StatusDenied, CodePermission, []string{"network:external:*"}},
		{"needs approval and a path is missing: the path, and still which approval", needs, missing, StatusError, CodeResourceMissing, []string{"network:external:*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			perr := refusalOf(tt.d, tt.resolveErr, rf)
			if tt.status == "" {
				if perr != nil {
					t.Fatalf("refused: %v", perr)
				}
				return
			}
			if perr == nil {
				t.Fatal("not refused")
			}
			if perr.Result.Status != tt.status || perr.Result.Error.Code != tt.code || !slices.Equal(perr.Approvals, tt.approvals) {
				t.Errorf("status %s code %s approvals %v, want %s %s %v", perr.Result.Status, perr.Result.Error.Code, perr.Approvals, tt.status, tt.code, tt.approvals)
			}
			if perr.Decision == nil {
				t.Error("the refusal does not carry the decision")
			}
		})
	}
}

// The refusals made from an approval refusal keep its decision and say
// what happened, with the exit codes of a denial and of an error.
func TestDeclinedAndAskFailed(t *testing.T) {
	needs := policy.Decision{Verdict: policy.NeedsApproval, Items: []policy.Item{{Subject: "elevated", Verdict: policy.NeedsApproval, ApproveFlag: "elevated"}}}
	rf := refuser{req: &Request{Def: &tool.Definition{Name: "t"}}, runID: "RUN"}
	pe := refusalOf(needs, nil, rf)
	d := pe.Declined()
	if d.Result.Status != StatusDenied || d.Result.Error.Code != policy.CodeUserRejected || d.Result.ProcessExitCode() != 126 ||
		d.Decision != pe.Decision || !errors.Is(d, policy.ErrDenied) || d.Approvals != nil {
		t.Errorf("declined: %+v %+v", d.Result, d.Result.Error)
	}
	a := pe.AskFailed(errors.New("read /dev/tty: EIO"))
	if a.Result.Status != StatusError || a.Result.ProcessExitCode() != 125 || a.Result.Error.Message != "ask for approval: read /dev/tty: EIO" {
		t.Errorf("ask failed: %+v %+v", a.Result, a.Result.Error)
	}
	if pe.Result.Status != StatusDenied || pe.Result.Error.Code != CodePermission {
		t.Error("making the other refusals changed the first")
	}
}

// A failed run's hint says first that the policy raised its tier, read
// from the decision (RaisedFrom, RaiseNote), whatever the result's notes
// say: a note of the same words that is not the policy's raise (a tool's
// output, the landlock stand-in) does not make one.
func TestWithRaiseReadsTheDecision(t *testing.T) {
	r := baseRequestForRaise()
	d := policy.Default().Decide(r)
	if d.RaisedFrom != tool.IsolationNone {
		t.Fatalf("the fixture is not raised: %+v", d)
	}
	e := withRaise(&d, &ErrorInfo{Hint: "run sandboxed doctor"})
	if want := "this run was not in the tier asked for: " + d.RaiseNote + "; the policy never runs such a tool unsandboxed"; !strings.HasPrefix(e.Hint, want) ||
		!strings.HasSuffix(e.Hint, "; run sandboxed doctor") || !strings.Contains(e.Hint, "isolation raised from none to process") {
		t.Errorf("hint %q", e.Hint)
	}
	plain := policy.Decision{Isolation: tool.IsolationProcess, Notes: []string{"isolation raised from none to process by the policy"}}
	if e := withRaise(&plain, &ErrorInfo{Hint: "h"}); e.Hint != "h" {
		t.Errorf("a note alone made a raise: %q", e.Hint)
	}
	if e := withRaise(nil, &ErrorInfo{Hint: "h"}); e.Hint != "h" {
		t.Errorf("no decision: %q", e.Hint)
	}
}

func baseRequestForRaise() policy.Request {
	return policy.Request{Tool: "t", Tags: []string{"read"}, Scope: tool.ScopePath, Isolation: tool.IsolationNone, Cwd: "/work", Home: "/home/u"}
}

func TestIsolationNoteSaysNoRaiseTwiceAndNoStandInAsARaise(t *testing.T) {
	for _, c := range []struct {
		name  string
		want  tool.Isolation
		d     policy.Decision
		asked string
		note  string
	}{
		{"as asked", tool.IsolationProcess, policy.Decision{Isolation: tool.IsolationProcess}, "", ""},
		{"unset means process", "", policy.Decision{Isolation: tool.IsolationProcess}, "", ""},
		{"the caller chose", tool.IsolationProcess, policy.Decision{Isolation: tool.IsolationContainer}, "container", ""},
		{"raised: the policy's note says it", tool.IsolationNone, policy.Decision{Isolation: tool.IsolationProcess, RaisedFrom: tool.IsolationNone}, "", ""},
		{"landlock stands in", tool.IsolationProcess, policy.Decision{Isolation: tool.Isolation("landlock")}, "", "the landlock tier runs the tool in the process tier's place"},
		{"other", tool.IsolationProcess, policy.Decision{Isolation: tool.IsolationContainer}, "", "isolation container by the policy, where the definition asks for process"},
	} {
		got := isolationNote(c.want, c.d, c.asked)
		if (c.note == "") != (got == "") || !strings.HasPrefix(got, c.note) {
			t.Errorf("%s: %q, want %q", c.name, got, c.note)
		}
	}
}
