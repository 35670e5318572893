package process_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

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
}

func init() {
	if os.Getenv(probeEnv) == "syscalls" {
		syscallProbe()
		os.Exit(0)
	}
}

func TestSeccompInSandbox(t *testing.T) {
	needRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, _ = filepath.EvalSymlinks(exe)
	want := map[string]map[string]string{
		sandbox.PrivSameAsUser: {
			"clone_newns": "EPERM", "clone_newuser": "EPERM", "clone3": "ENOSYS", "unshare": "EPERM",
			"keyctl": "EPERM", "io_uring_setup": "EPERM", "bpf": "EPERM", "ptrace": "EPERM",
			"personality_bad": "EPERM", "personality_query": "ok", "socket_packet": "EPERM", "socket_unix": "ok",
		},
		sandbox.PrivReduced: {
			"clone_newns": "EPERM", "clone3": "ENOSYS", "socket_packet": "EAFNOSUPPORT", "socket_unix": "ok",
			"chroot": "EPERM",
		},
	}
	for priv, checks := range want {
		t.Run(priv, func(t *testing.T) {
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
