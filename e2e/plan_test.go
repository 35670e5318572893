package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestDumpPlanIsThePlanThatRuns prints a run's plan with --dump-plan, runs
// the tool, and compares the printed plan with the one the run record
// says the backend was given: the same but for the run id, and the
// environment's values, which the record leaves out. The printed plan
// names the run's host directory and the egress proxy's rules.
func TestDumpPlanIsThePlanThatRuns(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		grant := "network:external:web.test"
		dir, tool := egressTool(t, tier, "plan-check", `curl -sf http://web.test/ >/dev/null && echo fetched > out/page`,
			grant, "filesystem:write:out")
		approve := approvals(grant)

		dump := sandboxed(t, dir, append(append([]string{"run", "--dump-plan"}, approve...), tool)...)
		if dump.code != 0 {
			t.Fatalf("--dump-plan: exit %d\n%s", dump.code, dump.stderr)
		}
		var printed struct {
			Plan map[string]any `json:"plan"`
		}
		if err := json.Unmarshal([]byte(dump.stdout), &printed); err != nil {
			t.Fatalf("--dump-plan output: %v\n%s", err, dump.stdout)
		}
		printedID, _ := printed.Plan["run_id"].(string)
		hostDir, _ := printed.Plan["host_dir"].(string)
		if printedID == "" || hostDir != filepath.Join(env.runtimeDir, printedID) {
			t.Errorf("printed host_dir %q, want %q", hostDir, filepath.Join(env.runtimeDir, printedID))
		}
		eg, _ := printed.Plan["egress"].(map[string]any)
		if allow, _ := eg["allow"].([]any); len(allow) != 1 || allow[0] != grant || eg["proxy_socket"] != filepath.Join(hostDir, "egress.sock") {
			t.Errorf("printed egress section %v", eg)
		}
		if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
			t.Error("--dump-plan created the write grant's directory")
		}

		r, c := runJSON(t, dir, append(approve, tool)...)
		page, _ := os.ReadFile(filepath.Join(dir, "out", "page"))
		if r.Status != "ok" || strings.TrimSpace(string(page)) != "fetched" {
			t.Fatalf("run: status %s exit %d\nstderr: %s", r.Status, r.ExitCode, c.stderr)
		}
		data, err := os.ReadFile(filepath.Join(env.stateDir, "runs", r.RunID, "plan.json"))
		if err != nil {
			t.Fatal(err)
		}
		// The printed plan as the record keeps it: this run's id, and the
		// environment's names without their values.
		want := strings.ReplaceAll(mustMarshal(t, printed.Plan), printedID, r.RunID)
		var wantPlan, gotPlan map[string]any
		json.Unmarshal([]byte(want), &wantPlan)
		if err := json.Unmarshal(data, &gotPlan); err != nil {
			t.Fatal(err)
		}
		proc := wantPlan["spec"].(map[string]any)["process"].(map[string]any)
		for i, kv := range proc["env"].([]any) {
			name, _, _ := strings.Cut(kv.(string), "=")
			proc["env"].([]any)[i] = name + "=(not recorded)"
		}
		if !reflect.DeepEqual(wantPlan, gotPlan) {
			t.Errorf("the plan that ran is not the plan printed\nprinted: %s\nran:     %s", mustMarshal(t, wantPlan), mustMarshal(t, gotPlan))
		}
	})
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestApprovalPromptOnATerminal answers the approval prompt on a terminal
// (a pseudo-terminal made by script(1)): yes runs the tool, no refuses it
// with 126 and says so.
func TestApprovalPromptOnATerminal(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatal("script(1) from util-linux is needed: apt-get install util-linux")
	}
	forTiers(t, func(t *testing.T, tier string) {
		grant := "network:external:web.test"
		dir, tool := egressTool(t, tier, "asks", `curl -sf http://web.test/`, grant)
		for _, tc := range []struct {
			answer string
			code   int
			says   string
		}{
			{"y\n", 0, strings.TrimSpace(webBody)},
			{"n\n", 126, "you declined the run"},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			cmd := exec.CommandContext(ctx, "script", "-qec", "'"+env.bin+"' run '"+tool+"'", "/dev/null")
			cmd.Dir, cmd.Env, cmd.Stdin = dir, runEnv(), strings.NewReader(tc.answer)
			asRunner(cmd)
			out, err := cmd.CombinedOutput()
			cancel()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(string(out), "Approve for this run? [y/N]") || !strings.Contains(string(out), tc.says) {
				t.Errorf("answer %q: exit %d, want %d saying %q\n%s", strings.TrimSpace(tc.answer), code, tc.code, tc.says, out)
			}
		}
	})
}
