package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gcReport is `sandboxed gc --json`.
type gcReport struct {
	Removed   []string `json:"removed"`
	LeftAlone []struct {
		RunID  string `json:"run_id"`
		Reason string `json:"reason"`
	} `json:"left_alone"`
}

// TestGCNeverReapsALiveRun runs `sandboxed gc` while a run is live: from
// another network namespace, from another network and PID namespace, and
// as a controller that cannot see the run's directory (another container
// sharing the host's cgroup tree and engine: here, another runtime
// directory). None of them changes the run's outcome; the last says it
// left the run alone.
func TestGCNeverReapsALiveRun(t *testing.T) {
	forTierList(t, []string{"process", "container"}, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"out/.keep": ""})
		tool := toolYAML(t, dir, tier, "survivor",
			`touch out/started; while [ ! -e out/go ]; do sleep 0.05; done; echo survived`,
			[]string{"filesystem:write:./out"}, "timeout: 120000\n")
		run := startLiveRun(t, dir, tool)

		// The live run is the one directory named by a run id in the
		// suite's runtime directory.
		var runID string
		runs, _ := filepath.Glob(filepath.Join(env.runtimeDir, "2*T*-*"))
		if len(runs) != 1 {
			t.Fatalf("run directories during one run: %v, want one", runs)
		}
		runID = filepath.Base(runs[0])
		// Another runtime directory of the same user: one it may read.
		elsewhere := filepath.Join(runnerDir(t), "another-runtime-dir")
		for _, gc := range []struct {
			name    string
			unshare []string
			env     []string
			seen    bool // the run's directory is visible to this gc
		}{
			{"netns", []string{"--net"}, nil, true},
			{"netns+pidns", []string{"--net", "--pid", "--fork"}, nil, true},
			{"another runtime dir", nil, []string{"SANDBOXED_RUNTIME_DIR=" + elsewhere}, false},
		} {
			args := append([]string{}, gc.unshare...)
			if env.runner != nil && len(args) > 0 {
				args = append([]string{"--map-current-user"}, args...)
			}
			var cmd *exec.Cmd
			if len(args) > 0 {
				cmd = exec.Command("unshare", append(args, env.bin, "gc", "--json")...)
			} else {
				cmd = exec.Command(env.bin, "gc", "--json")
			}
			asRunner(cmd)
			cmd.Env = append(runEnv(), gc.env...)
			cmd.Dir = dir
			out, err := cmd.Output()
			if err != nil {
				var stderr []byte
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = ee.Stderr
				}
				t.Fatalf("gc (%s): %v\n%s%s", gc.name, err, out, stderr)
			}
			var rep gcReport
			if err := json.Unmarshal(out, &rep); err != nil {
				t.Fatalf("gc (%s) --json: %v\n%s", gc.name, err, out)
			}
			for _, r := range rep.Removed {
				if strings.Contains(r, "cgroup") || strings.Contains(r, "container") || strings.Contains(r, "run dir") {
					t.Errorf("gc (%s) removed %s during a live run", gc.name, r)
				}
			}
			leftAlone := false
			for _, u := range rep.LeftAlone {
				if u.Reason == "" {
					t.Errorf("gc (%s) left run %s alone without a reason", gc.name, u.RunID)
				}
				leftAlone = leftAlone || u.RunID == runID
			}
			// On cgroup v2 a gc outside the run's systemd scope may find
			// none of its cgroups to ask about; the outcome is what counts.
			if !gc.seen && !leftAlone && !cgroupV2() {
				t.Errorf("gc (%s) found the live run %s without its directory and did not report it left alone: %s", gc.name, runID, out)
			}
			if gc.seen && leftAlone {
				t.Errorf("gc (%s) could not judge the run %s whose directory it sees: %s", gc.name, runID, out)
			}
		}

		must(t, os.WriteFile(filepath.Join(dir, "out", "go"), nil, 0o644))
		r := run.finish(t)
		if r.Status != "ok" || strings.TrimSpace(r.Stdout) != "survived" {
			t.Fatalf("the live run ended %s (exit %d) after gc: %+v\nstderr: %s", r.Status, r.ExitCode, r.Error, r.Stderr)
		}
	})
}

// waitForFile waits until path exists.
func waitForFile(t *testing.T, path string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %s", path, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// liveRun is a `sandboxed run --json` started in the background.
type liveRun struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           bool
}

// startLiveRun starts `sandboxed run --json tool` in dir and waits until
// the tool has made dir/out/started; the run is killed when the test ends
// unless finish was called.
func startLiveRun(t *testing.T, dir, tool string) *liveRun {
	t.Helper()
	r := &liveRun{cmd: command("run", "--json", tool)}
	r.cmd.Dir = dir
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	must(t, r.cmd.Start())
	t.Cleanup(func() {
		if !r.done {
			r.cmd.Process.Kill()
			r.cmd.Wait()
		}
	})
	waitForFile(t, filepath.Join(dir, "out", "started"), 60*time.Second)
	return r
}

// finish waits for the run and decodes its result.
func (r *liveRun) finish(t *testing.T) result {
	t.Helper()
	err := r.cmd.Wait()
	r.done = true
	var res result
	if jerr := json.Unmarshal(r.stdout.Bytes(), &res); jerr != nil {
		t.Fatalf("run: %v, result %v\nstdout: %s\nstderr: %s", err, jerr, r.stdout.String(), r.stderr.String())
	}
	return res
}
