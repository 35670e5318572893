package sbinit

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

func TestLandlockPathAccess(t *testing.T) {
	for _, tc := range []struct {
		p    LandlockPath
		want uint64
	}{
		{LandlockPath{Path: "/"}, llRead},
		{LandlockPath{Exec: true}, llRead | llExec},
		{LandlockPath{Write: true, Exec: true}, llRead | llExec | llWrite},
		{LandlockPath{Write: true, FilesOnly: true, Dev: true}, llRead | llWriteFiles | llDev},
		// Unix is granted on the directory by applyLandlock, not here.
		{LandlockPath{Write: true, Unix: true}, llRead | llWrite},
	} {
		if got := tc.p.access(); got != tc.want {
			t.Errorf("%+v: access %#x, want %#x", tc.p, got, tc.want)
		}
	}
}

// landlockScopeProbe runs in a child of TestLandlockScopes: with the
// sandbox's ruleset (or none) it signals its parent and connects to the
// parent's abstract Unix socket, and prints how each went.
func landlockScopeProbe(mode string) {
	if mode == "landlock" {
		// Without CAP_SYS_ADMIN (which the init has in its user namespace)
		// a process may restrict itself only under no_new_privs: set it,
		// so the test runs as any user. On every thread: the ruleset is
		// applied to each.
		if err := ll.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			fmt.Println("no_new_privs:", err)
			os.Exit(1)
		}
		abi, err := applyLandlock(&Landlock{Paths: []LandlockPath{{Path: "/"}}}, nil, nil)
		if err != nil {
			fmt.Println("apply:", err)
			os.Exit(1)
		}
		fmt.Printf("abi=%d\n", abi)
	}
	fmt.Printf("signal=%s\n", errnoName(unix.Kill(os.Getppid(), 0)))
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + os.Getenv("SBINIT_ABSTRACT")})
		unix.Close(fd)
	}
	fmt.Printf("abstract=%s\n", errnoName(err))
	os.Exit(0)
}

func init() {
	if m := os.Getenv("SBINIT_LANDLOCK_PROBE"); m != "" {
		landlockScopeProbe(m)
	}
}

// TestLandlockScopes checks the IPC scopes of the init's ruleset where the
// sandbox's namespaces cannot show them: a process under the ruleset can
// neither signal a process outside it nor connect to an abstract Unix
// socket made outside it, though both share its pid and network
// namespaces; without the ruleset (the positive control) it can.
func TestLandlockScopes(t *testing.T) {
	if abi := LandlockABI(); abi < LandlockFullABI {
		testenv.Need(t, fmt.Sprintf("Landlock ABI %d (IPC scopes)", LandlockFullABI), fmt.Errorf("this kernel enforces ABI %d", abi))
	}
	abstract := "sandboxed-test-" + strconv.Itoa(os.Getpid())
	l, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for mode, want := range map[string]string{
		"landlock": fmt.Sprintf("abi=%d\nsignal=EPERM\nabstract=EPERM\n", LandlockABI()),
		"none":     "signal=ok\nabstract=ok\n",
	} {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "SBINIT_LANDLOCK_PROBE="+mode, "SBINIT_ABSTRACT="+abstract)
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != want {
			t.Errorf("%s: %v\n got %q\nwant %q", mode, err, out, want)
		}
		if strings.Contains(string(out), "apply:") {
			t.Fatal(string(out))
		}
	}
}

// errnoName is err as a probe child prints it: the errno's name (EPERM),
// else its text, "ok" when nil.
func errnoName(err error) string {
	var e unix.Errno
	if errors.As(err, &e) {
		return unix.ErrnoName(e)
	}
	if err != nil {
		return err.Error()
	}
	return "ok"
}
