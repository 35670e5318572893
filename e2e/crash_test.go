package e2e

import (
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
