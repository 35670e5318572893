package main

import (
	"os"
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

func TestLearnUsage(t *testing.T) {
	if _, errs, code := runApp(t, "permissions", "learn"); code != exitUsage || !strings.Contains(errs, "which tool") {
		t.Errorf("exit %d: %s", code, errs)
	}
	if _, _, code := runApp(t, "permissions", "learn", "--approve", "nonsense", "x.yaml"); code != exitUsage {
		t.Errorf("a bad --approve: exit %d", code)
	}
}
