package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
)

// The units of contrib/systemd, as a user installs them, with systemd
// as the init on cgroup v2 (the test VM of .ci/vm; the CI host, whose
// init is not systemd, leaves these tests to it: .ci/run).

// unitSet is one installed copy of the units: root's (system/) or, in
// the rootless mode, the user's (user/) in that user's manager.
type unitSet struct {
	user   *runnerUser // nil: the system units
	dir    string      // where the unit files were put
	socket string      // the socket the socket unit listens on
	login  []string    // the environment of a login of the caller
	since  time.Time   // when the test began: the journal is read from here
}

// needSystemd stops a test that needs systemd as the init on cgroup v2
// and, in the rootless mode, the user's systemd manager.
func needSystemd(t *testing.T) {
	t.Helper()
	var err error
	comm, _ := os.ReadFile("/proc/1/comm")
	switch {
	case strings.TrimSpace(string(comm)) != "systemd":
		err = fmt.Errorf("PID 1 is %q, not systemd", strings.TrimSpace(string(comm)))
	case !cgroupV2():
		err = errors.New("the cgroup hierarchy is not cgroup v2 (no /sys/fs/cgroup/cgroup.controllers)")
	case env.runner != nil:
		unit := fmt.Sprintf("user@%d.service", env.runner.uid)
		if out, serr := exec.Command("systemctl", "is-active", unit).CombinedOutput(); serr != nil {
			err = fmt.Errorf("the systemd manager of %s (%s) is %s", env.runner.name, unit, strings.TrimSpace(string(out)))
		}
	}
	testenv.Need(t, "systemd as the init on cgroup v2, with a user manager for the rootless mode's user (the test VM: make vm-test)", err)
}

// installUnits installs the units for whoever runs sandboxed in this mode
// (root: the system units in /run/systemd/system; rootless: the user's
// in its manager's $XDG_RUNTIME_DIR/systemd/user), exactly as shipped but
// with ExecStart naming the binary under test. They are stopped and
// removed when the test ends.
func installUnits(t *testing.T) *unitSet {
	t.Helper()
	u := &unitSet{user: env.runner, since: time.Now().Add(-time.Second)}
	kind := "system"
	u.login = []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "HOME=/root", "USER=root", "LOGNAME=root",
		// As pam_systemd sets it in a root login.
		"XDG_RUNTIME_DIR=/run/user/0"}
	u.dir = "/run/systemd/system"
	u.socket = "/run/sandboxed/serve.sock"
	if r := u.user; r != nil {
		kind = "user"
		pw, err := user.Lookup(r.name)
		if err != nil {
			t.Fatal(err)
		}
		rt := fmt.Sprintf("/run/user/%d", r.uid)
		u.login = []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "HOME=" + pw.HomeDir, "USER=" + r.name, "LOGNAME=" + r.name,
			"XDG_RUNTIME_DIR=" + rt, "DBUS_SESSION_BUS_ADDRESS=unix:path=" + rt + "/bus"}
		u.dir = filepath.Join(rt, "systemd", "user")
		u.socket = filepath.Join(rt, "sandboxed", "serve.sock")
	}
	for _, name := range []string{"sandboxed.socket", "sandboxed.service"} {
		p := filepath.Join(u.dir, name)
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s exists already: the test installs its own units there and removes them", p)
		}
	}
	made := !exists(u.dir)
	must(t, os.MkdirAll(u.dir, 0o755))
	t.Cleanup(func() {
		// Whatever happened: stopped, removed, forgotten.
		u.systemctl(t, "stop", "sandboxed.socket", "sandboxed.service")
		os.Remove(filepath.Join(u.dir, "sandboxed.socket"))
		os.Remove(filepath.Join(u.dir, "sandboxed.service"))
		if made {
			os.Remove(u.dir)
		}
		u.systemctl(t, "daemon-reload")
		u.systemctl(t, "reset-failed", "sandboxed.socket", "sandboxed.service")
	})
	for _, name := range []string{"sandboxed.socket", "sandboxed.service"} {
		b, err := os.ReadFile(filepath.Join("..", "contrib", "systemd", kind, name))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if name == "sandboxed.service" {
			const shipped = "ExecStart=/usr/local/bin/sandboxed "
			if !strings.Contains(text, shipped) {
				t.Fatalf("contrib/systemd/%s/%s has no %q line to point at the binary under test:\n%s", kind, name, shipped, text)
			}
			text = strings.Replace(text, shipped, "ExecStart="+env.bin+" ", 1)
		}
		p := filepath.Join(u.dir, name)
		must(t, os.WriteFile(p, []byte(text), 0o644))
	}
	if r := u.user; r != nil && made {
		must(t, chownTree(filepath.Join(u.dir), int(r.uid), int(r.gid)))
	}
	u.must(t, "daemon-reload")
	for _, name := range []string{"sandboxed.socket", "sandboxed.service"} {
		if got := u.show(t, name, "FragmentPath"); got != filepath.Join(u.dir, name) {
			t.Fatalf("systemd loads %s from %q, not from the test's %s (another copy is installed)", name, got, u.dir)
		}
	}
	return u
}

// systemctl runs systemctl in the units' manager and returns its output.
func (u *unitSet) systemctl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("systemctl", args...)
	if u.user != nil {
		cmd = exec.Command("systemctl", append([]string{"--user"}, args...)...)
		asRunner(cmd)
		cmd.Env = u.login
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (u *unitSet) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := u.systemctl(t, args...)
	if err != nil {
		t.Fatalf("systemctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// show is one property of a unit.
func (u *unitSet) show(t *testing.T, unit, prop string) string {
	t.Helper()
	return u.must(t, "show", "--property", prop, "--value", unit)
}

// journal is what the server wrote (its stderr, in the journal) since
// the test began.
func (u *unitSet) journal(t *testing.T) string {
	t.Helper()
	args := []string{"--no-pager", "-o", "cat", "--since", fmt.Sprintf("@%d", u.since.Unix())}
	if u.user != nil {
		args = append(args, "_SYSTEMD_USER_UNIT=sandboxed.service", fmt.Sprintf("_UID=%d", u.user.uid))
	} else {
		args = append(args, "_SYSTEMD_UNIT=sandboxed.service")
	}
	out, err := exec.Command("journalctl", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("journalctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// journalHas waits a little for the journal to hold want (journald
// writes what the server printed a moment later).
func (u *unitSet) journalHas(t *testing.T, want string) (string, bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		j := u.journal(t)
		if strings.Contains(j, want) || time.Now().After(deadline) {
			return j, strings.Contains(j, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// run starts `sandboxed run --json ARGS...` as the caller logged in
// would: with a login's environment (no SANDBOXED_* variable: the
// defaults), rootless in a scope of the user's manager.
func (u *unitSet) run(dir string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	argv := append([]string{env.bin, "run", "--json"}, args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	if u.user != nil {
		cmd = exec.Command("systemd-run", append([]string{"--user", "--scope", "--quiet", "--collect", "--"}, argv...)...)
		asRunner(cmd)
	}
	cmd.Env = u.login
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	return cmd, &out, &errb
}

// serverProcs are the processes of the binary under test.
func serverProcs() []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, p := range procs {
		if target, _ := os.Readlink(p); target == env.bin && !exited(filepath.Dir(p)) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			pids = append(pids, pid)
		}
	}
	return pids
}

// procCgroup is the cgroup v2 path of process pid.
func procCgroup(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	t.Fatalf("no cgroup v2 line in /proc/%d/cgroup: %q", pid, b)
	return ""
}

// delegateAttrs are the attributes systemd marks a delegated cgroup
// with, as found on dir.
func delegateAttrs(dir string) string {
	var out []string
	for _, a := range []string{"user.delegate", "trusted.delegate"} {
		buf := make([]byte, 8)
		n, err := unix.Getxattr(dir, a, buf)
		if err != nil {
			out = append(out, a+": "+err.Error())
		} else {
			out = append(out, fmt.Sprintf("%s=%q", a, buf[:n]))
		}
	}
	return strings.Join(out, ", ")
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// TestSystemdUnits installs the shipped units of whoever runs sandboxed
// (root: the system units and /run/sandboxed/serve.sock; the rootless
// mode: the user units in the user's manager and
// $XDG_RUNTIME_DIR/sandboxed/serve.sock) and starts the socket alone: no
// server runs until the first `sandboxed run`, which systemd's socket
// activation starts; the run goes through it (the server's journal
// records the call), in a cgroup of its own under the service's
// delegated cgroup, with the tool's memory and pids limits. Stopping the
// units leaves no process, cgroup, socket or temp dir.
func TestSystemdUnits(t *testing.T) {
	needSystemd(t)
	begin(t)
	u := installUnits(t)
	u.must(t, "start", "sandboxed.socket")
	fi, err := os.Lstat(u.socket)
	if err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("sandboxed.socket is started but %s is not a socket: %v", u.socket, err)
	}
	// The socket is its owner's alone: only the server's uid may connect.
	owner := uint32(0)
	if u.user != nil {
		owner = u.user.uid
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o600 || st.Uid != owner {
		t.Errorf("%s: mode %v, owner %d; want 0600, owner %d", u.socket, fi.Mode().Perm(), st.Uid, owner)
	}
	if st := u.show(t, "sandboxed.service", "ActiveState"); st != "inactive" {
		t.Fatalf("sandboxed.service is %s before any run, want inactive (started on the first connection)", st)
	}
	if pids := serverProcs(); len(pids) > 0 {
		t.Fatalf("a sandboxed process runs before any run: %v", pids)
	}

	dir := workdir(t, nil)
	tool := toolYAML(t, dir, "process", "unitcheck", "echo start\nsleep 6173 || true\necho done", nil,
		"sandboxed:\n  pids-limit: 64\nresources:\n  max-memory: 64MB\n  timeout: 180000\n")
	cmd, stdout, stderr := u.run(dir, tool)
	must(t, cmd.Start())
	waited := false
	defer func() {
		if !waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	sleeper := waitForProcess(t, "sleep 6173")

	// The server was started by the connection, on the socket systemd
	// passed it, and runs in the supervisor leaf of its unit's cgroup.
	if st := u.show(t, "sandboxed.service", "ActiveState"); st != "active" {
		t.Fatalf("sandboxed.service is %s while a run is in progress, want active (socket activation)", st)
	}
	unitCg := u.show(t, "sandboxed.service", "ControlGroup")
	if unitCg == "" {
		t.Fatal("sandboxed.service has no control group")
	}
	if j, ok := u.journalHas(t, "listening on "+u.socket+" (from systemd)"); !ok {
		t.Fatalf("the server does not say it listens on the socket systemd passed (%s):\n%s", u.socket, j)
	}
	mainPID, _ := strconv.Atoi(u.show(t, "sandboxed.service", "MainPID"))
	if mainPID <= 0 {
		t.Fatal("sandboxed.service has no main process")
	}
	if cg := procCgroup(t, mainPID); cg != unitCg+"/supervisor" {
		t.Errorf("the server (pid %d) is in %s, want %s/supervisor (%s's delegate attributes: %s)",
			mainPID, cg, unitCg, unitCg, delegateAttrs(filepath.Join("/sys/fs/cgroup", unitCg)))
	}

	// The run's cgroup: a child of the unit's, with the tool's limits.
	cg := procCgroup(t, sleeper)
	rest, ok := strings.CutPrefix(cg, unitCg+"/")
	if !ok {
		t.Fatalf("the tool's process is in %s, not under the service's delegated cgroup %s\nserver: %s", cg, unitCg, u.journal(t))
	}
	runCg := filepath.Join("/sys/fs/cgroup", unitCg, strings.Split(rest, "/")[0])
	if filepath.Base(runCg) == "supervisor" {
		t.Fatalf("the tool's process is in the server's own cgroup %s", cg)
	}
	// The tool's pids limit, and the init's spare threads above it.
	pidsMax := strconv.Itoa(64 + sbinit.SpareThreads)
	for file, want := range map[string]string{"memory.max": "67108864", "memory.swap.max": "0", "pids.max": pidsMax} {
		b, err := os.ReadFile(filepath.Join(runCg, file))
		if errors.Is(err, os.ErrNotExist) && file == "memory.swap.max" {
			continue // a kernel that does not account swap
		}
		if err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("%s/%s = %q (%v), want %s", runCg, file, strings.TrimSpace(string(b)), err, want)
		}
	}
	t.Logf("server %d in %s; the tool's process in %s; %s", mainPID, procCgroup(t, mainPID), cg,
		delegateAttrs(filepath.Join("/sys/fs/cgroup", unitCg)))

	// The tool ends; its result is the run's, and the server says it
	// answered the call.
	syscall.Kill(sleeper, syscall.SIGKILL)
	err = cmd.Wait()
	waited = true
	var r result
	if jerr := json.Unmarshal(stdout.Bytes(), &r); jerr != nil || err != nil || r.Status != "ok" || !strings.Contains(r.Stdout, "done") {
		t.Fatalf("run: %v; status %q\nstdout: %s\nstderr: %s\nserver: %s", err, r.Status, stdout, stderr, u.journal(t))
	}
	// The server logs the call's arguments as it took them ("call --json
	// -- TOOL: exit 0" from the one binary's client): the tool's path and
	// the exit are what say it answered this call.
	if j, ok := u.journalHas(t, " "+tool+": exit 0"); !ok || !strings.Contains(j, "serve: call --json") {
		t.Fatalf("the run did not go through the server (its journal has no call of %s):\n%s\nthe run's stderr: %s", tool, j, stderr)
	}

	// Stopped, the units leave nothing: no process (the leak check), no
	// cgroup, no socket, nothing in the runtime directory.
	u.must(t, "stop", "sandboxed.socket", "sandboxed.service")
	if pids := serverProcs(); len(pids) > 0 {
		t.Errorf("sandboxed processes after the units stopped: %v", pids)
	}
	deadline := time.Now().Add(10 * time.Second)
	for exists(filepath.Join("/sys/fs/cgroup", unitCg)) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if exists(filepath.Join("/sys/fs/cgroup", unitCg)) {
		left, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", unitCg, "*", "cgroup.procs"))
		t.Errorf("the service's cgroup %s is left after the units stopped (children: %v)", unitCg, left)
	}
	if exists(u.socket) {
		t.Errorf("the socket %s is left after the units stopped", u.socket)
	}
	if ents, err := os.ReadDir(filepath.Dir(u.socket)); err == nil {
		for _, e := range ents {
			t.Errorf("left in the runtime directory after the units stopped: %s", filepath.Join(filepath.Dir(u.socket), e.Name()))
		}
	}
}
