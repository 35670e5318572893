package explain

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/sandbox"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// A run the policy denies is explained through the planner's own plan:
// its limits and privilege read the same as those of an allowed twin
// that only lacks the denied permission.
func TestDeniedRunIsExplainedFromThePlanner(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("SANDBOXED_STATE_DIR", filepath.Join(home, "state"))
	t.Setenv("SANDBOXED_RUNTIME_DIR", filepath.Join(home, "run"))
	t.Chdir(home)
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	const body = `name: red
description: reduced
bash: echo hi
security:
  execution-privilege: reduced
%s
sandboxed:
  tmpfs-size: 16MiB
  pids-limit: 20
tags: [read]
`
	explain := func(perms string) Explanation {
		def, err := tool.Parse([]byte(fmt.Sprintf(body, perms)), filepath.Join(home, "red.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return Tool(def, tool.Input{}, nil, "", policy.Default(), "", sandbox.Cluster{}, nil)
	}
	allowed := explain("")
	denied := explain("  required-permissions: [\"filesystem:read:~/.ssh\"]")
	if allowed.Verdict.Decision != DecisionAllowed || denied.Verdict.Decision != DecisionDenied {
		t.Fatalf("verdicts %s and %s", allowed.Verdict.Decision, denied.Verdict.Decision)
	}
	for _, part := range []struct {
		name string
		a, d []Point
	}{{"resources", allowed.Resources, denied.Resources}, {"privilege", allowed.Privilege, denied.Privilege}} {
		a, _ := json.Marshal(part.a)
		d, _ := json.Marshal(part.d)
		if string(a) != string(d) {
			t.Errorf("%s of the denied run differ from the planner's:\nallowed: %s\ndenied:  %s", part.name, a, d)
		}
	}
}
