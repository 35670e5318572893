package main

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// Without --approve learn and without a terminal to ask, learning runs
// nothing: it says what the tool would see and how to allow it.
func TestLearnNeedsApproval(t *testing.T) {
	home, pol := isolate(t)
	path := writeTool(t, home, "copy", "name: copy\ndescription: copies\nbash: cat {IN}/x\nparameters:\n  IN:\n    type: string\n    description: in\n    required: true\n")
	before, _ := os.ReadFile(path)
	out, errs, code := runApp(t, "permissions", "learn", "--write", "--policy", pol, path, "IN="+home)
	if code != exitDenied || out != "" || !strings.Contains(errs, "--approve learn") || !strings.Contains(errs, home) {
		t.Errorf("exit %d\nstdout %q\nstderr %q", code, out, errs)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("the definition changed")
	}
}

// With --json the refusal is a report on stdout, its run denied, as run
// --json reports one.
func TestLearnNeedsApprovalJSON(t *testing.T) {
	home, pol := isolate(t)
	path := writeTool(t, home, "copy", "name: copy\ndescription: copies\nbash: cat {IN}/x\nparameters:\n  IN:\n    type: string\n    description: in\n    required: true\n")
	out, errs, code := runApp(t, "permissions", "learn", "--json", "--policy", pol, path, "IN="+home)
	var rep struct {
		Tool string   `json:"tool"`
		View []string `json:"view"`
		Run  struct {
			Status   string `json:"status"`
			ExitCode int    `json:"exit_code"`
			Error    struct {
				Code string `json:"code"`
				Hint string `json:"hint"`
			} `json:"error"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not a report: %v\n%s\nstderr %s", err, out, errs)
	}
	if code != exitDenied || rep.Tool != "copy" || rep.Run.Status != "denied" || rep.Run.ExitCode != exitDenied ||
		rep.Run.Error.Code != "PERMISSION_DENIED" || !strings.Contains(rep.Run.Error.Hint, "--approve learn") || !slices.Contains(rep.View, home) {
		t.Errorf("exit %d, report %+v", code, rep)
	}
}

func TestLearnUsage(t *testing.T) {
	if _, errs, code := runApp(t, "permissions", "learn"); code != exitUsage || !strings.Contains(errs, "which tool") {
		t.Errorf("exit %d: %s", code, errs)
	}
	if _, _, code := runApp(t, "permissions", "learn", "--approve", "nonsense", "x.yaml"); code != exitUsage {
		t.Errorf("a bad --approve: exit %d", code)
	}
}
