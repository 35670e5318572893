package process_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/internal/testenv"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// netProbe prints name=ERRNO for the network operations Landlock and the
// seccomp filter decide: TCP bind, TCP connect to the relay's port and to
// another, a Multipath TCP socket, and Go's own listener (which asks for
// Multipath TCP first).
func netProbe() {
	tcp := func(name string, port int, bind bool) {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			sa := &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
			if bind {
				err = unix.Bind(fd, sa)
			} else {
				err = unix.Connect(fd, sa)
			}
			unix.Close(fd)
		}
		fmt.Printf("%s=%s\n", name, errnoName(err))
	}
	tcp("bind_any", 0, true)
	tcp("bind_port", 4000, true)
	tcp("connect_relay", 3128, false)
	tcp("connect_other", 9, false)
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP)
	if err == nil {
		unix.Close(fd)
	}
	fmt.Printf("mptcp=%s\n", errnoName(err))
	fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_MPTCP)
	if err == nil {
		unix.Close(fd)
	}
	fmt.Printf("mptcp6=%s\n", errnoName(err))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err == nil {
		ln.Close()
	}
	fmt.Printf("go_listen=%s\n", errnoName(err))
}

func init() {
	if os.Getenv(probeEnv) == "net" {
		netProbe()
		os.Exit(0)
	}
}

// proxySocket listens on a Unix socket standing in for the egress proxy:
// it accepts and closes.
func proxySocket(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "egress.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	os.Chmod(sock, 0o666)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return sock
}

// TestLandlockSecondWall gives a sandbox a bind that the plan holds
// read-only but that is mounted writable (a mount mistake no plan can
// make): with Landlock a write there fails; without it (the positive
// control) the same write lands on the host. The network walls are
// checked alongside: no TCP bind, connect only to the relay's ports, no
// Multipath TCP.
func TestLandlockSecondWall(t *testing.T) {
	needRoot(t)
	if abi := sbinit.LandlockABI(); abi < sbinit.LandlockFullABI {
		testenv.Need(t, fmt.Sprintf("Landlock ABI %d", sbinit.LandlockFullABI), fmt.Errorf("this kernel enforces ABI %d", abi))
	}
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	for _, landlock := range []bool{true, false} {
		t.Run(fmt.Sprintf("landlock=%v", landlock), func(t *testing.T) {
			dir := t.TempDir()
			os.Chmod(dir, 0o777)
			out := t.TempDir()
			os.Chmod(out, 0o777)
			p := testPlan(t, privilege.SameAsUser, sandbox.WithReadBind(dir, "/work"), sandbox.WithWriteBind(out, "/out"),
				sandbox.WithReadBind(filepath.Dir(exe), "/probe"))
			p.Egress = &isolation.Egress{ProxySocket: proxySocket(t), ProxyPort: 3128}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			sb, err := process.StartEdited(ctx, p, func(cfg *sbinit.Config) {
				for i, m := range cfg.Setup.Mounts {
					if m.Destination == "/work" {
						cfg.Setup.Mounts[i].ReadOnly = false // the mistake
					}
				}
				if !landlock {
					cfg.Landlock = nil
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if err := sb.Close(ctx); err != nil {
					t.Error(err)
				}
				assertNothingLeft(t, p.RunID)
			})
			wantABI := 0
			if landlock {
				wantABI = sbinit.LandlockABI()
			}
			if got := sb.(interface{ Landlock() int }).Landlock(); got != wantABI {
				t.Errorf("Landlock() = %d, want %d", got, wantABI)
			}

			_, errs, exit := run(t, sb, "echo x > /work/mistake")
			_, statErr := os.Stat(filepath.Join(dir, "mistake"))
			if landlock {
				if exit.Code == 0 || statErr == nil || !strings.Contains(errs, "Permission denied") {
					t.Errorf("write through the writable mount: exit %+v stderr %q, on the host: %v", exit, errs, statErr)
				}
			} else if exit.Code != 0 || statErr != nil {
				t.Errorf("positive control: the mount is writable, yet: exit %+v stderr %q, on the host: %v", exit, errs, statErr)
			}
			// What the sandbox needs stays usable.
			for name, script := range map[string]string{
				"write grant": "echo y > /out/f && mkdir /out/d && mv /out/f /out/d/f && rm -r /out/d",
				"tmp":         "echo x > /tmp/x && mkdir /tmp/d && mv /tmp/x /tmp/d/x && cp /bin/true /tmp/t && /tmp/t",
				"dev":         "echo x > /dev/null && head -c1 /dev/urandom | wc -c | grep -q 1 && echo x > /dev/shm/x",
				"proc":        "cat /proc/self/status >/dev/null && echo 500 > /proc/self/oom_score_adj",
				"read root":   "cat /etc/passwd >/dev/null && ls / >/dev/null",
				// stdin is the host's /dev/null: reopened, it is the
				// sandbox's own.
				"stdin reopened": "cat /dev/stdin",
			} {
				if out, errs, exit := run(t, sb, script); exit.Code != 0 {
					t.Errorf("%s: exit %+v stdout %q stderr %q", name, exit, out, errs)
				}
			}

			stdout, errs, exit := runCmd(t, sb, []string{"/probe/" + filepath.Base(exe)}, probeEnv+"=net")
			if exit.Code != 0 {
				t.Fatalf("probe: exit %+v stderr %q", exit, errs)
			}
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
				if k, v, ok := strings.Cut(line, "="); ok {
					got[k] = v
				}
			}
			want := map[string]string{
				"bind_any": "EACCES", "bind_port": "EACCES", "connect_relay": "ok", "connect_other": "EACCES",
				"mptcp": "EPROTONOSUPPORT", "mptcp6": "EPROTONOSUPPORT", "go_listen": "EACCES",
			}
			if !landlock {
				// Only seccomp's refusal of Multipath TCP is left.
				want = map[string]string{
					"bind_any": "ok", "bind_port": "ok", "connect_relay": "ok", "connect_other": "ECONNREFUSED",
					"mptcp": "EPROTONOSUPPORT", "mptcp6": "EPROTONOSUPPORT", "go_listen": "ok",
				}
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: got %q, want %s", k, got[k], v)
				}
			}
		})
	}
}

// TestLandlockRequiredBelowKernel: an init asked for a higher Landlock ABI
// than the kernel has refuses to start, with the fix, and leaves nothing.
func TestLandlockRequiredBelowKernel(t *testing.T) {
	needRoot(t)
	p := testPlan(t, privilege.SameAsUser)
	_, err := process.StartEdited(context.Background(), p, func(cfg *sbinit.Config) { cfg.Landlock.MinABI = 99 })
	if err == nil || !strings.Contains(err.Error(), "requires 99") || !strings.Contains(err.Error(), "CONFIG_SECURITY_LANDLOCK") {
		t.Fatalf("err = %v", err)
	}
	assertNothingLeft(t, p.RunID)

	// This kernel has every wall: a plan that requires them runs.
	p = testPlan(t, privilege.Reduced)
	p.RequireLandlock = true
	sb := start(t, p)
	if got := sb.(interface{ Landlock() int }).Landlock(); got < sbinit.LandlockFullABI {
		t.Errorf("Landlock() = %d", got)
	}
	if out, errs, exit := run(t, sb, "echo hi"); out != "hi\n" {
		t.Errorf("exit %+v out %q err %q", exit, out, errs)
	}
}
