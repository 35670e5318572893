package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKilledControllerIsReapedByGC kills sandboxed with SIGKILL in the
// middle of a run — no cleanup of its own can run — and checks that
// `sandboxed gc` then removes everything the run left: the leak check at
// the end of the test finds nothing. (The kubernetes tier's write grants
// come back only when the run ends, so its run is seen starting through
// the cluster instead: TestKubernetesKilledControllerIsReapedByGC.)
func TestKilledControllerIsReapedByGC(t *testing.T) {
	forTierList(t, []string{"process", "container", runscTier}, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"out/.keep": ""})
		tool := toolYAML(t, dir, tier, "victim", `touch out/started; sleep 300`, []string{"filesystem:write:./out"}, "timeout: 600000\n")
		cmd := command("run", tool)
		cmd.Dir = dir
		cmd.Env = runEnv()
		must(t, cmd.Start())
		started := filepath.Join(dir, "out", "started")
		deadline := time.Now().Add(60 * time.Second)
		for {
			if _, err := os.Stat(started); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatal("the run did not start within 60s")
			}
			time.Sleep(50 * time.Millisecond)
		}
		must(t, cmd.Process.Signal(syscall.SIGKILL))
		cmd.Wait()

		c := sandboxed(t, dir, "gc")
		if c.code != 0 {
			t.Fatalf("gc: exit %d\n%s%s", c.code, c.stdout, c.stderr)
		}
		if !strings.Contains(c.stdout, "removed") {
			t.Errorf("gc removed nothing after a killed run:\n%s%s", c.stdout, c.stderr)
		}
	})
}

// TestGCHandsBackAKilledRunsGrant: a run killed mid-run (SIGKILL of the
// controller, which takes its init and tool with it) leaves its write
// grant handed to its tool's uid — in the landlock tier as root a uid of
// that run's own, which no later run has. `sandboxed gc` hands it back:
// the owner and the folder's mode are the user's again (the tool had
// changed the mode), and no hold is left. Root: the landlock and container
// tiers; rootless: the process tier, where the tool's uid is a
// subordinate id only a helper in a user namespace can hand back from.
func TestGCHandsBackAKilledRunsGrant(t *testing.T) {
	// The landlock tier runs wherever the suite does (the VM's kernel
	// too); the container tier where the suite runs containers.
	tiers := append([]string{"landlock"}, runTiers([]string{"container"})...)
	if env.runner != nil {
		tiers = []string{"process"}
	}
	for _, tier := range tiers {
		t.Run(tier, func(t *testing.T) {
			begin(t)
			dir := workdir(t, map[string]string{"out/.keep": ""})
			out := filepath.Join(dir, "out")
			user := ownerOf(t, out)
			mode := modeOf(t, out)
			yamlTier, args := tier, []string{"run"}
			if tier == "landlock" {
				yamlTier, args = "process", append(args, "--isolation", "landlock", "--approve", "isolation-landlock")
			}
			tool := toolYAML(t, dir, yamlTier, "victim", `chmod 700 out; touch out/started; sleep 300`, []string{"filesystem:write:./out"}, "  execution-privilege: reduced\ntimeout: 600000\n")
			cmd := command(append(args, tool)...)
			cmd.Dir = dir
			must(t, cmd.Start())
			t.Cleanup(func() {
				if cmd.ProcessState == nil {
					cmd.Process.Kill()
					cmd.Wait()
					sandboxed(t, dir, "gc")
				}
			})
			waitForFile(t, filepath.Join(out, "started"), 60*time.Second)
			toolUID := ownerOf(t, out)
			if toolUID == user {
				t.Fatalf("out/ during the run is owned by %d, the user's: the grant was not handed over", toolUID)
			}
			must(t, cmd.Process.Signal(syscall.SIGKILL))
			cmd.Wait()
			if tier != "container" { // the container stays until gc
				waitNoProcsOf(t, toolUID, 15*time.Second)
			}
			if got := ownerOf(t, out); got != toolUID {
				t.Fatalf("out/ after the kill is owned by %d, want the tool's %d still (the case gc is for)", got, toolUID)
			}
			c := sandboxed(t, dir, "gc")
			if c.code != 0 || !strings.Contains(c.stdout, "write grant "+out+" handed back") {
				t.Errorf("gc: exit %d, want it to say it handed %s back\n%s%s", c.code, out, c.stdout, c.stderr)
			}
			for _, f := range []string{"", "started", ".keep"} {
				if got := ownerOf(t, filepath.Join(out, f)); got != user {
					t.Errorf("out/%s after gc is owned by %d, want the user's %d", f, got, user)
				}
			}
			if got := modeOf(t, out); got != mode {
				t.Errorf("out/ after gc has mode %o, want the user's %o back", got, mode)
			}
		})
	}
}

// TestNextRunHandsBackAKilledRunsGrant: without gc, the next run of a
// grant that a killed run left handed over hands it back before its own
// hand-over, and its end leaves the grant the user's, with the mode from
// before the killed run.
func TestNextRunHandsBackAKilledRunsGrant(t *testing.T) {
	tier, args := "process", []string{"run"}
	if env.runner == nil {
		args = append(args, "--isolation", "landlock", "--approve", "isolation-landlock")
	}
	begin(t)
	dir := workdir(t, map[string]string{"out/.keep": ""})
	out := filepath.Join(dir, "out")
	user, mode := ownerOf(t, out), modeOf(t, out)
	extra := "  execution-privilege: reduced\ntimeout: 600000\n"
	victim := toolYAML(t, dir, tier, "victim", `chmod 700 out; touch out/started; sleep 300`, []string{"filesystem:write:./out"}, extra)
	again := toolYAML(t, dir, tier, "again", `touch out/again`, []string{"filesystem:write:./out"}, extra)
	cmd := command(append(args, victim)...)
	cmd.Dir = dir
	must(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		sandboxed(t, dir, "gc")
	})
	waitForFile(t, filepath.Join(out, "started"), 60*time.Second)
	toolUID := ownerOf(t, out)
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	waitNoProcsOf(t, toolUID, 15*time.Second)
	if c := sandboxed(t, dir, append(args, again)...); c.code != 0 {
		t.Fatalf("the next run: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	for _, f := range []string{"", "started", "again", ".keep"} {
		if got := ownerOf(t, filepath.Join(out, f)); got != user {
			t.Errorf("out/%s after the next run is owned by %d, want the user's %d", f, got, user)
		}
	}
	if got := modeOf(t, out); got != mode {
		t.Errorf("out/ after the next run has mode %o, want the user's %o", got, mode)
	}
}

// ownerOf is the uid owning p (not following a link).
func ownerOf(t *testing.T, p string) uint32 {
	t.Helper()
	var st syscall.Stat_t
	must(t, syscall.Lstat(p, &st))
	return st.Uid
}

// modeOf is p's permission bits, set-id and sticky bits.
func modeOf(t *testing.T, p string) uint32 {
	t.Helper()
	var st syscall.Stat_t
	must(t, syscall.Lstat(p, &st))
	return st.Mode & 0o7777
}

// waitNoProcsOf waits until no process runs as uid.
func waitNoProcsOf(t *testing.T, uid uint32, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := procsOfUID(uid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of uid %d still run %s after their controller was killed: %v", uid, within, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// procsOfUID lists the live processes whose real uid is uid, as
// "PID (COMM)".
func procsOfUID(uid uint32) []string {
	var out []string
	statuses, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, s := range statuses {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		var comm, state string
		var real = -1
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			switch {
			case len(f) > 1 && f[0] == "Name:":
				comm = f[1]
			case len(f) > 1 && f[0] == "State:":
				state = f[1]
			case len(f) > 1 && f[0] == "Uid:":
				fmt.Sscan(f[1], &real)
			}
		}
		if real == int(uid) && state != "Z" {
			out = append(out, filepath.Base(filepath.Dir(s))+" ("+comm+")")
		}
	}
	return out
}
