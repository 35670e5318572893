package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// E2EVar is the variable that opts in to the tests that need the real
// system: root, a real kernel, a Docker engine. CI sets it to 1.
const E2EVar = "SANDBOXED_E2E"

// CI reports whether the tests run under continuous integration: the CI
// variable is set and is neither "false" nor "0" (the values CI systems use
// to say they are not one).
func CI() bool { return isCI(os.Getenv("CI")) }

func isCI(v string) bool {
	v = strings.TrimSpace(v)
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

// E2E reports whether the real-system tests were asked for
// (SANDBOXED_E2E=1).
func E2E() bool { return os.Getenv(E2EVar) == "1" }

// Need is the one decision every prerequisite check makes. A nil err means
// the prerequisite is there and Need returns. Otherwise the test stops:
// under CI it fails (t.Fatal), elsewhere it skips (t.Skip); the message
// says what was needed (what, a noun phrase such as "root" or "a Docker
// engine") and why it is missing (err).
func Need(t testing.TB, what string, err error) {
	t.Helper()
	if what == "" {
		t.Fatal("testenv.Need: say what the test needs")
		return
	}
	if err == nil {
		return
	}
	if CI() {
		t.Fatal(fmt.Sprintf("needs %s: %v (CI is set: a test that cannot run fails, it never passes by skipping)", what, err))
		return
	}
	t.Skip(fmt.Sprintf("needs %s: %v", what, err))
}

// NeedE2E stops a test that runs only when the real-system tests were
// asked for (SANDBOXED_E2E=1): it skips a developer's plain `go test`, and
// fails under CI, where SANDBOXED_E2E=1 is always expected. Such a test
// usually calls [NeedRoot] or [NeedDocker] next.
func NeedE2E(t testing.TB) {
	t.Helper()
	var err error
	if !E2E() {
		err = fmt.Errorf("%s is %q, not 1", E2EVar, os.Getenv(E2EVar))
	}
	Need(t, E2EVar+"=1 (root, a real kernel and a Docker engine)", err)
}

// NeedRoot stops a test that needs to run as root.
func NeedRoot(t testing.TB) {
	t.Helper()
	var err error
	if uid := os.Geteuid(); uid != 0 {
		err = fmt.Errorf("running as uid %d", uid)
	}
	Need(t, "root", err)
}

// NeedDocker stops a test that needs a Docker engine that answers a ping
// on DOCKER_HOST (a unix:// or tcp:// address), or on
// /var/run/docker.sock when DOCKER_HOST is not set.
func NeedDocker(t testing.TB) {
	t.Helper()
	Need(t, "a Docker engine", pingDocker(os.Getenv("DOCKER_HOST")))
}

// pingDocker asks the engine at host (a DOCKER_HOST value) for /_ping.
func pingDocker(host string) error {
	if host == "" {
		host = "unix:///var/run/docker.sock"
	}
	network, addr, ok := strings.Cut(host, "://")
	if !ok || (network != "unix" && network != "tcp") {
		return fmt.Errorf("DOCKER_HOST %q: only unix:// and tcp:// addresses are checked", host)
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := c.Get("http://docker/_ping")
	if err != nil {
		return fmt.Errorf("ping %s: %w", host, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ping %s: %s", host, resp.Status)
	}
	return nil
}

// Commands are the commands [NeedCommand] knows, each with where CI gets
// it: a command a test needs is installed by .ci/prepare.sh (or is part of
// every Debian system), so under CI a missing one is a broken machine, and
// a test cannot come to depend on a command CI never installs.
var Commands = map[string]string{
	"sh":          "essential",
	"bash":        "essential",
	"curl":        ".ci/prepare.sh",
	"wget":        ".ci/prepare.sh",
	"ip":          ".ci/prepare.sh",
	"bwrap":       ".ci/prepare.sh",
	"docker":      ".ci/prepare.sh",
	"debootstrap": ".ci/prepare.sh",
	"hyperfine":   ".ci/prepare.sh",
	"python3":     ".ci/prepare.sh",
	"zsh":         ".ci/prepare.sh", // the completion scripts' checks
	"fish":        ".ci/prepare.sh",
}

// NeedCommand stops a test that needs the command name on PATH. A name
// that is not in [Commands] fails the test whatever the environment: add
// it there and to .ci/prepare.sh first.
func NeedCommand(t testing.TB, name string) {
	t.Helper()
	if _, ok := Commands[name]; !ok {
		t.Fatal(fmt.Sprintf("testenv.NeedCommand: unknown command %q: add it to testenv.Commands and have .ci/prepare.sh install it", name))
		return
	}
	_, err := exec.LookPath(name)
	Need(t, "the command "+name, err)
}

// OptIn returns the positive count in the variable name (such as
// SANDBOXED_BENCH=20) and skips the test when it is not set, in CI too.
// It is for measurements that assert nothing, such as a benchmark printed
// as a ratio against a peer: such a test is asked for, not required, and
// skipping it hides no check. what says what the test does when asked. A
// value that is set but is not a positive integer fails the test.
func OptIn(t testing.TB, name, what string) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Skip(fmt.Sprintf("opt-in measurement, asserts nothing: set %s=N to %s", name, what))
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatal(fmt.Sprintf("%s=%q: want a positive count", name, v))
		return 0
	}
	return n
}

// errUnsupported says a helper cannot do its work on this system.
var errUnsupported = errors.New("not supported on this system")
