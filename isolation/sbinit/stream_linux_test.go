//go:build linux

package sbinit

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/seccomp"
)

// startStreamInit starts this test binary as an init speaking the stream
// protocol on its standard input and output, as it does in a pod.
func startStreamInit(t *testing.T, cfg *Config, dial func() (net.Conn, error)) *StreamClient {
	t.Helper()
	cmd := exec.Command(os.Args[0], InitArg, streamArg)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cl := NewStreamClient(stdout, stdin)
	cl.KillGrace = 200 * time.Millisecond
	cl.DialEgress = dial
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.WaitHello(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.Handshake(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cl.Close()
		cmd.Wait()
	})
	return cl
}

// startBridgedInit starts a bridge speaking the stream protocol and an init
// of its own that dials it, as in a pod: the init is another process.
func startBridgedInit(t *testing.T, cfg *Config) *StreamClient {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "control.sock")
	br := exec.Command(os.Args[0], BridgeArgs(sock)...)
	stdin, err := br.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := br.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	br.Stderr = os.Stderr
	if err := br.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	in := exec.Command(os.Args[0], ConnectArgs(sock)...)
	in.Stderr = os.Stderr
	if err := in.Start(); err != nil {
		t.Fatal(err)
	}
	cl := NewStreamClient(stdout, stdin)
	cl.KillGrace = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.WaitHello(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.Handshake(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cl.Close()
		br.Wait()
		in.Wait()
	})
	return cl
}

func TestBridgedInit(t *testing.T) {
	cl := startBridgedInit(t, &Config{RunID: "t"})
	var out bytes.Buffer
	exit, err := cl.Exec(context.Background(), isolation.Command{Args: []string{"sh", "-c", "cat; exit 4"}, Env: testEnv},
		isolation.Stdio{Stdin: strings.NewReader("through the bridge"), Stdout: &out})
	if err != nil || exit.Code != 4 || out.String() != "through the bridge" {
		t.Fatalf("exit %+v err %v out %q", exit, err, out.String())
	}
}

func TestStreamExec(t *testing.T) {
	cl := startStreamInit(t, &Config{RunID: "t"}, nil)
	ctx := context.Background()
	var out, errb bytes.Buffer
	exit, err := cl.Exec(ctx, isolation.Command{Args: []string{"sh", "-c", "cat; echo err >&2; exit 3"}, Env: testEnv},
		isolation.Stdio{Stdin: strings.NewReader("hello\n"), Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	if exit.Code != 3 || out.String() != "hello\n" || errb.String() != "err\n" {
		t.Fatalf("exit %+v stdout %q stderr %q", exit, out.String(), errb.String())
	}
	// Large output arrives whole, in order, before the exit.
	out.Reset()
	exit, err = cl.Exec(ctx, isolation.Command{Args: []string{"sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' x"}, Env: testEnv},
		isolation.Stdio{Stdout: &out})
	if err != nil || exit.Code != 0 || out.Len() != 1000000 {
		t.Fatalf("exit %+v err %v: %d bytes of output", exit, err, out.Len())
	}
	// Not found is 127 with the reason on stderr, as on a socket.
	errb.Reset()
	exit, err = cl.Exec(ctx, isolation.Command{Args: []string{"no-such-command-here"}, Env: testEnv}, isolation.Stdio{Stderr: &errb})
	if err != nil || exit.Code != 127 {
		t.Fatalf("exit %+v err %v stderr %q", exit, err, errb.String())
	}
}

func TestStreamExecTimeout(t *testing.T) {
	cl := startStreamInit(t, &Config{RunID: "t"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	exit, err := cl.Exec(ctx, isolation.Command{Args: []string{"sh", "-c", "trap '' TERM; sleep 30"}, Env: testEnv}, isolation.Stdio{})
	if !errors.Is(err, context.DeadlineExceeded) || exit.Signal != 9 {
		t.Fatalf("exit %+v err %v, want SIGKILL after the grace and the deadline", exit, err)
	}
}

func TestStreamPutGet(t *testing.T) {
	cl := startStreamInit(t, &Config{RunID: "t"}, nil)
	ctx := context.Background()
	src, dst := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "a/b"), 0o755))
	must(os.WriteFile(filepath.Join(src, "a/b/f.txt"), []byte("F"), 0o644))
	must(os.WriteFile(filepath.Join(src, "top.txt"), []byte("TOP"), 0o600))
	must(os.WriteFile(filepath.Join(src, "masked"), []byte("SECRET"), 0o600))
	must(os.Symlink("/etc/passwd", filepath.Join(src, "link")))
	var tarb bytes.Buffer
	must(WriteTar(&tarb, &Transfer{Path: src, Skip: []string{"masked"}}))
	must(cl.Put(ctx, Transfer{Path: dst, MaxBytes: 1 << 20}, &tarb))
	for name, want := range map[string]string{"a/b/f.txt": "F", "top.txt": "TOP"} {
		if b, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
	for _, gone := range []string{"masked", "link"} {
		if _, err := os.Lstat(filepath.Join(dst, gone)); err == nil {
			t.Errorf("%s was carried", gone)
		}
	}
	var back bytes.Buffer
	must(cl.Get(ctx, Transfer{Path: dst, Skip: []string{"a/b"}, MaxBytes: 1 << 20}, &back))
	var names []string
	tr := tar.NewReader(&back)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(err)
		names = append(names, h.Name)
	}
	if got := strings.Join(names, " "); got != "./ a/ top.txt" {
		t.Errorf("got %q", got)
	}
	// Over the cap is refused.
	tarb.Reset()
	must(WriteTar(&tarb, &Transfer{Path: src}))
	if err := cl.Put(ctx, Transfer{Path: t.TempDir(), MaxBytes: 2}, &tarb); err == nil || !strings.Contains(err.Error(), "more than 2 bytes") {
		t.Errorf("put over the cap: %v", err)
	}
}

func TestStreamEgress(t *testing.T) {
	// The "proxy": an echo server on a Unix socket the host dials.
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	inSandbox := filepath.Join(t.TempDir(), "egress.sock")
	cl := startStreamInit(t, &Config{RunID: "t", Egress: &EgressRelay{Socket: inSandbox, Port: 0}}, func() (net.Conn, error) {
		return net.Dial("unix", sock)
	})
	// A command dials the in-sandbox socket as the relay would.
	var out bytes.Buffer
	script := `exec 3<>/dev/null; perl -e 'use Socket; socket(S, PF_UNIX, SOCK_STREAM, 0) or die; connect(S, pack_sockaddr_un($ARGV[0])) or die "connect: $!"; syswrite(S, "ping-through-stream"); shutdown(S, 1); while (sysread(S, $b, 100)) { print $b }' ` + inSandbox
	exit, err := cl.Exec(context.Background(), isolation.Command{Args: []string{"sh", "-c", script}, Env: testEnv}, isolation.Stdio{Stdout: &out, Stderr: os.Stderr})
	if err != nil || exit.Code != 0 || out.String() != "ping-through-stream" {
		t.Fatalf("exit %+v err %v out %q", exit, err, out.String())
	}
}

func TestStreamInitLoadsFilter(t *testing.T) {
	prog, err := seccomp.Compile(&specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Syscalls:      []specs.LinuxSyscall{{Names: []string{"ptrace"}, Action: specs.ActErrno}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cl := startStreamInit(t, &Config{RunID: "t", Filter: EncodeProgram(prog)}, nil)
	var out bytes.Buffer
	// ptrace(PTRACE_TRACEME) is 101 on x86-64; the NNP line says the
	// filter came with no_new_privs.
	script := `perl -e '$r = syscall(101, 0, 0, 0, 0); print "ptrace=", ($r == -1 ? "refused" : "allowed"), "\n"'; grep NoNewPrivs /proc/self/status`
	if _, err := cl.Exec(context.Background(), isolation.Command{Args: []string{"sh", "-c", script}, Env: testEnv}, isolation.Stdio{Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "ptrace=refused") || !strings.Contains(out.String(), "NoNewPrivs:\t1") {
		t.Errorf("the filter is not on the commands: %q", out.String())
	}
}
