package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// A tool's tests (tests: in its definition) run like this, case by case:
//
//  1. A fresh scratch directory is made on the host; it is the case's
//     working directory: {WORKSPACE}, relative parameters, relative
//     permissions and file assertions all resolve against it.
//  2. The suite's setup commands run there, in a sandbox of their own
//     (the tool's tier, same-as-user privilege) that may write the scratch
//     directory and nothing else, with the suite's environment.
//  3. The tool runs through the normal path (Controller.Run: policy,
//     plan, sandbox, steps) with the case's parameters, the suite's
//     environment added to its own variables.
//  4. The assertions are checked against the run's output (stdout, then
//     stderr) and the scratch directory.
//  5. The case's cleanup, then the suite's cleanup, run in a sandbox like
//     setup did, whatever happened; then the scratch directory is removed.
//
// A case without exit-code and error assertions expects the tool to
// succeed (status ok, exit 0).

// SuiteRequest is one `sandboxed tool test`.
type SuiteRequest struct {
	Def *tool.Definition
	// Only runs the case of that name ("" runs all).
	Only       string
	Policy     *policy.Policy
	PolicyFile string
	Isolation  string
	Approvals  []string
	Egress     EgressStarter
	FindTool   ToolFinder
	// Cluster is the operator's backend choice for every run of the suite.
	Cluster Cluster
	// Progress, when set, is told when a case starts (done false) and ends.
	Progress func(c *CaseResult, done bool)
}

// CaseResult is one test case's outcome.
type CaseResult struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Passed      bool     `json:"passed"`
	Failures    []string `json:"failures,omitempty"`
	DurationMS  int64    `json:"duration_ms"`
	// Run is the tool's run; nil when setup failed before it.
	Run *Result `json:"run,omitempty"`
	// Setup and Cleanup are the results of those commands, when any ran.
	Setup   *Result `json:"setup,omitempty"`
	Cleanup *Result `json:"cleanup,omitempty"`
}

// Output is what the assertions read: the run's stdout, then its stderr.
func (c *CaseResult) Output() string {
	if c.Run == nil {
		return ""
	}
	if c.Run.Stderr == "" {
		return c.Run.Stdout
	}
	return c.Run.Stdout + c.Run.Stderr
}

// SuiteResult is a whole test run.
type SuiteResult struct {
	Tool       string       `json:"tool"`
	Cases      []CaseResult `json:"cases"`
	Passed     int          `json:"passed"`
	Failed     int          `json:"failed"`
	DurationMS int64        `json:"duration_ms"`
}

// ErrNoTests: the tool has no tests, or none of the name asked for.
var ErrNoTests = errors.New("no tests to run")

// RunSuite runs the tool's test cases one after another, each in its own
// sandbox and scratch directory. A failing case is reported in the
// result; the error is for a suite that could not run at all.
func (c *Controller) RunSuite(ctx context.Context, req *SuiteRequest) (*SuiteResult, error) {
	def := req.Def
	ts := def.Tests
	if ts == nil || len(ts.Cases) == 0 {
		return nil, fmt.Errorf("test %s: the definition has no tests: section: %w", def.Name, ErrNoTests)
	}
	var cases []tool.TestCase
	var names []string
	for _, tc := range ts.Cases {
		names = append(names, tc.Name)
		if req.Only == "" || tc.Name == req.Only {
			cases = append(cases, tc)
		}
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("test %s: no test named %q; its tests are %s: %w", def.Name, req.Only, strings.Join(names, ", "), ErrNoTests)
	}
	if req.FindTool == nil {
		// Sub-tools and dependencies come from the caller's scopes, not
		// from the scratch directory the case runs in.
		cwd, _ := os.Getwd()
		home := InvokingHome()
		req.FindTool = ScopeFinder(cwd, home)
	}
	start := time.Now()
	sr := &SuiteResult{Tool: def.Name, Cases: []CaseResult{}}
	for _, tc := range cases {
		if ctx.Err() != nil {
			break
		}
		cr := CaseResult{Name: tc.Name, Description: tc.Description}
		if req.Progress != nil {
			req.Progress(&cr, false)
		}
		c.runCase(ctx, req, tc, &cr)
		if cr.Passed {
			sr.Passed++
		} else {
			sr.Failed++
		}
		if req.Progress != nil {
			req.Progress(&cr, true)
		}
		sr.Cases = append(sr.Cases, cr)
	}
	sr.DurationMS = time.Since(start).Milliseconds()
	return sr, nil
}

func (c *Controller) runCase(ctx context.Context, req *SuiteRequest, tc tool.TestCase, cr *CaseResult) {
	t0 := time.Now()
	defer func() { cr.DurationMS = time.Since(t0).Milliseconds() }()
	fail := func(format string, a ...any) { cr.Failures = append(cr.Failures, fmt.Sprintf(format, a...)) }

	scratch, err := os.MkdirTemp("", "sandboxed-test-"+req.Def.Name+"-")
	if err != nil {
		fail("create scratch directory: %v", err)
		return
	}
	defer os.RemoveAll(scratch)
	if err := prepareScratch(scratch, req.Def); err != nil {
		fail("prepare scratch directory: %v", err)
		return
	}
	ts := req.Def.Tests

	// Cleanup runs whatever happens below.
	defer func() {
		cmds := append(append([]string(nil), tc.Cleanup...), ts.Cleanup...)
		if len(cmds) == 0 {
			return
		}
		res, err := c.runHelper(context.WithoutCancel(ctx), req, "cleanup", cmds, scratch)
		cr.Cleanup = res
		if err != nil {
			fail("cleanup: %v", err)
		} else if res.Status != StatusOK {
			fail("cleanup failed (%s, exit %d): %s", res.Status, res.ExitCode, snippet(res.Stderr+res.Stdout))
		}
		cr.Passed = len(cr.Failures) == 0
	}()

	if len(ts.Setup) > 0 {
		res, err := c.runHelper(ctx, req, "setup", ts.Setup, scratch)
		cr.Setup = res
		if err != nil {
			fail("setup: %v", err)
			return
		}
		if res.Status != StatusOK {
			fail("setup failed (%s, exit %d): %s", res.Status, res.ExitCode, snippet(res.Stderr+res.Stdout))
			return
		}
	}

	def := withEnv(req.Def, ts.Environment)
	in := tool.Input{}
	for k, v := range tc.Parameters {
		in[k] = tool.Text(v)
	}
	res, _, err := c.Run(ctx, &Request{
		Def: def, Input: in, Policy: req.Policy, PolicyFile: req.PolicyFile, Isolation: req.Isolation,
		Approvals: req.Approvals, Egress: req.Egress, FindTool: req.FindTool, Cwd: scratch, Cluster: req.Cluster,
	})
	cr.Run = res
	if res == nil {
		fail("run: %v", err)
		return
	}
	for _, f := range checkExpected(tc.Expected, res, cr.Output(), scratch) {
		fail("%s", f)
	}
	cr.Passed = len(cr.Failures) == 0
}

// prepareScratch makes the scratch directory usable by the tool's user:
// the invoking user's for same-as-user, anyone's for reduced (65534).
func prepareScratch(dir string, def *tool.Definition) error {
	uid, gid := invokingUser()
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, int(uid), int(gid)); err != nil {
			return err
		}
	}
	mode := os.FileMode(0o755)
	if def.Security.ExecutionPrivilege == tool.PrivilegeReduced {
		mode = 0o777
	}
	return os.Chmod(dir, mode)
}

// withEnv returns def with the suite's environment added to its variables.
func withEnv(def *tool.Definition, env map[string]string) *tool.Definition {
	if len(env) == 0 {
		return def
	}
	d := *def
	e := tool.Environment{Variables: map[string]string{}}
	if def.Environment != nil {
		e.Inherit = def.Environment.Inherit
		for k, v := range def.Environment.Variables {
			e.Variables[k] = v
		}
	}
	for k, v := range env {
		e.Variables[k] = v
	}
	d.Environment = &e
	return &d
}

// runHelper runs setup or cleanup commands in a sandbox that may write the
// scratch directory and nothing else, one step per command.
func (c *Controller) runHelper(ctx context.Context, req *SuiteRequest, what string, cmds []string, scratch string) (*Result, error) {
	def := &tool.Definition{
		Name:        req.Def.Name + "-test-" + what,
		Description: "test " + what + " of " + req.Def.Name,
		Security: tool.Security{
			Isolation:           req.Def.Security.Isolation,
			ExecutionPrivilege:  tool.PrivilegeSameAsUser,
			RequiredPermissions: []string{"filesystem:write:" + scratch},
		},
		Timeout: time.Minute,
		Tags:    []string{"write"},
	}
	if def.Security.Isolation == "" || def.Security.Isolation == tool.IsolationNone {
		def.Security.Isolation = tool.IsolationProcess
	}
	if env := req.Def.Tests.Environment; len(env) > 0 {
		def.Environment = &tool.Environment{Variables: env}
	}
	for i, cmd := range cmds {
		// Braces in helper commands are the shell's, not references.
		def.Steps = append(def.Steps, tool.Step{Name: fmt.Sprintf("%s-%d", what, i+1),
			Exec: &tool.Exec{Kind: tool.ExecBash, Command: cmd}, ContinueOnError: what == "cleanup"})
	}
	res, _, err := c.Run(ctx, &Request{Def: def, Input: tool.Input{}, Policy: req.Policy, PolicyFile: req.PolicyFile,
		Isolation: req.Isolation, Approvals: req.Approvals, Cwd: scratch, Cluster: req.Cluster})
	if res == nil {
		return nil, err
	}
	if what == "cleanup" {
		for _, s := range res.Steps {
			if s.Status != StatusOK && !s.Skipped && res.Status == StatusOK {
				res.Status, res.ExitCode = StatusFailed, s.ExitCode
			}
		}
	}
	return res, nil
}

// checkExpected returns one line per failed assertion.
func checkExpected(e tool.Expected, res *Result, output, scratch string) []string {
	var fails []string
	code := res.ProcessExitCode()
	switch {
	case e.ExitCode != nil:
		if code != *e.ExitCode {
			fails = append(fails, fmt.Sprintf("exit-code: want %d, got %d (%s)%s", *e.ExitCode, code, res.Status, errSuffix(res)))
		}
	case e.Error != nil && *e.Error:
		if res.Status == StatusOK {
			fails = append(fails, "error: want the tool to fail, it succeeded (exit 0)")
		}
	default:
		if res.Status != StatusOK {
			fails = append(fails, fmt.Sprintf("want success, got %s exit %d%s", res.Status, code, errSuffix(res)))
		}
	}
	if e.ExitCode != nil && e.Error != nil {
		if *e.Error && res.Status == StatusOK {
			fails = append(fails, "error: want the tool to fail, it succeeded")
		} else if !*e.Error && res.Status != StatusOK {
			fails = append(fails, fmt.Sprintf("error: want no error, got %s", res.Status))
		}
	}
	for _, s := range e.OutputContains {
		if !strings.Contains(output, s) {
			fails = append(fails, fmt.Sprintf("output-contains %q: not in the output", s))
		}
	}
	for _, s := range e.OutputNotContains {
		if strings.Contains(output, s) {
			fails = append(fails, fmt.Sprintf("output-not-contains %q: found in the output", s))
		}
	}
	for _, pat := range e.OutputMatches {
		re, err := regexp.Compile("(?m)" + pat)
		switch {
		case err != nil:
			fails = append(fails, fmt.Sprintf("output-matches %q: not a regular expression: %v", pat, err))
		case !re.MatchString(output):
			fails = append(fails, fmt.Sprintf("output-matches %q: no match in the output", pat))
		}
	}
	for _, p := range e.FileExists {
		full, err := inScratch(scratch, p)
		if err != nil {
			fails = append(fails, fmt.Sprintf("file-exists %q: %v", p, err))
		} else if _, err := os.Lstat(full); err != nil {
			fails = append(fails, fmt.Sprintf("file-exists %q: it does not exist", p))
		}
	}
	for _, p := range e.FileNotExists {
		full, err := inScratch(scratch, p)
		if err != nil {
			fails = append(fails, fmt.Sprintf("file-not-exists %q: %v", p, err))
		} else if _, err := os.Lstat(full); err == nil {
			fails = append(fails, fmt.Sprintf("file-not-exists %q: it exists", p))
		}
	}
	for _, fc := range e.FileContains {
		full, err := inScratch(scratch, fc.Path)
		if err != nil {
			fails = append(fails, fmt.Sprintf("file-contains %q: %v", fc.Path, err))
			continue
		}
		data, err := readCapped(full, 16<<20)
		switch {
		case err != nil:
			fails = append(fails, fmt.Sprintf("file-contains %q: %v", fc.Path, err))
		case !strings.Contains(string(data), fc.Text):
			fails = append(fails, fmt.Sprintf("file-contains %q: %q not in it (it has %s)", fc.Path, fc.Text, snippet(string(data))))
		}
	}
	return fails
}

func errSuffix(res *Result) string {
	if res.Error == nil {
		return ""
	}
	return ": " + res.Error.Message
}

// inScratch resolves a test path inside the scratch directory; a path
// that leaves it is an error, not a look at the host.
func inScratch(scratch, p string) (string, error) {
	if filepath.IsAbs(p) {
		return "", fmt.Errorf("file assertions take paths relative to the test's working directory")
	}
	full := filepath.Join(scratch, p)
	if full != scratch && !strings.HasPrefix(full, scratch+string(filepath.Separator)) {
		return "", fmt.Errorf("the path leaves the test's working directory")
	}
	if r, err := filepath.EvalSymlinks(filepath.Dir(full)); err == nil {
		rs, _ := filepath.EvalSymlinks(scratch)
		if r != rs && !strings.HasPrefix(r, rs+string(filepath.Separator)) {
			return "", fmt.Errorf("the path leaves the test's working directory through a symlink")
		}
	}
	return full, nil
}

func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 0, 4096)
	tmp := make([]byte, 32<<10)
	for int64(len(buf)) < limit {
		n, err := f.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if err != nil {
			break
		}
	}
	return buf, nil
}

// snippet shortens output for a report line.
func snippet(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "(no output)"
	}
	const max = 300
	if len(s) > max {
		s = s[:max] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// Snippet shortens output for a test report.
func Snippet(s string) string { return snippet(s) }
