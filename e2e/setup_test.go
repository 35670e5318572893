package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// runnerImage is the container tier's runner image, which the suite
// builds as it starts (`sandboxed images build`).
const runnerImage = "sandboxed-runner:latest"

// hostSetupState is what `sandboxed setup` may change on this host.
type hostSetupState struct {
	subuid, subgid string
	cgroups        []string // sandboxed directories and what is in them, with owners
	manifests      []string
	apparmor       bool
}

func readHostSetupState(t *testing.T) hostSetupState {
	t.Helper()
	var s hostSetupState
	for _, f := range []struct {
		path string
		dst  *string
	}{{"/etc/subuid", &s.subuid}, {"/etc/subgid", &s.subgid}} {
		b, err := os.ReadFile(f.path)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		*f.dst = string(b)
	}
	for _, pat := range []string{"/sys/fs/cgroup/*/sandboxed", "/sys/fs/cgroup/*/sandboxed/user-*", "/sys/fs/cgroup/sandboxed", "/sys/fs/cgroup/sandboxed/user-*"} {
		dirs, _ := filepath.Glob(pat)
		for _, d := range dirs {
			if fi, err := os.Stat(d); err == nil {
				st := fi.Sys().(*syscall.Stat_t)
				s.cgroups = append(s.cgroups, fmt.Sprintf("%s %d:%d %v", d, st.Uid, st.Gid, fi.Mode()))
			}
		}
	}
	sort.Strings(s.cgroups)
	s.manifests, _ = filepath.Glob("/var/lib/sandboxed/setup/*")
	_, err := os.Stat("/etc/apparmor.d/sandboxed")
	s.apparmor = err == nil
	return s
}

// throwawayUser adds a user with no subordinate ids and no home, and
// deletes it when the test ends.
func throwawayUser(t *testing.T) *user.User {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := "sbxe2e" + hex.EncodeToString(b[:])
	out, err := exec.Command("useradd", "-M", "-s", "/usr/sbin/nologin", "-K", "SUB_UID_COUNT=0", "-K", "SUB_GID_COUNT=0", name).CombinedOutput()
	if err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v\n%s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// asUser runs the binary with args as u, with a minimal environment.
func asUser(t *testing.T, u *user.User, args ...string) cli {
	t.Helper()
	cmd := exec.Command("setpriv", append([]string{"--reuid", u.Uid, "--regid", u.Gid, "--init-groups", env.bin}, args...)...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", "USER=" + u.Username}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("setpriv %s: %v", env.bin, err)
	}
	return cli{stdout: out.String(), stderr: errb.String(), code: code}
}

// doctorChecks runs doctor --format json and indexes its lines by
// tier/check.
type doctorLine struct {
	Tier   string `json:"tier"`
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
}

func doctorChecks(t *testing.T, c cli) map[string]doctorLine {
	t.Helper()
	var lines []doctorLine
	if err := json.Unmarshal([]byte(c.stdout), &lines); err != nil {
		t.Fatalf("doctor --format json: exit %d, not JSON: %v\n%s\n%s", c.code, err, c.stdout, c.stderr)
	}
	m := map[string]doctorLine{}
	for _, l := range lines {
		m[l.Tier+"/"+l.Check] = l
	}
	return m
}

// The whole round trip on a throwaway user: setup adds subordinate ids and
// the delegated cgroup v1 subtree, a second setup changes nothing, doctor
// sees it (as root and as the user), undo leaves the host exactly as it
// was.
func TestSetupRoundTrip(t *testing.T) {
	begin(t)
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
		t.Fatalf("this test is written for the cgroup v1 hosts the suite runs on: %v", err)
	}
	u := throwawayUser(t)
	uid, _ := strconv.Atoi(u.Uid)
	before := readHostSetupState(t)
	dir := workdir(t, nil)
	undone := false
	t.Cleanup(func() {
		if !undone {
			sandboxed(t, dir, "setup", "--user", u.Username, "--undo")
		}
	})

	// Without root: refused, with the command to run.
	if c := asUser(t, u, "setup", "--user", u.Username); c.code == 0 || !strings.Contains(c.stderr, "sudo sandboxed setup --user "+u.Username) {
		t.Fatalf("setup without root: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	// A user that does not exist.
	if c := sandboxed(t, dir, "setup", "--user", "sbxe2e-nobody-here"); c.code == 0 || !strings.Contains(c.stderr, "no such user") {
		t.Fatalf("setup of a missing user: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}

	// Doctor as the user before setup: no subordinate ids, no delegation.
	d := doctorChecks(t, asUser(t, u, "doctor", "--format", "json"))
	for _, k := range []string{"process/subordinate ids", "process/cgroup delegation"} {
		if d[k].OK || !strings.Contains(d[k].Fix, "sudo sandboxed setup --user "+u.Username) {
			t.Errorf("doctor before setup, %s: %+v", k, d[k])
		}
	}

	c := sandboxed(t, dir, "setup", "--user", u.Username)
	if c.code != 0 {
		t.Fatalf("setup: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	for _, want := range []string{"added subordinate uids", "added subordinate gids",
		fmt.Sprintf("sandboxed/user-%d, delegated to %s", uid, u.Username)} {
		if !strings.Contains(c.stdout, want) {
			t.Errorf("setup does not say %q:\n%s", want, c.stdout)
		}
	}
	line := regexpLine(t, "/etc/subuid", u.Username)
	if !strings.HasSuffix(line, ":65536") {
		t.Errorf("/etc/subuid line %q", line)
	}
	regexpLine(t, "/etc/subgid", u.Username)
	for _, ctl := range []string{"memory", "pids", "cpu", "freezer"} {
		gdir := filepath.Join("/sys/fs/cgroup", ctl, "sandboxed", "user-"+u.Uid)
		for _, f := range []string{"", "cgroup.procs", "tasks"} {
			fi, err := os.Stat(filepath.Join(gdir, f))
			if err != nil {
				t.Fatalf("after setup: %v", err)
			}
			if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid {
				t.Errorf("%s/%s is owned by %d, want %d", gdir, f, st.Uid, uid)
			}
		}
		if fi, err := os.Stat(filepath.Dir(gdir)); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Errorf("%s is not root's: %v", filepath.Dir(gdir), err)
		}
	}

	// Idempotent.
	if c := sandboxed(t, dir, "setup", "--user", u.Username); c.code != 0 || strings.TrimSpace(c.stdout) != "nothing to change" {
		t.Fatalf("second setup: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}

	// The user can use the subtree: make a group, set a limit, move in.
	probe := asUserShell(t, u, fmt.Sprintf(`D=/sys/fs/cgroup/pids/sandboxed/user-%[1]s/e2e; mkdir $D && echo 7 > $D/pids.max && sh -c 'echo $$ > '$D'/cgroup.procs; grep pids /proc/self/cgroup'; rmdir $D`, u.Uid))
	if !strings.Contains(probe, "/sandboxed/user-"+u.Uid+"/e2e") {
		t.Errorf("the user could not use the delegated subtree: %s", probe)
	}

	// Doctor as root and as the user.
	d = doctorChecks(t, sandboxed(t, dir, "doctor", "--format", "json"))
	if m := d["all/mode"]; !strings.HasPrefix(m.Detail, "root") {
		t.Errorf("doctor as root, mode: %+v", m)
	}
	d = doctorChecks(t, asUser(t, u, "doctor", "--format", "json"))
	if m := d["all/mode"]; !strings.HasPrefix(m.Detail, "rootless: sandboxed runs as "+u.Username) {
		t.Errorf("doctor as the user, mode: %+v", m)
	}
	for _, k := range []string{"process/subordinate ids", "process/cgroup delegation", "process/user namespaces"} {
		if !d[k].OK {
			t.Errorf("doctor as the user after setup, %s: %+v", k, d[k])
		}
	}
	if l := d["process/cgroup delegation"]; !strings.Contains(l.Detail, "memory pids cpu freezer delegated to "+u.Username) {
		t.Errorf("doctor as the user, delegation: %+v", l)
	}
	// The engine runs, but its socket is root's and its group's, and the
	// user is in neither: doctor says so, not that the engine is down.
	if fi, err := os.Stat("/var/run/docker.sock"); err == nil && fi.Mode().Perm()&0o002 == 0 && os.Getenv("DOCKER_HOST") == "" {
		if l := d["container/docker engine"]; l.OK || !strings.Contains(l.Detail, "may not use its socket") || !strings.Contains(l.Fix, "docker group") {
			t.Errorf("doctor as a user the engine's socket refuses: %+v", l)
		}
	}

	// Undo leaves the host as it was.
	c = sandboxed(t, dir, "setup", "--user", u.Username, "--undo")
	if c.code != 0 || !strings.Contains(c.stdout, "removed subordinate uids") || !strings.Contains(c.stdout, "removed cgroup") {
		t.Fatalf("undo: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	undone = true
	after := readHostSetupState(t)
	if after.subuid != before.subuid || after.subgid != before.subgid {
		t.Errorf("undo changed subordinate ids:\nbefore %q %q\nafter  %q %q", before.subuid, before.subgid, after.subuid, after.subgid)
	}
	if strings.Join(after.cgroups, "\n") != strings.Join(before.cgroups, "\n") {
		t.Errorf("undo left cgroups changed:\nbefore %s\nafter  %s", strings.Join(before.cgroups, "\n  "), strings.Join(after.cgroups, "\n  "))
	}
	if strings.Join(after.manifests, " ") != strings.Join(before.manifests, " ") || after.apparmor != before.apparmor {
		t.Errorf("undo left files: manifests %v (before %v), AppArmor profile %v (before %v)", after.manifests, before.manifests, after.apparmor, before.apparmor)
	}
	if c := sandboxed(t, dir, "setup", "--user", u.Username, "--undo"); c.code != 0 || strings.TrimSpace(c.stdout) != "nothing to change" {
		t.Errorf("second undo: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
}

// regexpLine returns the line of file owned by name, failing if there is
// not exactly one.
func regexpLine(t *testing.T, file, name string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, name+":") {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s has %d lines for %s: %q", file, len(found), name, b)
	}
	return found[0]
}

// asUserShell runs script with sh as u and returns its output.
func asUserShell(t *testing.T, u *user.User, script string) string {
	t.Helper()
	out, err := exec.Command("setpriv", "--reuid", u.Uid, "--regid", u.Gid, "--init-groups", "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Errorf("as %s: %s: %v\n%s", u.Username, script, err, out)
	}
	return string(out)
}
