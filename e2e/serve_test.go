package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// warmTiers are the tiers whose backend keeps warm sandboxes: a served
// run of these tiers must claim one from the pool.
var warmTiers = map[string]bool{"process": true, "container": true}

// freshScript fails when it finds any mark an earlier call left: a file
// in /tmp, the working directory or $HOME, a process, an environment
// variable. Then it leaves its own marks of each kind.
const freshScript = `s=mark
bad=""
for d in /tmp "$PWD" "${HOME:-/nonexistent}"; do
  for f in "$d"/${s}-*; do
    [ -e "$f" ] && bad="$bad file $f;"
  done
done
for f in /proc/[0-9]*/cmdline; do
  c=$(tr '\0' ' ' < "$f" 2>/dev/null)
  case "$c" in "${s}-sleeper"*) bad="$bad process $f ($c);";; esac
done
env | grep -q "^MARK_" && bad="$bad environment;"
n=$$-$RANDOM
touch /tmp/${s}-$n "$PWD/${s}-$n" "${HOME:-/tmp}/${s}-$n" 2>/dev/null
export MARK_N=$n
(exec -a ${s}-sleeper sleep 1000 </dev/null >/dev/null 2>&1 &)
if [ -n "$bad" ]; then echo "an earlier call is visible:$bad"; exit 1; fi
echo fresh`

// serveProc is a `sandboxed serve` started by a test.
type serveProc struct {
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServer starts `sandboxed serve ARGS...` in dir and waits until it
// answers on its socket. It is stopped (SIGTERM) when the test ends,
// before the leak check, unless the test killed it.
func startServer(t *testing.T, dir string, args ...string) *serveProc {
	t.Helper()
	cmd := command(append([]string{"serve"}, args...)...)
	cmd.Dir = dir
	s := &serveProc{cmd: cmd, log: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.log, s.log
	must(t, cmd.Start())
	go func() { cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			<-s.done
			t.Errorf("the server did not stop within 60s of SIGTERM\n%s", s.log.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.log.String(), "listening on") {
		select {
		case <-s.done:
			t.Fatalf("the server exited at once:\n%s", s.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not listen within 30s:\n%s", s.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

// kill kills the server with SIGKILL and waits for it to be gone.
func (s *serveProc) kill(t *testing.T) {
	t.Helper()
	must(t, s.cmd.Process.Signal(syscall.SIGKILL))
	<-s.done
}

var claimsRE = regexp.MustCompile(`pool: (\d+) warm claims so far`)

// claims is how many warm sandboxes the server handed out, from its log.
func (s *serveProc) claims() int {
	m := claimsRE.FindAllStringSubmatch(s.log.String(), -1)
	if len(m) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(m[len(m)-1][1])
	return n
}

// calls is how many calls the server has answered, from its log.
func (s *serveProc) calls() int { return len(claimsRE.FindAllString(s.log.String(), -1)) }

// callsReach waits a little for the server's log to count n calls: the
// server logs a call once its answer is sent, so the line may come just
// after the client has exited. It reports the count it saw last.
func (s *serveProc) callsReach(n int) int {
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := s.calls()
		if got >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServePoolFreshEveryCall makes 20 consecutive calls through a
// server's pool: each sees a fresh sandbox (no file, process or variable
// of an earlier call), and most claim a warm one.
func TestServePoolFreshEveryCall(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, tier, "fresh", freshScript, nil, "")
		srv := startServer(t, dir, "--pool-size", "2")
		for i := 0; i < 20; i++ {
			r, c := runJSON(t, dir, tool)
			if r.Status != "ok" || c.code != 0 || strings.TrimSpace(r.Stdout) != "fresh" {
				t.Fatalf("call %d: status %s exit %d\nstdout: %s\nstderr: %s\nserver: %s", i, r.Status, c.code, r.Stdout, r.Stderr, srv.log.String())
			}
		}
		if n := srv.callsReach(20); n != 20 {
			t.Fatalf("the server answered %d calls of 20 (the rest ran cold):\n%s", n, srv.log.String())
		}
		if warmTiers[tier] && srv.claims() < 10 {
			t.Errorf("%d of 20 calls claimed a warm sandbox, want most:\n%s", srv.claims(), srv.log.String())
		}
	})
}

// TestServePoolBurst sends a burst of calls larger than the pool at once:
// each gets a fresh sandbox (warm or cold) and succeeds.
func TestServePoolBurst(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, tier, "fresh", freshScript, nil, "")
		srv := startServer(t, dir, "--pool-size", "2")
		runJSON(t, dir, tool) // the kind's pool is made by its first call
		var wg sync.WaitGroup
		errs := make(chan string, 8)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := sandboxed(t, dir, "run", "--json", tool)
				var r result
				if err := json.Unmarshal([]byte(c.stdout), &r); err != nil || r.Status != "ok" || strings.TrimSpace(r.Stdout) != "fresh" {
					errs <- fmt.Sprintf("exit %d: %s %s", c.code, c.stdout, c.stderr)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Errorf("a call of the burst: %s", e)
		}
		if n := srv.callsReach(9); n != 9 {
			t.Errorf("the server answered %d calls of 9:\n%s", n, srv.log.String())
		}
	})
}

// TestServeKilledThenGC kills a server that holds warm sandboxes with
// SIGKILL: `sandboxed gc` then leaves nothing (the leak check).
func TestServeKilledThenGC(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, tier, "fresh", freshScript, nil, "")
		srv := startServer(t, dir, "--pool-size", "2")
		for i := 0; i < 3; i++ {
			if r, c := runJSON(t, dir, tool); r.Status != "ok" {
				t.Fatalf("call %d: %s %s", i, c.stdout, c.stderr)
			}
		}
		time.Sleep(200 * time.Millisecond) // the pool refilled
		srv.kill(t)
		c := sandboxed(t, dir, "gc")
		if c.code != 0 {
			t.Fatalf("gc: exit %d\n%s%s", c.code, c.stdout, c.stderr)
		}
		if !strings.Contains(c.stdout, "removed") {
			t.Errorf("gc removed nothing after the server was killed:\n%s%s", c.stdout, c.stderr)
		}
	})
}

// TestServeKilledMidBurstLosesNoRun kills the server with SIGKILL while
// calls are in flight: every call that was reported (a result printed)
// has its run record and its audit line.
func TestServeKilledMidBurstLosesNoRun(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, tier, "fresh", freshScript, nil, "")
		srv := startServer(t, dir, "--pool-size", "2")
		var mu sync.Mutex
		var reported []string
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					c := sandboxed(t, dir, "run", "--json", tool)
					var r result
					if json.Unmarshal([]byte(c.stdout), &r) == nil && r.RunID != "" {
						mu.Lock()
						reported = append(reported, r.RunID)
						mu.Unlock()
					}
				}
			}()
		}
		deadline := time.Now().Add(60 * time.Second)
		for srv.calls() < 6 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		srv.kill(t)
		time.Sleep(300 * time.Millisecond)
		close(stop)
		wg.Wait()
		if len(reported) < 6 {
			t.Fatalf("only %d calls were reported", len(reported))
		}
		audit := auditRunIDs(t)
		for _, id := range reported {
			if _, err := os.Stat(filepath.Join(env.stateDir, "runs", id, "result.json")); err != nil {
				t.Errorf("run %s was reported but has no run record: %v", id, err)
			}
			if !audit[id] {
				t.Errorf("run %s was reported but has no audit line", id)
			}
		}
		// A server killed while it made a run's directory leaves it
		// half made, under its hidden name; gc takes it for a crash's
		// leftover once older than making one may take (a minute).
		// Aged here rather than waited for.
		half, _ := filepath.Glob(filepath.Join(env.runtimeDir, ".creating-*"))
		for _, h := range half {
			old := time.Now().Add(-2 * time.Minute)
			must(t, os.Chtimes(h, old, old))
		}
		if c := sandboxed(t, dir, "gc"); c.code != 0 {
			t.Fatalf("gc: exit %d\n%s%s", c.code, c.stdout, c.stderr)
		} else if len(half) > 0 && !strings.Contains(c.stdout+c.stderr, "half-created run dir") {
			t.Errorf("gc left the half-made run directories %v: %s%s", half, c.stdout, c.stderr)
		}
		if tier == "container" {
			// The engine finishes a create the killed server asked
			// for after the server is gone: such a container, never
			// started, is the next gc's to remove.
			deadline := time.Now().Add(10 * time.Second)
			for runContainers(t) > 0 && time.Now().Before(deadline) {
				time.Sleep(500 * time.Millisecond)
				if c := sandboxed(t, dir, "gc"); c.code != 0 {
					t.Fatalf("gc: exit %d\n%s%s", c.code, c.stdout, c.stderr)
				}
			}
		}
	})
}

// runContainers counts the engine's containers labelled with a run id.
func runContainers(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=dev.sandboxed.run-id").Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return len(strings.Fields(string(out)))
}

// auditRunIDs are the run ids of the audit log's lines.
func auditRunIDs(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(env.stateDir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var l struct {
			RunID string `json:"run_id"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			ids[l.RunID] = true
		}
	}
	return ids
}

// auditLine is the audit line of run id, without what differs between
// two runs of the same call (run id, time).
func auditLine(t *testing.T, id string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.stateDir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(l, &m) == nil && m["run_id"] == id {
			delete(m, "run_id")
			delete(m, "time")
			return m
		}
	}
	t.Fatalf("no audit line for run %s", id)
	return nil
}

// TestServedSameAsCold runs the same calls cold and through a server:
// the results, exit codes, output, audit lines and policy decisions are
// the same (a tool that fails, one the policy refuses, a bad argument).
func TestServedSameAsCold(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"in.txt": "some input\n"})
		fails := toolYAML(t, dir, tier, "fails", `cat in.txt; echo "to stderr $WHO" >&2; exit 3`, []string{"filesystem:read:./in.txt"}, "")
		denied := toolYAML(t, dir, tier, "greedy", `echo never`, []string{"filesystem:read:/etc/shadow"}, "")
		srv := startServer(t, dir, "--pool-size", "1")
		calls := [][]string{
			{"run", "--json", filepath.Base(fails)},
			{"run", filepath.Base(fails)},
			{"run", "--json", filepath.Base(denied)},
			{"run", filepath.Base(denied)},
			{"run", "--json", filepath.Base(fails), "NOPE=1"},
			{"run", "--json", "no-such-tool"},
		}
		for _, args := range calls {
			for round := 0; round < 2; round++ { // the second claims a warm sandbox
				before := srv.calls()
				served := sandboxed(t, dir, args...)
				if srv.callsReach(before+1) != before+1 {
					t.Fatalf("%v did not go through the server:\n%s", args, srv.log.String())
				}
				cold := sandboxed(t, dir, append([]string{args[0], "--no-server"}, args[1:]...)...)
				if served.code != cold.code {
					t.Errorf("%v: exit %d served, %d cold\nserved: %s%s\ncold: %s%s", args, served.code, cold.code, served.stdout, served.stderr, cold.stdout, cold.stderr)
				}
				if args[1] != "--json" {
					if served.stdout != cold.stdout || served.stderr != cold.stderr {
						t.Errorf("%v: output differs\nserved: %q %q\ncold: %q %q", args, served.stdout, served.stderr, cold.stdout, cold.stderr)
					}
					continue
				}
				var rs, rc map[string]any
				if json.Unmarshal([]byte(served.stdout), &rs) != nil || json.Unmarshal([]byte(cold.stdout), &rc) != nil {
					if served.stdout != cold.stdout || served.stderr != cold.stderr {
						t.Errorf("%v: output differs\nserved: %q %q\ncold: %q %q", args, served.stdout, served.stderr, cold.stdout, cold.stderr)
					}
					continue
				}
				ids := []string{rs["run_id"].(string), rc["run_id"].(string)}
				for _, m := range []map[string]any{rs, rc} {
					for _, k := range []string{"run_id", "duration_ms", "started_at", "peak_memory_bytes"} {
						delete(m, k)
					}
					steps, _ := m["steps"].([]any)
					for _, st := range steps {
						if sm, ok := st.(map[string]any); ok {
							delete(sm, "duration_ms")
						}
					}
				}
				js, _ := json.Marshal(rs)
				jc, _ := json.Marshal(rc)
				if !bytes.Equal(js, jc) {
					t.Errorf("%v: results differ\nserved: %s\ncold:   %s", args, js, jc)
				}
				as, _ := json.Marshal(auditLine(t, ids[0]))
				ac, _ := json.Marshal(auditLine(t, ids[1]))
				if !bytes.Equal(as, ac) {
					t.Errorf("%v: audit lines differ\nserved: %s\ncold:   %s", args, as, ac)
				}
			}
		}
		// From another directory than the server's: the paths the caller
		// names are the caller's (the tool, the policy, the working
		// directory the tool runs in).
		sub := filepath.Join(dir, "sub")
		must(t, os.Mkdir(sub, 0o755))
		if r := env.runner; r != nil {
			must(t, os.Chown(sub, int(r.uid), int(r.gid))) // policy init writes there
		}
		must(t, os.WriteFile(filepath.Join(sub, "in.txt"), []byte("input of sub\n"), 0o644))
		if r := sandboxed(t, sub, "policy", "init", "--output", "pol.yaml"); r.code != 0 {
			t.Fatalf("policy init: %s", r.stderr)
		}
		args := []string{"run", "--policy", "pol.yaml", filepath.Join("..", filepath.Base(fails))}
		before := srv.calls()
		served := sandboxed(t, sub, args...)
		if srv.callsReach(before+1) != before+1 {
			t.Fatalf("%v did not go through the server:\n%s", args, srv.log.String())
		}
		cold := sandboxed(t, sub, append([]string{"run", "--no-server"}, args[1:]...)...)
		if served.code != cold.code || served.stdout != cold.stdout || served.stderr != cold.stderr {
			t.Errorf("%v from a subdirectory: served exit %d %q %q, cold exit %d %q %q", args, served.code, served.stdout, served.stderr, cold.code, cold.stdout, cold.stderr)
		}
		if !strings.Contains(served.stdout, "input of sub") {
			t.Errorf("%v from a subdirectory: the tool did not run in the caller's directory: %q %q", args, served.stdout, served.stderr)
		}
	})
}

// A server that declines a run (here: the caller's SANDBOXED_GLOBAL_DIR
// is not the server's) leaves it to the caller with all it had read: the
// parameters of --params-json - too.
func TestDeclinedRunKeepsStdinParams(t *testing.T) {
	forTierList(t, []string{"process"}, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		def := fmt.Sprintf("name: greet\ndescription: e2e tool greet\ntags: [read]\nbash: echo \"hello {who}\"\n"+
			"parameters:\n  who: {type: string, description: who, required: true}\nsecurity:\n  isolation: %s\n", tier)
		must(t, os.WriteFile(filepath.Join(dir, "greet.yaml"), []byte(def), 0o644))
		srv := startServer(t, dir, "--pool-size", "1")
		{
			cmd := command("run", "--params-json", "-", "greet.yaml")
			cmd.Dir = dir
			cmd.Env = append(cmd.Env, "SANDBOXED_GLOBAL_DIR="+filepath.Join(dir, "no-global"))
			cmd.Stdin = strings.NewReader(`{"who": "from stdin"}`)
			out, err := cmd.CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "hello from stdin" {
				t.Errorf("run --params-json - (declined by the server): %v: %q", err, out)
			}
		}
		if n := srv.calls(); n != 0 {
			t.Errorf("the server ran %d of the declined calls:\n%s", n, srv.log.String())
		}
	})
}
