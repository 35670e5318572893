package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestContainerToolNeverHostRoot runs a container-tier tool as root, with
// a write grant, and reads /proc/PID/status on the host of every process
// in the container's cgroup while the tool runs: none has host uid or gid
// 0 (real, effective, saved, filesystem). Afterwards what the tool wrote
// in its grant belongs to the invoking user (root), as does the grant.
func TestContainerToolNeverHostRoot(t *testing.T) {
	if env.runner != nil {
		t.Log("root's tools: the rootless mode runs only the process tier (whose tools are the user's); the root mode covers it")
		return
	}
	forTierList(t, []string{"container", runscTier}, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"out/.keep": "", "out/given": "x"})
		tool := toolYAML(t, dir, tier, "whoami",
			`id -u > out/uid; echo more >> out/given; touch out/started; while [ ! -e out/go ]; do sleep 0.05; done; echo made > out/made`,
			[]string{"filesystem:write:./out"}, "timeout: 120000\n")
		run := startLiveRun(t, dir, tool)

		out, err := exec.Command("docker", "ps", "-q", "--no-trunc", "--filter", "label=dev.sandboxed.run-id").Output()
		ids := strings.Fields(string(out))
		if err != nil || len(ids) != 1 {
			t.Fatalf("the run's container: %v %q", err, out)
		}
		pids := pidsInCgroupOf(t, ids[0])
		if len(pids) == 0 {
			t.Fatalf("no host process found in container %s's cgroup", ids[0])
		}
		checked := 0
		for _, pid := range pids {
			// Under runsc the tool runs inside gVisor's sentry
			// (runsc-sandbox and its threads, checked here); gVisor's gofer
			// serves the sentry's files and runs no tool code: it keeps
			// host root by gVisor's design.
			if cl, _ := os.ReadFile("/proc/" + pid + "/cmdline"); bytes.HasPrefix(cl, []byte("runsc-gofer\x00")) {
				continue
			}
			checked++
			status, err := os.ReadFile("/proc/" + pid + "/status")
			if err != nil {
				continue // gone meanwhile
			}
			for _, line := range strings.Split(string(status), "\n") {
				k, v, _ := strings.Cut(line, ":")
				if k != "Uid" && k != "Gid" {
					continue
				}
				for _, id := range strings.Fields(v) {
					if id == "0" {
						name, _ := os.ReadFile("/proc/" + pid + "/comm")
						t.Errorf("process %s (%s) of the container has host %s %s", pid, strings.TrimSpace(string(name)), k, strings.TrimSpace(v))
						break
					}
				}
			}
		}

		if checked == 0 {
			t.Fatalf("no process of container %s was checked", ids[0])
		}
		must(t, os.WriteFile(filepath.Join(dir, "out", "go"), nil, 0o644))
		r := run.finish(t)
		if r.Status != "ok" {
			t.Fatalf("run ended %s (exit %d): %+v\nstderr: %s", r.Status, r.ExitCode, r.Error, r.Stderr)
		}
		uid, _ := os.ReadFile(filepath.Join(dir, "out", "uid"))
		if strings.TrimSpace(string(uid)) == "0" {
			t.Errorf("the tool ran as uid 0 in its container")
		}
		for _, f := range []string{"", "uid", "given", "made", ".keep"} {
			var st syscall.Stat_t
			if err := syscall.Lstat(filepath.Join(dir, "out", f), &st); err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			if st.Uid != 0 || st.Gid != 0 {
				t.Errorf("out/%s belongs to %d:%d after the run, want the invoking user 0:0", f, st.Uid, st.Gid)
			}
		}
	})
}

// pidsInCgroupOf lists the host processes whose cgroup path names the
// container id.
func pidsInCgroupOf(t *testing.T, id string) []string {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	var pids []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), id) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

// TestKilledRootRunHandsGrantBack: when the controller of a root run in
// the container tier is killed mid-run, `sandboxed gc` hands what the
// tool was given and made in its write grant back to root.
func TestKilledRootRunHandsGrantBack(t *testing.T) {
	if env.runner != nil {
		t.Log("root's tools: the rootless mode runs only the process tier; the root mode covers it")
		return
	}
	forTierList(t, []string{"container"}, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"out/.keep": ""})
		tool := toolYAML(t, dir, tier, "victim", `touch out/started; sleep 300`, []string{"filesystem:write:./out"}, "timeout: 600000\n")
		cmd := command("run", tool)
		cmd.Dir = dir
		must(t, cmd.Start())
		waitForFile(t, filepath.Join(dir, "out", "started"), 60*time.Second)
		must(t, cmd.Process.Signal(syscall.SIGKILL))
		cmd.Wait()
		if c := sandboxed(t, dir, "gc"); c.code != 0 || !strings.Contains(c.stdout, "handed back to root") {
			t.Errorf("gc: exit %d\n%s%s", c.code, c.stdout, c.stderr)
		}
		for _, f := range []string{"", "started", ".keep"} {
			var st syscall.Stat_t
			if err := syscall.Lstat(filepath.Join(dir, "out", f), &st); err != nil || st.Uid != 0 || st.Gid != 0 {
				t.Errorf("out/%s after gc: %d:%d %v, want 0:0", f, st.Uid, st.Gid, err)
			}
		}
	})
}
