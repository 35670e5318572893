package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestApprovalWithoutTerminal(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		grant := "network:external:web.test"
		dir, tool := egressTool(t, tier, "needs-approval", `curl -sf http://web.test/`, grant)
		// No terminal: stdin is not one, so the run is refused with the flag.
		c := sandboxed(t, dir, "run", tool)
		if c.code != 126 {
			t.Fatalf("without approval: exit %d, want 126\nstderr: %s", c.code, c.stderr)
		}
		if !strings.Contains(c.stderr, "--approve "+grant) {
			t.Errorf("the refusal does not print the flag that allows it:\n%s", c.stderr)
		}
		c = sandboxed(t, dir, "run", "--approve", grant, tool)
		if c.code != 0 || !strings.Contains(c.stdout, strings.TrimSpace(webBody)) {
			t.Fatalf("with --approve: exit %d\nstdout: %s\nstderr: %s", c.code, c.stdout, c.stderr)
		}
	})
}

// TestAuditOneLinePerRun runs an allowed, a denied, a failed and a timed
// out run with its own state directory and checks the audit log has one
// line each, and no secret given on the command line.
func TestAuditOneLinePerRun(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		state := runnerDir(t)
		dir := workdir(t, nil)
		params := "parameters:\n  API_TOKEN:\n    type: string\n    description: a secret\n    required: true\n"
		ok := toolYAML(t, dir, tier, "audited-ok", `echo done {API_TOKEN} | wc -c`, nil, params)
		fail := toolYAML(t, dir, tier, "audited-fail", `echo {API_TOKEN} >/dev/null; exit 3`, nil, params)
		slow := toolYAML(t, dir, tier, "audited-timeout", `echo {API_TOKEN} >/dev/null; sleep 30`, nil, params+"timeout: 1000\n")
		denied := toolYAML(t, dir, tier, "audited-denied", `echo {API_TOKEN}`, []string{"filesystem:read:~/.ssh"}, params)
		const secret = "hunter2-supersecret-token"
		runs := []struct {
			tool   string
			status string
			code   int
		}{{ok, "ok", 0}, {fail, "failed", 3}, {slow, "timeout", 124}, {denied, "denied", 126}}
		for _, r := range runs {
			cmd := command("run", r.tool, "API_TOKEN="+secret)
			cmd.Dir = dir
			cmd.Env = append(runEnv(), "SANDBOXED_STATE_DIR="+state)
			out, _ := cmd.CombinedOutput()
			if cmd.ProcessState.ExitCode() != r.code {
				t.Errorf("%s: exit %d, want %d: %s", filepath.Base(r.tool), cmd.ProcessState.ExitCode(), r.code, out)
			}
		}
		f, err := os.Open(filepath.Join(state, "audit.jsonl"))
		must(t, err)
		defer f.Close()
		var lines []map[string]any
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), secret) {
				t.Errorf("the audit log holds the secret: %s", sc.Text())
			}
			var m map[string]any
			must(t, json.Unmarshal(sc.Bytes(), &m))
			lines = append(lines, m)
		}
		if len(lines) != len(runs) {
			t.Fatalf("%d audit lines for %d runs", len(lines), len(runs))
		}
		for i, r := range runs {
			if lines[i]["status"] != r.status || lines[i]["run_id"] == "" {
				t.Errorf("audit line %d: status %v, want %s: %v", i, lines[i]["status"], r.status, lines[i])
			}
		}
		// Run records are stored too, and hold no secret in their parameters.
		recs, _ := filepath.Glob(filepath.Join(state, "runs", "*", "result.json"))
		if len(recs) != len(runs) {
			t.Errorf("%d run records for %d runs", len(recs), len(runs))
		}
	})
}

// A directory the policy denies, inside a wider grant, is hidden: the
// grant works, the directory is empty and cannot be written. (The process
// tier used to fail to start: the grant was mounted over the mask.)
func TestDeniedDirectoryInsideAGrantIsHidden(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"data/public.txt": "PUBLIC", "data/secret/key.txt": "SECRET-KEY"})
		pol := policyDenying(t, dir, filepath.Join(dir, "data", "secret"))
		tool := toolYAML(t, dir, tier, "reader", `
cat data/public.txt && echo
ls -A data/secret | wc -l
cat data/secret/key.txt 2>/dev/null || echo NO-KEY
if touch data/secret/new 2>/dev/null; then echo WROTE-SECRET; fi`, []string{"filesystem:read:./data"}, "")
		// A grant holding a denied path needs approval; the path stays
		// hidden even then.
		r, c := runJSON(t, dir, "--policy", pol, "--approve", "filesystem:read:"+filepath.Join(dir, "data"), tool)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "PUBLIC") {
			t.Fatalf("positive control: the grant did not work:\n%s\n%s", r.Stdout, r.Stderr)
		}
		if strings.Contains(r.Stdout, "SECRET-KEY") || !strings.Contains(r.Stdout, "NO-KEY") || strings.Contains(r.Stdout, "WROTE-SECRET") {
			t.Errorf("the denied directory was reachable:\n%s", r.Stdout)
		}
	})
}

// A protected path that did not exist when the run was planned (a new
// nested repository's .git/hooks and .git/config) cannot be masked; the
// run says what the tool created, in its result, on the terminal and in
// the audit log. One that existed stays protected and is not reported.
func TestCreatedProtectedPathsAreReported(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"out/old/.git/config": "[core]\n"})
		tool := toolYAML(t, dir, tier, "nester", `
mkdir -p out/new/.git/hooks && echo '[core]' > out/new/.git/config && echo MADE-REPO
if echo x >> out/old/.git/config 2>/dev/null; then echo WROTE-OLD; fi`, []string{"filesystem:write:./out"}, "")
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "MADE-REPO") || strings.Contains(r.Stdout, "WROTE-OLD") {
			t.Fatalf("stdout %q", r.Stdout)
		}
		var warned []string
		for _, w := range r.Warnings {
			for _, p := range []string{"out/new/.git/hooks", "out/new/.git/config", "out/old/.git"} {
				if strings.Contains(w, p) {
					warned = append(warned, p)
				}
			}
		}
		if !slices.Contains(warned, "out/new/.git/hooks") || !slices.Contains(warned, "out/new/.git/config") || slices.Contains(warned, "out/old/.git") {
			t.Errorf("warnings %q", r.Warnings)
		}
		// In the audit log.
		audit, err := os.ReadFile(filepath.Join(env.stateDir, "audit.jsonl"))
		must(t, err)
		found := false
		for _, line := range strings.Split(string(audit), "\n") {
			var rec struct {
				RunID    string   `json:"run_id"`
				Warnings []string `json:"warnings"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.RunID == r.RunID {
				found = len(rec.Warnings) == len(r.Warnings)
			}
		}
		if !found {
			t.Errorf("the audit line of run %s lacks the warnings", r.RunID)
		}
		// On the terminal's stderr too (a fresh nested repository again).
		must(t, os.RemoveAll(filepath.Join(dir, "out", "new")))
		c = sandboxed(t, dir, "run", tool)
		if !strings.Contains(c.stderr, "sandboxed: warning: the tool created") {
			t.Errorf("text mode does not show the warning:\n%s", c.stderr)
		}
	})
}

// policyDenying writes the built-in policy (policy init) with paths added
// to paths.deny into dir and returns its path.
func policyDenying(t *testing.T, dir string, paths ...string) string {
	t.Helper()
	pol := filepath.Join(dir, "policy.yaml")
	init := sandboxed(t, dir, "policy", "init", "--output", pol)
	if init.code != 0 {
		t.Fatalf("policy init: %d %s", init.code, init.stderr)
	}
	b, err := os.ReadFile(pol)
	must(t, err)
	const last = "    - ~/.local/state/sandboxed\n"
	extra := ""
	for _, p := range paths {
		extra += "    - " + p + "\n"
	}
	text := strings.Replace(string(b), last, last+extra, 1)
	if text == string(b) {
		t.Fatalf("policy init output has no %q deny line to extend:\n%s", last, b)
	}
	must(t, os.WriteFile(pol, []byte(text), 0o644))
	return pol
}

// Under a read-only grant, the directories between the grant and a hidden
// path stay read-only (they used to be bound read-write to pin them).
func TestReadGrantAroundAHiddenPathStaysReadOnly(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"data/sub/secret/key.txt": "SECRET-KEY", "data/sub/public.txt": "PUBLIC"})
		pol := policyDenying(t, dir, filepath.Join(dir, "data", "sub", "secret"))
		tool := toolYAML(t, dir, tier, "reader", `
cat data/sub/public.txt && echo
if touch data/sub/new 2>/dev/null; then echo WROTE-SUB; fi
if touch data/new 2>/dev/null; then echo WROTE-DATA; fi`, []string{"filesystem:read:./data"}, "")
		r, c := runJSON(t, dir, "--policy", pol, "--approve", "filesystem:read:"+filepath.Join(dir, "data"), tool)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "PUBLIC") {
			t.Fatalf("positive control: the grant did not work:\n%s\n%s", r.Stdout, r.Stderr)
		}
		if strings.Contains(r.Stdout, "WROTE-") {
			t.Errorf("a read-only grant was writable:\n%s", r.Stdout)
		}
	})
}

// A grant of a repository's .git itself keeps its hooks and config
// read-only: the policy's **/.git/hooks rules apply to the whole path.
func TestWriteGrantOfDotGitKeepsHooksReadOnly(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{".git/hooks/README": "hooks", ".git/config": "[core]\n", ".git/HEAD": "ref: refs/heads/main\n"})
		tool := toolYAML(t, dir, tier, "gitwriter", `
echo x > .git/scratch && echo WROTE-SCRATCH
if echo evil > .git/hooks/pre-commit 2>/dev/null; then echo WROTE-HOOK; fi
if echo evil >> .git/config 2>/dev/null; then echo WROTE-CONFIG; fi`, []string{"filesystem:write:./.git"}, "")
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "WROTE-SCRATCH") {
			t.Fatalf("positive control: the grant did not work:\n%s\n%s", r.Stdout, r.Stderr)
		}
		if strings.Contains(r.Stdout, "WROTE-HOOK") || strings.Contains(r.Stdout, "WROTE-CONFIG") {
			t.Errorf("the repository's hooks or config were writable:\n%s", r.Stdout)
		}
	})
}

// A protected path that does not exist when the run is planned cannot be
// hidden; if the tool creates it, the run says so.
func TestCreatedLiteralProtectedPathIsReported(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"data/public.txt": "PUBLIC"})
		secret := filepath.Join(dir, "data", "secret")
		pol := policyDenying(t, dir, secret)
		tool := toolYAML(t, dir, tier, "maker", `mkdir -p data/secret && echo k > data/secret/key && echo MADE`, []string{"filesystem:write:./data"}, "")
		r, c := runJSON(t, dir, "--policy", pol, "--approve", "filesystem:write:"+filepath.Join(dir, "data"), tool)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "MADE") {
			t.Fatalf("stdout %q stderr %q", r.Stdout, r.Stderr)
		}
		if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], secret) {
			t.Errorf("warnings %q, want one naming %s", r.Warnings, secret)
		}
	})
}

// A read-only grant nested in a write grant stays read-only, also when a
// protected path inside it makes the write grant pin the directories
// above that path.
func TestNestedReadGrantStaysReadOnly(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"w/r/.git/hooks/README": "hooks", "w/r/file": "R"})
		tool := toolYAML(t, dir, tier, "nested", `
echo ok > w/ok && echo WROTE-W
cat w/r/file && echo
if touch w/r/new 2>/dev/null; then echo WROTE-R; fi
if touch w/r/.git/new 2>/dev/null; then echo WROTE-R-GIT; fi`, []string{"filesystem:write:./w", "filesystem:read:./w/r"}, "")
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "WROTE-W") || !strings.Contains(r.Stdout, "R") {
			t.Fatalf("positive control: %q %q", r.Stdout, r.Stderr)
		}
		if strings.Contains(r.Stdout, "WROTE-R") {
			t.Errorf("the nested read-only grant was writable:\n%s", r.Stdout)
		}
	})
}

// A protected path that is a symlink (hooks kept elsewhere) cannot be
// masked in place: the run is refused at planning, with a reason that
// says so, and nothing starts.
func TestSymlinkedProtectedPathIsRefusedClearly(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"repo/.git/config": "[core]\n", "repo/hooks-real/pre-commit": "#!/bin/sh\n"})
		must(t, os.Symlink("../hooks-real", filepath.Join(dir, "repo", ".git", "hooks")))
		tool := toolYAML(t, dir, tier, "linked", `echo RAN`, []string{"filesystem:write:./repo"}, "")
		r, c := runJSON(t, dir, tool)
		if r.Status == "ok" || strings.Contains(r.Stdout, "RAN") {
			t.Fatalf("the run went ahead: %s %q", r.Status, r.Stdout)
		}
		if c.code != 125 || r.Error == nil || !strings.Contains(r.Error.Message, "is a symlink") || !strings.Contains(r.Error.Message, "narrower path") {
			t.Errorf("exit %d, error %+v", c.code, r.Error)
		}
	})
}

// A submodule's git directory (under the parent's .git/modules) has its
// hooks and config protected like the parent's.
func TestSubmoduleHooksStayReadOnly(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{
			"repo/.git/HEAD":                     "ref: refs/heads/main\n",
			"repo/.git/modules/lib/hooks/README": "hooks",
			"repo/.git/modules/lib/config":       "[core]\n",
			"repo/.git/modules/lib/HEAD":         "ref: refs/heads/main\n",
		})
		tool := toolYAML(t, dir, tier, "submodule", `
echo x > repo/.git/modules/lib/scratch && echo WROTE-SCRATCH
if echo evil > repo/.git/modules/lib/hooks/post-checkout 2>/dev/null; then echo WROTE-HOOK; fi
if echo evil >> repo/.git/modules/lib/config 2>/dev/null; then echo WROTE-CONFIG; fi`, []string{"filesystem:write:./repo"}, "")
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "WROTE-SCRATCH") {
			t.Fatalf("positive control: %q %q", r.Stdout, r.Stderr)
		}
		if strings.Contains(r.Stdout, "WROTE-HOOK") || strings.Contains(r.Stdout, "WROTE-CONFIG") {
			t.Errorf("the submodule's hooks or config were writable:\n%s", r.Stdout)
		}
	})
}
