//go:build linux

package sbinit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

func TestMain(m *testing.M) {
	if IsInit() {
		Main()
	}
	os.Exit(m.Run())
}

// startPlainInit starts this test binary as an init that builds no root and
// drops nothing: it exercises the protocol and the request loop without
// root.
func startPlainInit(t *testing.T) *Client {
	t.Helper()
	return startPlainInitConfig(t, &Config{RunID: "t", Spec: &specs.Spec{}})
}

func startPlainInitConfig(t *testing.T, cfg *Config) *Client {
	t.Helper()
	host, child, err := SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], InitArg)
	cmd.ExtraFiles = []*os.File{child}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Close()
	cl := NewClient(host)
	cl.KillGrace = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cl.Handshake(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cl.Close()
		cmd.Wait()
	})
	return cl
}

var testEnv = []string{"PATH=/usr/bin:/bin"}

func TestClientExec(t *testing.T) {
	cl := startPlainInit(t)
	ctx := context.Background()
	var out, errb bytes.Buffer
	exit, err := cl.Exec(ctx, isolation.Command{Args: []string{"sh", "-c", "cat; echo err >&2; exit 3"}, Env: testEnv, Cwd: "/"},
		isolation.Stdio{Stdin: strings.NewReader("hi\n"), Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	if exit.Code != 3 || out.String() != "hi\n" || errb.String() != "err\n" {
		t.Fatalf("exit %+v stdout %q stderr %q", exit, out.String(), errb.String())
	}
}

func TestClientExecNotFound(t *testing.T) {
	cl := startPlainInit(t)
	var errb bytes.Buffer
	exit, err := cl.Exec(context.Background(), isolation.Command{Args: []string{"no-such-command-xyz"}, Env: testEnv},
		isolation.Stdio{Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	if exit.Code != 127 || !strings.Contains(errb.String(), "not found") {
		t.Fatalf("exit %+v stderr %q", exit, errb.String())
	}
}

func TestClientExecConcurrent(t *testing.T) {
	cl := startPlainInit(t)
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() {
			var out bytes.Buffer
			exit, err := cl.Exec(context.Background(), isolation.Command{Args: []string{"sh", "-c", "sleep 0.05; echo ok"}, Env: testEnv},
				isolation.Stdio{Stdout: &out})
			if err == nil && (exit.Code != 0 || out.String() != "ok\n") {
				err = errors.New("bad result " + out.String())
			}
			errs <- err
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestClientExecCancel(t *testing.T) {
	cl := startPlainInit(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	// The shell ignores SIGTERM, so only the SIGKILL after the grace ends it.
	exit, err := cl.Exec(ctx, isolation.Command{Args: []string{"sh", "-c", "trap '' TERM; sleep 30"}, Env: testEnv}, isolation.Stdio{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if exit.Signal != 9 || time.Since(start) > 10*time.Second {
		t.Fatalf("exit %+v after %v", exit, time.Since(start))
	}
}

func TestClientCloseEndsInit(t *testing.T) {
	cl := startPlainInit(t)
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Exec(context.Background(), isolation.Command{Args: []string{"true"}}, isolation.Stdio{}); !errors.Is(err, isolation.ErrClosed) {
		t.Fatalf("err = %v", err)
	}
}

func TestClientExecNprocLimit(t *testing.T) {
	cl := startPlainInitConfig(t, &Config{RunID: "t", Spec: &specs.Spec{}, NprocLimit: 7})
	var out, errb bytes.Buffer
	// argv[0] and the environment reach the command as sent; the limit is
	// its own, soft and hard.
	exit, err := cl.Exec(context.Background(), isolation.Command{
		Args: []string{"sh", "-c", `echo "$0 $V"; exec grep '^Max processes' /proc/self/limits`, "zero"},
		Env:  append([]string{"V=v"}, testEnv...), Cwd: "/"},
		isolation.Stdio{Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if exit.Code != 0 || len(lines) != 2 || lines[0] != "zero v" {
		t.Fatalf("exit %+v stdout %q stderr %q", exit, out.String(), errb.String())
	}
	f := strings.Fields(lines[1])
	if len(f) < 4 || f[2] != f[3] {
		t.Fatalf("limits line %q: want equal soft and hard limits", lines[1])
	}
	// 7 plus at least the init's own threads.
	if n, err := strconv.Atoi(f[2]); err != nil || n <= 7 {
		t.Fatalf("limits line %q: want more than 7 (the init's tasks are added)", lines[1])
	}
	// The init's own limit is untouched.
	var own unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &own); err != nil || own.Cur == 7 {
		t.Fatalf("this process's limit %+v %v", own, err)
	}
}

func TestParseStat(t *testing.T) {
	for _, c := range []struct {
		line    string
		ppid    int
		threads int64
		ok      bool
	}{
		{"42 (sandboxed-init) S 0 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 6 0 100 1 1 18446744073709551615", 0, 6, true},
		{"7 (a) b) (c) R 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5", 1, 1, true},
		{"7 (short) R 1", 0, 0, false},
		{"garbage", 0, 0, false},
	} {
		ppid, threads, ok := parseStat(c.line)
		if ppid != c.ppid || threads != c.threads || ok != c.ok {
			t.Errorf("parseStat(%q) = %d, %d, %v; want %d, %d, %v", c.line, ppid, threads, ok, c.ppid, c.threads, c.ok)
		}
	}
}
