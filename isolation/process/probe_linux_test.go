package process_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// probeEnv makes this test binary, run inside a sandbox, report how a few
// syscalls fail instead of running tests.
const probeEnv = "SANDBOXED_TEST_PROBE"

func errnoName(err error) string {
	var e unix.Errno
	if errors.As(err, &e) {
		return unix.ErrnoName(e)
	}
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// syscallProbe prints name=ERRNO for each probe. The arguments are chosen
// so that a syscall the filter lets through fails harmlessly with another
// errno (or succeeds without effect).
func syscallProbe() {
	try := func(name string, trap, a1, a2, a3 uintptr) {
		_, _, e := unix.RawSyscall(trap, a1, a2, a3)
		var err error
		if e != 0 {
			err = e
		}
		fmt.Printf("%s=%s\n", name, errnoName(err))
	}
	// CLONE_NEWNS|CLONE_FS is EINVAL for the kernel: EPERM means the
	// filter saw the namespace flag first.
	try("clone_newns", unix.SYS_CLONE, unix.CLONE_NEWNS|unix.CLONE_FS, 0, 0)
	try("clone_newuser", unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_FS, 0, 0)
	try("clone3", unix.SYS_CLONE3, 0, 0, 0)
	try("unshare", unix.SYS_UNSHARE, unix.CLONE_NEWNET, 0, 0)
	try("keyctl", unix.SYS_KEYCTL, 0, 0, 0)
	try("io_uring_setup", unix.SYS_IO_URING_SETUP, 0, 0, 0)
	try("bpf", unix.SYS_BPF, 0, 0, 0)
	try("ptrace", unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0)
	try("personality_bad", unix.SYS_PERSONALITY, 0x0040000, 0, 0)
	try("personality_query", unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err == nil {
		unix.Close(fd)
	}
	fmt.Printf("socket_packet=%s\n", errnoName(err))
	fd, err = unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.Close(fd)
	}
	fmt.Printf("socket_unix=%s\n", errnoName(err))
	try("chroot", unix.SYS_CHROOT, uintptr(0), 0, 0)
	// Go's os/exec (pidfd, clone3 where it wants it) must still work.
	fmt.Printf("go_exec=%s\n", errnoName(exec.Command("/bin/true").Run()))
	// So must a shell's fork and glibc's posix_spawn (clone3 -> clone).
	fmt.Printf("sh_spawn=%s\n", errnoName(exec.Command("/bin/sh", "-c", "/bin/true | /bin/cat").Run()))
}

// egressProbe talks through the init's loopback relay.
func egressProbe() {
	c, err := net.Dial("tcp", "127.0.0.1:"+os.Getenv("PROBE_PORT"))
	if err != nil {
		fmt.Println("dial:", err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Fprint(c, "ping")
	c.(*net.TCPConn).CloseWrite()
	b, _ := io.ReadAll(c)
	fmt.Printf("%s", b)
}

func init() {
	switch os.Getenv(probeEnv) {
	case "syscalls":
		syscallProbe()
		os.Exit(0)
	case "egress":
		egressProbe()
		os.Exit(0)
	}
}

func TestEgressRelay(t *testing.T) {
	needRoot(t)
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	sock := filepath.Join(t.TempDir(), "egress.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.Chmod(sock, 0o666)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(c)
			first, _ := br.Peek(1)
			if len(first) == 1 && first[0] == 0 {
				// The egress bridge's localhost preamble: 00 'L' 01 PORT.
				var pre [5]byte
				io.ReadFull(br, pre[:])
				c.Write([]byte{0})
				b, _ := io.ReadAll(br)
				fmt.Fprintf(c, "tunnel 127.0.0.1:%d:%s", int(pre[3])<<8|int(pre[4]), b)
			} else {
				b, _ := io.ReadAll(br)
				fmt.Fprintf(c, "pong:%s", b)
			}
			c.Close()
		}
	}()
	for _, priv := range []privilege.Privilege{privilege.SameAsUser, privilege.Reduced} {
		p := testPlan(t, priv, sandbox.WithReadBind(filepath.Dir(exe), "/probe"))
		p.Egress = &isolation.Egress{ProxySocket: sock, ProxyPort: 3128, LocalhostPorts: []int{8080}}
		sb := start(t, p)
		out, errs, exit := runCmd(t, sb, []string{"/probe/" + filepath.Base(exe)}, probeEnv+"=egress", "PROBE_PORT=3128")
		if exit.Code != 0 || out != "pong:ping" {
			t.Fatalf("%s: exit %+v out %q err %q", priv, exit, out, errs)
		}
		out, errs, exit = runCmd(t, sb, []string{"/probe/" + filepath.Base(exe)}, probeEnv+"=egress", "PROBE_PORT=8080")
		if exit.Code != 0 || out != "tunnel 127.0.0.1:8080:ping" {
			t.Fatalf("%s: localhost port: exit %+v out %q err %q", priv, exit, out, errs)
		}
	}
}

func TestSeccompInSandbox(t *testing.T) {
	needRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, _ = filepath.EvalSymlinks(exe)
	want := map[privilege.Privilege]map[string]string{
		privilege.SameAsUser: {
			"clone_newns": "EPERM", "clone_newuser": "EPERM", "clone3": "ENOSYS", "unshare": "EPERM",
			"keyctl": "EPERM", "io_uring_setup": "EPERM", "bpf": "EPERM", "ptrace": "EPERM",
			"personality_bad": "EPERM", "personality_query": "ok", "socket_packet": "EAFNOSUPPORT", "socket_unix": "ok",
			"go_exec": "ok", "sh_spawn": "ok",
		},
		privilege.Reduced: {
			"clone_newns": "EPERM", "clone3": "ENOSYS", "socket_packet": "EAFNOSUPPORT", "socket_unix": "ok",
			"chroot": "EPERM", "go_exec": "ok",
		},
	}
	for priv, checks := range want {
		t.Run(string(priv), func(t *testing.T) {
			sb := start(t, testPlan(t, priv, sandbox.WithReadBind(filepath.Dir(exe), "/probe")))
			out, errs, exit := runCmd(t, sb, []string{"/probe/" + filepath.Base(exe)}, probeEnv+"=syscalls")
			if exit.Code != 0 {
				t.Fatalf("probe: exit %+v stderr %q", exit, errs)
			}
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if k, v, ok := strings.Cut(line, "="); ok {
					got[k] = v
				}
			}
			for k, v := range checks {
				if got[k] != v {
					t.Errorf("%s: got %s, want %s", k, got[k], v)
				}
			}
		})
	}
}
