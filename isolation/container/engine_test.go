package container

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/images"
	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/internal/testenv"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	planner "github.com/sandboxed-dev/sandboxed/sandbox"
)

// The real-engine tests run when SANDBOXED_E2E=1. Then a missing engine,
// image or toolchain is a failure, never a skip.

var (
	imageOnce sync.Once
	buildErr  error

	initOnce sync.Once
	initBin  string
	initErr  error
)

// engineBackend returns a backend on the real engine whose init is a
// static build of cmd/sandboxed-init, the init sandboxed carries.
func engineBackend(t testing.TB) *Backend {
	t.Helper()
	testenv.NeedE2E(t)
	testenv.NeedDocker(t)
	initOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sandboxed-init-")
		if err != nil {
			initErr = err
			return
		}
		initBin = filepath.Join(dir, "sandboxed")
		cmd := exec.Command("go", "build", "-o", initBin, "../../cmd/sandboxed-init")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			initErr = errors.New("build the test init: " + err.Error() + ": " + string(out))
		}
	})
	if initErr != nil {
		t.Fatal(initErr)
	}
	b, err := New(WithInitBinary(initBin))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	r, err := b.Probe(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Reachable && !r.ImagePresent {
		// Packages run in parallel: build the image here rather than
		// depend on the images package's test having run first.
		imageOnce.Do(func() {
			_, buildErr = images.Build(context.Background(), images.BuildOptions{})
		})
		if buildErr != nil {
			t.Fatalf("build the runner image for the real-engine tests: %v", buildErr)
		}
		if r, err = b.Probe(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
	}
	if !r.OK() {
		t.Fatalf("the real-engine tests need a Docker engine and the runner image: %q", r.Problems)
	}
	return b
}

func enginePlan(t testing.TB, id string) *isolation.Plan {
	p := basePlan()
	p.RunID = id + "-" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	p.Spec.Annotations[isolation.AnnotationRunID] = p.RunID
	p.HostDir = t.TempDir()
	p.Spec.Process.Cwd = "/tmp"
	p.Limits.KillGrace = 500 * time.Millisecond
	return p
}

type run struct {
	exit           isolation.Exit
	err            error
	stdout, stderr string
}

func execIn(t testing.TB, sb isolation.Sandbox, ctx context.Context, stdin string, args ...string) run {
	t.Helper()
	var out, errb bytes.Buffer
	stdio := isolation.Stdio{Stdout: &out, Stderr: &errb}
	if stdin != "" {
		stdio.Stdin = strings.NewReader(stdin)
	}
	ex, err := sb.Exec(ctx, isolation.Command{Name: "t", Args: args, Env: []string{"PATH=/usr/bin:/bin", "HOME=/tmp"}, Cwd: "/tmp"}, stdio)
	return run{ex, err, out.String(), errb.String()}
}

// assertGone checks that nothing of the run is left on the engine or host.
func assertGone(t *testing.T, b *Backend, p *isolation.Plan) {
	t.Helper()
	if _, err := b.api.ContainerInspect(context.Background(), containerName(p.RunID)); !cerrdefs.IsNotFound(err) {
		t.Errorf("container %s left behind (inspect: %v)", containerName(p.RunID), err)
	}
	if _, err := os.Stat(filepath.Join(p.HostDir, controlSocketName)); !os.IsNotExist(err) {
		t.Errorf("control socket left behind: %v", err)
	}
}

// grantDirs gives p a read-only grant at /data, holding in.txt
// ("granted\n"), and a writable one at /out, whose host directory it
// returns.
func grantDirs(t *testing.T, p *isolation.Plan) (out string) {
	t.Helper()
	data, out := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "in.txt"), []byte("granted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(out, 0o777); err != nil {
		t.Fatal(err)
	}
	p.Spec.Mounts = append(p.Spec.Mounts, []specs.Mount{
		{Destination: "/data", Type: "bind", Source: data, Options: []string{"rbind", "ro"}},
		{Destination: "/out", Type: "bind", Source: out, Options: []string{"rbind", "rw"}},
	}...)
	return out
}

// echoProxy listens on a Unix socket and answers each connection with what
// it read first, prefixed.
func echoProxy(t *testing.T) string {
	sock := filepath.Join(t.TempDir(), "egress.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64)
				n, _ := c.Read(buf)
				c.Write(append([]byte("proxy got: "), buf[:n]...))
			}()
		}
	}()
	return sock
}

// egressProbe is a Python program that sends "hello" to the egress port
// inside the sandbox and prints the answer: "proxy got: hello" through
// echoProxy.
const egressProbe = `
import socket
s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
s.sendall(b"hello")
print(s.recv(64).decode())
`

func TestEngineRun(t *testing.T) {
	b := engineBackend(t)
	ctx := context.Background()
	p := enginePlan(t, "run")
	p.Privilege = privilege.Reduced
	p.Spec.Linux = &specs.Linux{Namespaces: p.Spec.Linux.Namespaces, Resources: p.Spec.Linux.Resources, Seccomp: planner.SeccompProfile(privilege.Reduced)}
	out := grantDirs(t, p)
	if err := b.Check(ctx, p); err != nil {
		t.Fatal(err)
	}
	sb, err := b.Start(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := sb.Close(context.Background()); err != nil {
			t.Error(err)
		}
		assertGone(t, b, p)
	}()

	if r := execIn(t, sb, ctx, "from stdin", "sh", "-c", "cat; echo; echo to-stderr >&2; exit 7"); r.err != nil || r.exit.Code != 7 || r.stdout != "from stdin\n" || r.stderr != "to-stderr\n" {
		t.Errorf("stdio and exit: %+v", r)
	}
	checks := []struct {
		name string
		cmd  string
		want string
	}{
		{"user is nobody", "id -u; id -g", "65534\n65534\n"},
		{"no capabilities", "grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status | awk '{print $2}' | sort -u", "0000000000000000\n"},
		{"no_new_privs", "grep ^NoNewPrivs /proc/self/status | awk '{print $2}'", "1\n"},
		{"seccomp filter", "grep '^Seccomp:' /proc/self/status | awk '{print $2}'", "2\n"},
		{"read-only root", "touch /x 2>/dev/null && echo writable || echo ro", "ro\n"},
		{"tmp writable and sized", "touch /tmp/x && df -B1 --output=size /tmp | tail -1 | tr -d ' '", "67108864\n"},
		{"tmp nosuid nodev", "grep ' /tmp ' /proc/mounts | grep -o 'nosuid,nodev' ", "nosuid,nodev\n"},
		{"only loopback", "awk 'NR>2{print $1}' /proc/net/dev", "lo:\n"},
		{"no egress", "curl -s -m 2 http://192.0.2.1/ >/dev/null 2>&1; echo $?", "7\n"},
		{"read grant", "cat /data/in.txt; touch /data/y 2>/dev/null || echo ro", "granted\nro\n"},
		{"write grant", "echo out > /out/f && cat /out/f", "out\n"},
		// The plan's 128, and the init's spare threads above it.
		{"pids limit", "cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max", fmt.Sprintf("%d\n", 128+sbinit.SpareThreads)},
		{"memory without swap", "cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes 2>/dev/null | sort -u || cat /sys/fs/cgroup/memory.max", "268435456\n"},
		{"reduced seccomp: no System V IPC, no ptrace", `perl -e 'print syscall(68, 0, 0) == -1 ? "msgget blocked\n" : "msgget ok\n"; print syscall(101, 0, 0, 0, 0) == -1 ? "ptrace blocked\n" : "ptrace ok\n"'`, "msgget blocked\nptrace blocked\n"},
		{"reduced seccomp: unix and inet sockets only", `python3 -c "
import socket
for f in (socket.AF_UNIX, socket.AF_INET, socket.AF_PACKET, 40):
    try: socket.socket(f, socket.SOCK_DGRAM).close(); print(f, 'ok')
    except OSError: print(f, 'refused')"`, "1 ok\n2 ok\n17 refused\n40 refused\n"},
		{"init is pid 1", "cat /proc/1/cmdline | tr '\\0' ' '", InitPath + " __sandboxed-init --connect=" + ControlSocket + " "},
	}
	for _, c := range checks {
		r := execIn(t, sb, ctx, "", "bash", "-c", c.cmd)
		if r.err != nil || r.stdout != c.want {
			t.Errorf("%s: %q: got %q (exit %d, err %v, stderr %q), want %q", c.name, c.cmd, r.stdout, r.exit.Code, r.err, r.stderr, c.want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, "f")); err != nil || string(b) != "out\n" {
		t.Errorf("write grant did not reach the host: %q %v", b, err)
	}

	st, err := sb.Stats(ctx)
	if err != nil || st.PeakMemoryBytes <= 0 || st.OOMKilled {
		t.Errorf("Stats = %+v, %v: want peak memory and no OOM", st, err)
	}
}

func TestEngineSameAsUserAndTimeout(t *testing.T) {
	b := engineBackend(t)
	p := enginePlan(t, "timeout")
	// Root as the invoking user, with the planner's profile and paths:
	// still nothing writable outside /tmp, no ptrace.
	p.Spec.Process.User = specs.User{UID: 0, GID: 0}
	p.Spec.Linux = &specs.Linux{Namespaces: p.Spec.Linux.Namespaces, Resources: p.Spec.Linux.Resources,
		Seccomp:       planner.SeccompProfile(privilege.SameAsUser),
		MaskedPaths:   planner.MaskedPaths,
		ReadonlyPaths: planner.ReadonlyPaths,
	}
	// Root's same-as-user tool is never host uid 0: where the engine does
	// not remap user namespaces a spec at uid 0 is refused, and the
	// planner gives it the id reserved for sandboxed, which it runs as.
	if os.Geteuid() == 0 {
		err := b.Check(context.Background(), p)
		if remapped := b.remaps(); !remapped && !errors.Is(err, isolation.ErrUnsupported) {
			t.Fatalf("Check of root's same-as-user tool at uid 0 = %v, want a refusal", err)
		} else if !remapped {
			id, err := process.ReservedID()
			if err != nil {
				t.Fatal(err)
			}
			p.Spec.Process.User = specs.User{UID: uint32(id), GID: uint32(id)}
		}
	}
	sb := startEngine(t, b, p)
	r := execIn(t, sb, context.Background(), "", "id", "-u")
	if want := strconv.Itoa(int(p.Spec.Process.User.UID)) + "\n"; r.stdout != want {
		t.Errorf("same-as-user uid %q, want %q", r.stdout, want)
	}
	for _, c := range []struct{ cmd, want string }{
		{"touch /dev/x 2>/dev/null && echo writable || echo ro", "ro\n"},
		{"touch /x 2>/dev/null && echo writable || echo ro", "ro\n"},
		{`perl -e '$r = syscall(101, 0, 0, 0, 0); print $r == -1 ? "blocked\n" : "ok\n"'`, "blocked\n"},
		{"unshare -U true 2>/dev/null && echo unshared || echo refused", "refused\n"},
		{"grep -c . /proc/kcore 2>/dev/null || echo masked", "masked\n"},
	} {
		if r := execIn(t, sb, context.Background(), "", "bash", "-c", c.cmd); r.stdout != c.want {
			t.Errorf("%s: %q, want %q (stderr %q)", c.cmd, r.stdout, c.want, r.stderr)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	r = execIn(t, sb, ctx, "", "sleep", "30")
	if !errors.Is(r.err, context.DeadlineExceeded) || r.exit.Signal == 0 || time.Since(start) > 10*time.Second {
		t.Errorf("timed-out exec: %+v after %s", r, time.Since(start))
	}
}

func TestEngineOOM(t *testing.T) {
	b := engineBackend(t)
	p := enginePlan(t, "oom")
	mem := int64(32 << 20)
	p.Limits.MemoryBytes, p.Spec.Linux.Resources.Memory = mem, &specs.LinuxMemory{Limit: &mem, Swap: &mem}
	sb := startEngine(t, b, p)
	r := execIn(t, sb, context.Background(), "", "python3", "-c", "b = bytearray(200 << 20); print(len(b))")
	if r.exit.Code != 137 {
		t.Errorf("allocation over the limit: %+v, want killed (137)", r)
	}
	var st isolation.Stats
	var err error
	for i := 0; i < 20; i++ { // the engine records the OOM event asynchronously
		if st, err = sb.Stats(context.Background()); err != nil || st.OOMKilled {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || !st.OOMKilled || st.PeakMemoryBytes < 16<<20 {
		t.Errorf("Stats = %+v, %v: want OOMKilled and the peak near the limit", st, err)
	}
}

func TestEngineKillAndGC(t *testing.T) {
	b := engineBackend(t)
	ctx := context.Background()
	p := enginePlan(t, "kill")
	sb, err := b.Start(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan run, 1)
	go func() { done <- execIn(t, sb, ctx, "", "sh", "-c", "trap '' TERM; sleep 60") }()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	if err := sb.Kill(ctx, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.exit.Code == 0 && r.err == nil {
			t.Errorf("killed exec: %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Exec did not return after Kill")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Kill took %s", d)
	}
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}
	assertGone(t, b, p)

	// A run whose controller died: its end of the control socket closed,
	// the init killed everything and exited; the container stays until GC.
	crashed := enginePlan(t, "crashed")
	sb2, err := b.Start(ctx, crashed)
	if err != nil {
		t.Fatal(err)
	}
	closedAt := time.Now()
	_ = sb2.(*sandbox).init.Close()
	for i := 0; i < 100; i++ {
		ins, err := b.api.ContainerInspect(ctx, containerName(crashed.RunID))
		if err != nil || !ins.State.Running {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the crashed run's container stopped %s after its channel closed", time.Since(closedAt))
	live := enginePlan(t, "live")
	sb3, err := b.Start(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	defer sb3.Close(ctx)
	removed, err := b.GC(ctx, func(id string) bool { return id != crashed.RunID })
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || !strings.Contains(removed[0], crashed.RunID) {
		t.Errorf("GC removed %q, want only %s", removed, crashed.RunID)
	}
	if _, err := b.api.ContainerInspect(ctx, containerName(live.RunID)); err != nil {
		t.Errorf("GC removed a live run: %v", err)
	}
	// Without liveness answers, a running container is spared.
	if removed, err := b.GC(ctx, nil); err != nil || len(removed) != 0 {
		t.Errorf("GC without keep of a running container: %q, %v", removed, err)
	}
	_ = sb2.Close(ctx) // already gone: still fine
}

func TestEngineImageMissing(t *testing.T) {
	b := engineBackend(t)
	p := enginePlan(t, "noimage")
	p.Image = "sandboxed-no-such-image:never"
	_, err := b.Start(context.Background(), p)
	if !errors.Is(err, isolation.ErrUnsupported) || !errors.Is(err, images.ErrNotFound) || !strings.Contains(err.Error(), images.BuildCommand) {
		t.Fatalf("Start with a missing image: %v", err)
	}
	assertGone(t, b, p)
}

// BenchmarkEngineRun is one whole run: start, `true`, close. Compare with
// `docker run --rm --network none sandboxed-runner:latest true`.
func BenchmarkEngineRun(b *testing.B) {
	be := engineBackend(b)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		p := enginePlan(b, "bench")
		sb, err := be.Start(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		execTrueAndClose(b, sb)
	}
}

// TestEngineEgressRelay checks the egress path of the container tier: the
// init's loopback listener reaches the host's proxy socket, bind-mounted
// at isolation.SandboxSocket, and nothing else is reachable.
func TestEngineEgressRelay(t *testing.T) {
	b := engineBackend(t)
	p := enginePlan(t, "egress")
	p.Privilege = privilege.Reduced
	p.Egress = &isolation.Egress{ProxySocket: echoProxy(t), ProxyPort: 3128}
	sb := startEngine(t, b, p)
	if r := execIn(t, sb, context.Background(), "", "python3", "-c", egressProbe); r.err != nil || r.stdout != "proxy got: hello\n" {
		t.Errorf("egress relay: %+v", r)
	}
}

// TestEngineInitDies: an init that exits before it connects fails Start
// fast (not at the start timeout) and leaves nothing behind.
func TestEngineInitDies(t *testing.T) {
	engineBackend(t)
	bin := filepath.Join(t.TempDir(), "exit")
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/exit")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	b, err := New(WithInitBinary(bin))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p := enginePlan(t, "dies")
	start := time.Now()
	_, err = b.Start(context.Background(), p)
	if !errors.Is(err, isolation.ErrUnsupported) || !strings.Contains(err.Error(), "code 3") {
		t.Errorf("Start with a dying init: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Start took %s to see the init die", d)
	}
	assertGone(t, b, p)
}

func TestEnginePidsLimit(t *testing.T) {
	b := engineBackend(t)
	p := enginePlan(t, "pids")
	setPids(p, 16)
	sb := startEngine(t, b, p)
	r := execIn(t, sb, context.Background(), "", "python3", "-c", `
import os, time
kids = []
try:
    for _ in range(40):
        pid = os.fork()
        if pid == 0:
            time.sleep(1)
            os._exit(0)
        kids.append(pid)
except OSError as e:
    print("fork failed:", e.errno)
for k in kids:
    os.waitpid(k, 0)
`)
	st, err := sb.Stats(context.Background())
	if err != nil || !st.PidsLimitHit || !strings.Contains(r.stdout, "fork failed: 11") {
		t.Errorf("Stats = %+v, %v after %+v: want the pids limit hit", st, err, r)
	}
}

// startEngine starts p on b; when the test ends the sandbox is closed and
// its container must be gone.
func startEngine(t *testing.T, b *Backend, p *isolation.Plan) isolation.Sandbox {
	t.Helper()
	sb, err := b.Start(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sb.Close(context.Background())
		assertGone(t, b, p)
	})
	return sb
}
