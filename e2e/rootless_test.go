package e2e

import (
	"bufio"
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
)

// The rootless mode: SANDBOXED_E2E_USER=NAME runs every sandboxed the
// suite starts as NAME, with a home, state, runtime and cache directory
// NAME owns, while the suite stays root to look for leaks. The host must
// delegate a cgroup to NAME: `sudo sandboxed setup --user NAME` on v1,
// which the suite runs first; on cgroup v2, NAME's systemd user manager.

func newRunner(name, root string) (*runnerUser, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if uid == 0 {
		return nil, fmt.Errorf("%s is root; the rootless mode needs an unprivileged user", name)
	}
	r := &runnerUser{name: name, uid: uint32(uid), gid: uint32(gid), home: filepath.Join(root, "home")}
	gids, _ := u.GroupIds()
	for _, g := range gids {
		if n, err := strconv.Atoi(g); err == nil {
			r.groups = append(r.groups, uint32(n))
		}
	}
	if err := os.Mkdir(r.home, 0o700); err != nil {
		return nil, err
	}
	for _, d := range []string{r.home, env.stateDir, env.runtimeDir, env.cacheHome, env.workRoot} {
		if err := os.Chown(d, uid, gid); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// cgroupV2 reports whether the host runs the unified hierarchy only.
func cgroupV2() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err == nil
}

// delegate makes sure the host delegated a cgroup to the user: on v2 its
// systemd manager does; on v1 `sandboxed setup --user` (idempotent: it
// changes nothing on a host already set up, and what it makes is the
// host's, not the suite's).
func (r *runnerUser) delegate() error {
	if cgroupV2() {
		return nil
	}
	out, err := exec.Command(env.bin, "setup", "--user", r.name).CombinedOutput()
	if err != nil {
		return fmt.Errorf("sandboxed setup --user %s: %v\n%s", r.name, err, out)
	}
	return nil
}

// chownTree gives dir and everything in it to uid:gid.
func chownTree(dir string, uid, gid int) error {
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// procIDs reads the real, effective, saved and filesystem ids of a
// "Uid:" or "Gid:" line of /proc/PID/status.
func procIDs(pid int, key string) ([]int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			var ids []int
			for _, f := range strings.Fields(rest) {
				n, err := strconv.Atoi(f)
				if err != nil {
					return nil, err
				}
				ids = append(ids, n)
			}
			return ids, nil
		}
	}
	return nil, fmt.Errorf("no %s in /proc/%d/status", key, pid)
}

// TestToolNeverRunsAsHostRoot reads, from the host, the ids of a tool's
// process while it runs: none is 0, whoever runs sandboxed (as root with
// no invoking user, as the suite does, the tool is root only inside its
// user namespace). A file it writes in a write grant belongs on the host
// to the invoking user: root, or the rootless mode's user.
func TestToolNeverRunsAsHostRoot(t *testing.T) {
	begin(t)
	dir := workdir(t, map[string]string{"out/.keep": ""})
	tool := toolYAML(t, dir, "process", "whoami", `
echo "INSIDE $(id -u)"
echo written > out/by-tool.txt && echo WROTE
sleep 4747`, []string{"filesystem:write:./out"}, "timeout: 60000\n")
	cmd := command("run", "--json", tool)
	cmd.Dir = dir
	var stdout strings.Builder
	cmd.Stdout = &stdout
	must(t, cmd.Start())
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	pid := waitForProcess(t, "sleep 4747")
	for _, key := range []string{"Uid", "Gid"} {
		ids, err := procIDs(pid, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) < 3 {
			t.Fatalf("%s ids %v", key, ids)
		}
		for i, id := range ids {
			if id == 0 {
				t.Errorf("the tool's %s id #%d on the host is 0: %v", key, i, ids)
			}
		}
		t.Logf("tool's host %s ids: %v", key, ids)
	}
	// The positive control: the grant was written, and belongs on the host
	// to whom invoked sandboxed.
	b, err := os.ReadFile(filepath.Join(dir, "out/by-tool.txt"))
	if err != nil || string(b) != "written\n" {
		t.Fatalf("the granted write did not happen: %q %v", b, err)
	}
	var st syscall.Stat_t
	must(t, syscall.Stat(filepath.Join(dir, "out/by-tool.txt"), &st))
	wantUID, wantGID := uint32(0), uint32(0)
	if r := env.runner; r != nil {
		wantUID, wantGID = r.uid, r.gid
	}
	if st.Uid != wantUID || st.Gid != wantGID {
		t.Errorf("the tool's file belongs to %d:%d on the host, want %d:%d (the invoking user)", st.Uid, st.Gid, wantUID, wantGID)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	if err := cmd.Wait(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	if !strings.Contains(stdout.String(), "INSIDE ") || !strings.Contains(stdout.String(), "WROTE") {
		t.Errorf("the tool did not run as expected: %s", stdout.String())
	}
}

// waitForProcess returns the pid of the process whose command line is
// exactly cmdline, waiting up to a minute for it.
func waitForProcess(t *testing.T, cmdline string) int {
	t.Helper()
	want := strings.ReplaceAll(cmdline, " ", "\x00") + "\x00"
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			if b, err := os.ReadFile(p); err == nil && string(b) == want {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
				return pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no process %q within a minute", cmdline)
	return 0
}

// TestRootlessLimitWithoutDelegationIsRefused runs sandboxed as nobody,
// for whom no cgroup was delegated: a process-tier run (which always has
// a memory limit) is refused with the reason and the fix, and never runs.
func TestRootlessLimitWithoutDelegationIsRefused(t *testing.T) {
	begin(t)
	home := t.TempDir()
	for _, d := range []string{"state", "run", "cache"} {
		must(t, os.Mkdir(filepath.Join(home, d), 0o700))
	}
	must(t, os.Chmod(home, 0o755))
	must(t, chownTree(home, 65534, 65534))
	dir := workdir(t, nil)
	must(t, chownTree(dir, 65534, 65534))
	tool := toolYAML(t, dir, "process", "limited", `echo RAN`, nil, "resources:\n  max-memory: 64MB\n")
	must(t, os.Chown(tool, 65534, 65534))
	cmd := exec.Command(env.bin, "run", "--json", tool)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "USER=nobody", "LOGNAME=nobody",
		"SANDBOXED_STATE_DIR="+filepath.Join(home, "state"), "SANDBOXED_RUNTIME_DIR="+filepath.Join(home, "run"),
		"XDG_CACHE_HOME="+filepath.Join(home, "cache"), "XDG_RUNTIME_DIR=", "DBUS_SESSION_BUS_ADDRESS=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if code != 125 || strings.Contains(s, "RAN") {
		t.Fatalf("exit %d, want 125 (refused):\n%s", code, s)
	}
	if !strings.Contains(s, "delegated") || !(strings.Contains(s, "sudo sandboxed setup --user") || strings.Contains(s, "systemd user manager")) {
		t.Errorf("the refusal does not say what is missing and how to fix it:\n%s", s)
	}
}

// TestToolCannotPlantSetuidFile has a tool try every way a shell has to
// leave a set-user-ID or set-group-ID file in its write grant (chmod,
// chmod g+s, a file created with the bits by open): as root with no
// invoking user, such a file belongs to root on the host, and a setuid
// copy of a shell there is a root shell for anyone who can reach it. The
// positive control: the copy is there, and an ordinary chmod worked.
func TestToolCannotPlantSetuidFile(t *testing.T) {
	begin(t)
	dir := workdir(t, map[string]string{"out/.keep": ""})
	tool := toolYAML(t, dir, "process", "plant", `
cp /bin/sh out/sh && echo COPIED
chmod 0700 out/sh && echo CHMODDED
chmod 4755 out/sh; chmod 2755 out/sh; chmod u+s,g+s out/sh
perl -e 'use Fcntl; sysopen(F, "out/created", O_CREAT|O_WRONLY, 06755) or exit 0; print F "x"'
true`, []string{"filesystem:write:./out"}, "  execution-privilege: same-as-user\ntimeout: 30000\n")
	cmd := command("run", tool)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "COPIED") || !strings.Contains(string(out), "CHMODDED") {
		t.Fatalf("the tool did not copy and chmod in its grant:\n%s", out)
	}
	st, err := os.Stat(filepath.Join(dir, "out/sh"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("out/sh has mode %v, want the tool's chmod 0700 (and nothing more)", st.Mode())
	}
	ents, err := os.ReadDir(filepath.Join(dir, "out"))
	must(t, err)
	for _, e := range ents {
		fi, err := os.Lstat(filepath.Join(dir, "out", e.Name()))
		must(t, err)
		if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			sys := fi.Sys().(*syscall.Stat_t)
			t.Errorf("the tool left %s with mode %v, owned by %d:%d on the host", e.Name(), fi.Mode(), sys.Uid, sys.Gid)
		}
	}
}

// A tool reopens its standard descriptors by name (/dev/stdout,
// /dev/stderr, /dev/stdin), whatever host id it runs as: as root with no
// invoking user it runs as a mapped id, reduced as 65534, and the pipes
// are the controller's.
func TestToolReopensItsStdio(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		for _, priv := range []string{"same-as-user", "reduced"} {
			t.Run(priv, func(t *testing.T) {
				dir := workdir(t, nil)
				tool := toolYAML(t, dir, tier, "stdio", `
echo to-stdout > /dev/stdout
echo to-stderr > /dev/stderr
cat /dev/stdin`, nil, "  execution-privilege: "+priv+"\ninput: from-stdin\n")
				r, c := runJSON(t, dir, tool)
				if r.Status != "ok" || strings.TrimSpace(r.Stdout) != "to-stdout\nfrom-stdin" || r.Stderr != "to-stderr\n" {
					t.Errorf("status %s, stdout %q, stderr %q (exit %d)\n%s", r.Status, r.Stdout, r.Stderr, c.code, c.stderr)
				}
			})
		}
	})
}
