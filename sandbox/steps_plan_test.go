package sandbox

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/tool"
)

func TestJobStepsFromDefinition(t *testing.T) {
	def := &tool.Definition{Name: "t", Description: "d",
		Parameters: []tool.Parameter{{Name: "DIR", Type: tool.TypeString, Default: "it's", HasDefault: true}},
		Steps: []tool.Step{
			{Name: "a", Exec: &tool.Exec{Kind: tool.ExecBash, Command: "echo a"},
				ErrorHandling: &tool.ErrorHandling{Retry: &tool.Retry{Attempts: 3, Delay: time.Second}, Fallback: "echo b"}},
			{Name: "b", Exec: &tool.Exec{Kind: tool.ExecBash, Command: "read x; echo $x"}, Parallel: true,
				Output: &tool.Output{Mode: tool.OutputBuffer, BufferLimit: 100}},
			{Name: "c", Exec: &tool.Exec{Kind: tool.ExecBash, Command: "echo c"}, WaitFor: []string{"a", "b"},
				RunCondition: "{a.exit-code} == 0", ContinueOnError: true},
		},
		Interactive:        true,
		InteractiveOptions: &tool.InteractiveOptions{DefaultResponse: "y"},
		Resources: &tool.Resources{Cleanup: &tool.Cleanup{DeleteTempFiles: true,
			FinalCommands: []string{"rm -rf {DIR}", "echo done"}}},
	}
	b, err := tool.Bind(def, tool.Input{}, tool.BindEnv{Workspace: "/w", Temp: "/tmp/sbx"})
	if err != nil {
		t.Fatal(err)
	}
	steps, err := jobSteps(b, []string{"PATH=/bin"}, "/w", "/w", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range steps {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "a,b,c,delete-temp-files,cleanup-1,cleanup-2" {
		t.Fatalf("steps %s", got)
	}
	a, bb, c := steps[0], steps[1], steps[2]
	if a.Attempts != 3 || a.RetryDelay != time.Second || strings.Join(a.Fallback, " ") != "/bin/bash -c echo b" {
		t.Errorf("a: %+v", a)
	}
	if !bb.Parallel || bb.Mode != tool.OutputBuffer || bb.BufferLimit != 100 || string(bb.Stdin) != "y\n" {
		t.Errorf("b: parallel %v mode %q limit %d stdin %q", bb.Parallel, bb.Mode, bb.BufferLimit, bb.Stdin)
	}
	if c.Condition == nil || !c.ContinueOnError || len(c.WaitFor) != 2 {
		t.Errorf("c: %+v", c)
	}
	if ok, _ := c.Condition(map[string]tool.StepOutput{"a": {ExitCode: 1}}); ok {
		t.Error("condition true for a failed a")
	}
	if got := strings.Join(steps[4].Cmd.Args, " "); got != `/bin/bash -c rm -rf 'it'\''s'` || !steps[4].Cleanup {
		t.Errorf("cleanup-1 %q (parameters escaped)", got)
	}
	if got := strings.Join(steps[3].Cmd.Args, " "); got != "rm -rf -- /tmp/sbx" {
		t.Errorf("delete-temp-files %q", got)
	}

	// A condition that does not parse, or a cycle, refuses at plan time.
	def.Steps[2].RunCondition = "{a.exit-code} =="
	b, _ = tool.Bind(def, tool.Input{}, tool.BindEnv{Workspace: "/w"})
	if _, err := jobSteps(b, nil, "/w", "/w", 0, nil); !errors.Is(err, ErrPlan) || !errors.Is(err, tool.ErrCondition) {
		t.Errorf("bad condition: %v", err)
	}
}
