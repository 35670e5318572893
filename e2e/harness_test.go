package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

// env holds what the whole suite shares. It is set up once by TestMain.
var env struct {
	bin        string // the built sandboxed binary
	stateDir   string // SANDBOXED_STATE_DIR of every run
	runtimeDir string // SANDBOXED_RUNTIME_DIR of every run
	workRoot   string // parent of every test's working directory
	cacheHome  string // XDG_CACHE_HOME of every run: where the init binary is kept
	docker     bool   // a Docker engine answers

	// runner, when SANDBOXED_E2E_USER names an unprivileged user, runs
	// every sandboxed the tests start (rootless mode); the suite itself
	// stays root for its leak checks. nil: sandboxed runs as root.
	runner *runnerUser
}

// runnerUser is the unprivileged user of the rootless mode.
type runnerUser struct {
	name     string
	uid, gid uint32
	groups   []uint32
	home     string // owned by the user, inside the suite's directory
}

// TestMain runs the suite only when it was asked for (SANDBOXED_E2E=1).
// Not asked for, a developer's `go test ./...` passes over it; under CI,
// where it is always expected, that is a failure (package testenv).
// Asked for and unable to run (no root, no Docker), it fails either way.
func TestMain(m *testing.M) {
	serveIfAsked()
	foreignServeIfAsked()
	if !testenv.E2E() {
		if testenv.CI() {
			fmt.Fprintf(os.Stderr, "e2e: CI is set but %s is %q, not 1: the end-to-end suite must run in CI; set %s=1 (root, a Docker engine; see README)\n",
				testenv.E2EVar, os.Getenv(testenv.E2EVar), testenv.E2EVar)
			os.Exit(1)
		}
		fmt.Println("e2e: SANDBOXED_E2E is not 1; the end-to-end suite does not run (see README)")
		os.Exit(0)
	}
	code, err := setup()
	if err != nil {
		// Asked to run and cannot: fail, whatever the reason.
		fmt.Fprintln(os.Stderr, "e2e: cannot run:", err)
		os.Exit(1)
	}
	if code == 0 {
		code = m.Run()
	}
	if err := teardown(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		code = 1
	}
	os.Exit(code)
}

func setup() (int, error) {
	if os.Geteuid() != 0 {
		return 1, fmt.Errorf("the suite needs root (it creates namespaces, cgroups and containers); run it as root")
	}
	if runtime.GOOS != "linux" {
		return 1, fmt.Errorf("the suite needs Linux, not %s", runtime.GOOS)
	}
	root, err := os.MkdirTemp("", "sandboxed-e2e-")
	if err != nil {
		return 1, err
	}
	// World-traversable so reduced (65534) runs can reach granted dirs.
	if err := os.Chmod(root, 0o755); err != nil {
		return 1, err
	}
	env.bin = filepath.Join(root, "sandboxed")
	env.stateDir = filepath.Join(root, "state")
	env.runtimeDir = filepath.Join(root, "run")
	env.workRoot = filepath.Join(root, "work")
	env.cacheHome = filepath.Join(root, "cache")
	for _, d := range []string{env.stateDir, env.runtimeDir, env.workRoot} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return 1, err
		}
	}
	if err := os.Mkdir(env.cacheHome, 0o700); err != nil {
		return 1, err
	}
	if name := os.Getenv("SANDBOXED_E2E_USER"); name != "" {
		r, err := newRunner(name, root)
		if err != nil {
			return 1, fmt.Errorf("rootless mode (SANDBOXED_E2E_USER=%s): %w", name, err)
		}
		env.runner = r
	}
	// Built as users build it: the small init first, embedded in the CLI.
	// SANDBOXED_E2E_BIN names one built that way already, for a machine
	// without the Go toolchain (the cgroup v2 test VM).
	if prebuilt := os.Getenv("SANDBOXED_E2E_BIN"); prebuilt != "" {
		// One file: the binary works copied alone.
		if out, err := exec.Command("cp", prebuilt, env.bin).CombinedOutput(); err != nil {
			return 1, fmt.Errorf("copy SANDBOXED_E2E_BIN: %v\n%s", err, out)
		}
	} else {
		build := exec.Command("make", "-s", "build", "BIN="+env.bin)
		build.Dir = ".."
		if out, err := build.CombinedOutput(); err != nil {
			return 1, fmt.Errorf("build sandboxed (make build): %v\n%s", err, out)
		}
	}
	if err := exec.Command("docker", "info").Run(); err == nil {
		env.docker = true
	}
	if slices.ContainsFunc(runTiers(conformanceTiers), func(tier string) bool { return strings.HasPrefix(tier, "container") }) {
		if !env.docker {
			return 1, fmt.Errorf("no Docker engine answers (docker info failed); start it or run .ci/prepare.sh")
		}
		// The container tier's runner image: built once (a few minutes on a
		// fresh machine, a no-op when up to date).
		img := exec.Command(env.bin, "images", "build")
		img.Stdout, img.Stderr = os.Stderr, os.Stderr
		if err := img.Run(); err != nil {
			return 1, fmt.Errorf("build the runner image: %v", err)
		}
	}
	if slices.Contains(runTiers(conformanceTiers), kubeTier) {
		setupCluster()
	}
	if err := setupNet(root); err != nil {
		teardownNet()
		return 1, fmt.Errorf("set up the test network: %w", err)
	}
	if env.runner != nil {
		if err := env.runner.delegate(); err != nil {
			return 1, err
		}
	}
	return 0, nil
}

// teardown removes the network and the suite's directory. It returns an
// error when the directory cannot be removed or comes back (a process of
// the suite still writing there): the suite leaves nothing either.
func teardown() error {
	teardownNet()
	if env.bin == "" {
		return nil
	}
	root := filepath.Dir(env.bin)
	err := os.RemoveAll(root)
	if err == nil {
		time.Sleep(200 * time.Millisecond)
		if _, serr := os.Lstat(root); serr == nil {
			err = fmt.Errorf("%s came back after it was removed", root)
		}
	}
	if err == nil {
		return nil
	}
	var left []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, _ error) error {
		if len(left) < 20 {
			left = append(left, p)
		}
		return nil
	})
	return fmt.Errorf("remove the suite's directory: %w; left: %s", err, strings.Join(left, " "))
}

// result is what `sandboxed run --json` prints, decoded by the names the
// README documents. It is not sandbox.Result on purpose: the suite tests
// the binary's output as users read it, and a field renamed in the code
// (its JSON tag with it) must fail here, not be followed silently.
type result struct {
	RunID           string   `json:"run_id"`
	Tool            string   `json:"tool"`
	Isolation       string   `json:"isolation"`
	Status          string   `json:"status"`
	ExitCode        int      `json:"exit_code"`
	Stdout          string   `json:"stdout"`
	Stderr          string   `json:"stderr"`
	StdoutTruncated bool     `json:"stdout_truncated"`
	StderrTruncated bool     `json:"stderr_truncated"`
	DurationMS      int64    `json:"duration_ms"`
	PeakMemoryBytes int64    `json:"peak_memory_bytes"`
	Warnings        []string `json:"warnings"`
	Egress          []struct {
		Host        string   `json:"host"`
		Port        int      `json:"port"`
		Verdict     string   `json:"verdict"`
		Credentials []string `json:"credentials"`
		BytesUp     int64    `json:"bytes_up"`
		BytesDown   int64    `json:"bytes_down"`
	} `json:"egress"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Hint    string `json:"hint"`
	} `json:"error"`
}

// cli is one invocation of the binary.
type cli struct {
	stdout, stderr string
	code           int
}

// sandboxed runs the binary with args in dir and returns what it printed.
// It fails the test if the binary cannot be started or hangs.
func sandboxed(t *testing.T, dir string, args ...string) cli {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := command(args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := runCtx(ctx, cmd)
	if ctx.Err() != nil {
		t.Fatalf("sandboxed %s: hung for 3 minutes", strings.Join(args, " "))
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("start sandboxed: %v", err)
	}
	// A teardown that failed is a leak the CLI knows of: its own words
	// say more than the leak check after the test.
	if i := strings.Index(errb.String(), "sandboxed: error: teardown of run"); i >= 0 {
		t.Errorf("sandboxed %s: %s", strings.Join(args, " "), strings.TrimSpace(errb.String()[i:]))
	}
	return cli{stdout: out.String(), stderr: errb.String(), code: code}
}

// runEnv is the environment of every sandboxed the tests start.
func runEnv() []string {
	e := append(os.Environ(),
		"SANDBOXED_STATE_DIR="+env.stateDir,
		"SANDBOXED_RUNTIME_DIR="+env.runtimeDir,
		"SANDBOXED_TEST_HOSTS_FILE="+testNet.hostsFile,
		"XDG_CACHE_HOME="+env.cacheHome,
	)
	if r := env.runner; r != nil {
		e = append(e, "HOME="+r.home, "USER="+r.name, "LOGNAME="+r.name)
		if cgroupV2() {
			rt := fmt.Sprintf("/run/user/%d", r.uid)
			e = append(e, "XDG_RUNTIME_DIR="+rt, "DBUS_SESSION_BUS_ADDRESS=unix:path="+rt+"/bus")
		}
	}
	return e
}

// command is `sandboxed ARGS...` with the suite's environment, run as the
// rootless mode's user when there is one (on cgroup v2 inside a scope of
// that user's systemd manager, as a login session would be).
// `sandboxed setup` is root's command whatever the mode.
func command(args ...string) *exec.Cmd {
	cmd := exec.Command(env.bin, args...)
	if env.runner != nil && len(args) > 0 && args[0] != "setup" {
		if cgroupV2() {
			cmd = exec.Command("systemd-run", append([]string{"--user", "--scope", "--quiet", "--collect", "--", env.bin}, args...)...)
		}
		asRunner(cmd)
	}
	cmd.Env = runEnv()
	return cmd
}

// asRunner makes cmd run as the rootless mode's user, if there is one.
func asRunner(cmd *exec.Cmd) {
	if r := env.runner; r != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: r.uid, Gid: r.gid, Groups: r.groups}}
	}
}

// runnerDir makes a private directory for sandboxed's own files (a state
// or cache directory) that the rootless mode's user owns.
func runnerDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp(env.workRoot, "own-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	giveToRunner(t, d)
	return d
}

// giveToRunner gives p (and what is in it) to the rootless mode's user.
func giveToRunner(t *testing.T, p string) {
	t.Helper()
	if r := env.runner; r != nil {
		if err := chownTree(p, int(r.uid), int(r.gid)); err != nil {
			t.Fatal(err)
		}
	}
}

// runCtx runs cmd, killed when ctx ends.
func runCtx(ctx context.Context, cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			cmd.Process.Kill()
		case <-done:
		}
	}()
	return cmd.Wait()
}

// runJSON runs `sandboxed run --json ARGS...` and decodes the result.
func runJSON(t *testing.T, dir string, args ...string) (result, cli) {
	t.Helper()
	c := sandboxed(t, dir, append([]string{"run", "--json"}, args...)...)
	var r result
	if err := json.Unmarshal([]byte(c.stdout), &r); err != nil {
		t.Fatalf("run --json %v: exit %d, output is not a result: %v\nstdout: %s\nstderr: %s",
			args, c.code, err, c.stdout, c.stderr)
	}
	return r, c
}

// workdir makes a fresh working directory for one test, world-readable so
// every privilege level can use it, and writes files into it.
func workdir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir, err := os.MkdirTemp(env.workRoot, strings.ReplaceAll(t.Name(), "/", "_")+"-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r := env.runner; r != nil {
		// The working directory is the user's, as it would be.
		if err := chownTree(dir, int(r.uid), int(r.gid)); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
