package process_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/internal/testenv"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

func TestMain(m *testing.M) {
	if sbinit.IsInit() {
		sbinit.Main()
	}
	os.Exit(m.Run())
}

// needRoot gates tests of the real backend: they run with SANDBOXED_E2E=1
// and need root (see package testenv: they fail under CI, skip elsewhere).
func needRoot(t testing.TB) {
	t.Helper()
	testenv.NeedE2E(t)
	testenv.NeedRoot(t)
}

var runSeq atomic.Int64

func testPlan(t testing.TB, priv privilege.Privilege, opts ...sandbox.SpecOpt) *isolation.Plan {
	t.Helper()
	id := fmt.Sprintf("test-%d-%d", os.Getpid(), runSeq.Add(1))
	base := []sandbox.SpecOpt{sandbox.WithMemory(256 << 20), sandbox.WithPids(64 + isolation.InitSpareThreads), sandbox.WithTmpfs(16 << 20)}
	if priv == privilege.SameAsUser {
		base = append(base, sandbox.WithUser(uint32(os.Getuid()), uint32(os.Getgid())))
	}
	spec, err := sandbox.NewSpec(id, priv, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &isolation.Plan{
		RunID: id, Tool: "test", Tier: isolation.TierProcess, Privilege: priv, Spec: spec,
		Limits: isolation.Limits{MemoryBytes: 256 << 20, Pids: 64, TmpfsBytes: 16 << 20, KillGrace: 200 * time.Millisecond},
	}
}

func start(t testing.TB, p *isolation.Plan) isolation.Sandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sb, err := process.New().Start(ctx, p)
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
	return sb
}

// runProcsFile is the cgroup.procs file of run id's cgroup: in the v1 pids
// hierarchy, or in the unified one on a cgroup v2 host.
func runProcsFile(t testing.TB, runID string) string {
	t.Helper()
	h, err := cgroup.Detect()
	if err != nil {
		t.Fatal(err)
	}
	root := h.V2
	if h.Version == 1 {
		root = h.V1["pids"]
	}
	return filepath.Join(root, cgroup.Parent, runID, "cgroup.procs")
}

// assertNothingLeft checks that no cgroup or host mount of the run remains.
func assertNothingLeft(t testing.TB, runID string) {
	t.Helper()
	for _, ctl := range []string{"memory", "pids", "freezer", "cpu", "unified", ""} {
		dir := "/sys/fs/cgroup/" + ctl + "/sandboxed/" + runID
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("cgroup %s left behind", dir)
		}
	}
	mounts, err := mountinfo.GetMounts(func(i *mountinfo.Info) (skip, stop bool) {
		return !strings.Contains(i.Mountpoint, runID) && !strings.Contains(i.Source, runID), false
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		t.Errorf("mount %s left behind", m.Mountpoint)
	}
}

func run(t testing.TB, sb isolation.Sandbox, script string) (string, string, isolation.Exit) {
	t.Helper()
	return runCmd(t, sb, []string{"/bin/sh", "-c", script})
}

func runCmd(t testing.TB, sb isolation.Sandbox, args []string, env ...string) (string, string, isolation.Exit) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	exit, err := sb.Exec(ctx, isolation.Command{Args: args, Env: append([]string{"PATH=" + sandbox.DefaultPath}, env...), Cwd: "/"},
		isolation.Stdio{Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatalf("exec %q: %v", args, err)
	}
	return out.String(), errb.String(), exit
}

func TestEchoAndConfinement(t *testing.T) {
	needRoot(t)
	for _, priv := range []privilege.Privilege{privilege.SameAsUser, privilege.Reduced} {
		t.Run(string(priv), func(t *testing.T) {
			sb := start(t, testPlan(t, priv))
			out, errs, exit := run(t, sb, "echo hi")
			if out != "hi\n" || exit.Code != 0 {
				t.Fatalf("stdout %q stderr %q exit %+v", out, errs, exit)
			}
			out, _, _ = run(t, sb, "grep -E '^(CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp|Uid):' /proc/self/status")
			wantUID := fmt.Sprint(os.Getuid())
			if priv == privilege.Reduced {
				wantUID = "65534"
			}
			for _, want := range []string{"CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2", "Uid:\t" + wantUID + "\t"} {
				if !strings.Contains(out, want) {
					t.Errorf("status lacks %q:\n%s", want, out)
				}
			}
			checks := map[string]string{
				"root invisible":   "test ! -e /root && test ! -e /home && test ! -e /run && test ! -e /sys",
				"root read-only":   "! touch /x 2>/dev/null && ! touch /usr/x 2>/dev/null",
				"tmp writable":     "echo x > /tmp/x && cat /tmp/x >/dev/null",
				"mount denied":     "! mount -t tmpfs none /tmp 2>/dev/null",
				"unshare denied":   "! unshare -n true 2>/dev/null",
				"hostname":         "test \"$(cat /proc/sys/kernel/hostname)\" = sandbox",
				"pid 1 is init":    "test \"$(cat /proc/1/cmdline | tr '\\0' ' ')\" = 'sandboxed-init __sandboxed-init '",
				"no network":       "! test -e /proc/net/route || test \"$(wc -l < /proc/net/route)\" -le 1",
				"kcore masked":     "test ! -s /proc/kcore",
				"proc sys ro":      "! echo 1 > /proc/sys/kernel/hostname 2>/dev/null",
				"etc passwd":       "grep -q nobody /etc/passwd && test ! -e /etc/shadow && test ! -e /etc/resolv.conf",
				"dev null":         "echo x > /dev/null && head -c1 /dev/zero | wc -c | grep -q 1",
				"init fds hidden":  "! readlink /proc/1/fd/0 >/dev/null 2>&1 && ! cat /proc/1/environ >/dev/null 2>&1",
				"setuid no effect": "test \"$(id -u)\" = " + wantUID,
			}
			for name, script := range checks {
				if out, errs, exit := run(t, sb, script); exit.Code != 0 {
					t.Errorf("%s: exit %+v stderr %q stdout %q", name, exit, errs, out)
				}
			}
		})
	}
}

func TestGrants(t *testing.T) {
	needRoot(t)
	ro := t.TempDir()
	rw := t.TempDir()
	os.WriteFile(ro+"/in", []byte("data"), 0o644)
	sb := start(t, testPlan(t, privilege.SameAsUser, sandbox.WithReadBind(ro, "/work/in"), sandbox.WithWriteBind(rw, "/work/out")))
	out, errs, exit := run(t, sb, "cat /work/in/in && ! touch /work/in/x 2>/dev/null && echo y > /work/out/f")
	if exit.Code != 0 || out != "data" {
		t.Fatalf("exit %+v out %q err %q", exit, out, errs)
	}
	if b, _ := os.ReadFile(rw + "/f"); string(b) != "y\n" {
		t.Fatalf("write grant: got %q", b)
	}
}

// TestReducedWriteGrant: a reduced tool (nobody) writes and edits in a
// 0755 grant root owns, through its idmapped bind; what it made belongs
// to root on the host, and the grant is unchanged on the host.
func TestReducedWriteGrant(t *testing.T) {
	needRoot(t)
	rw := t.TempDir()
	if err := os.Chmod(rw, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(rw+"/old", []byte("a\n"), 0o644)
	p := testPlan(t, privilege.Reduced, sandbox.WithWriteBind(rw, "/work/out"))
	p.GrantOwner = &isolation.ID{UID: 0, GID: 0}
	sb := start(t, p)
	out, errs, exit := run(t, sb, "id -u; echo b >> /work/out/old && mkdir /work/out/d && echo y > /work/out/d/f && stat -c %u /work/out/d/f")
	if exit.Code != 0 || out != "65534\n65534\n" {
		t.Fatalf("exit %+v out %q err %q", exit, out, errs)
	}
	for _, f := range []string{rw, rw + "/old", rw + "/d", rw + "/d/f"} {
		var st syscall.Stat_t
		if err := syscall.Lstat(f, &st); err != nil || st.Uid != 0 || st.Gid != 0 {
			t.Errorf("%s: owner %d:%d (%v), want root's", f, st.Uid, st.Gid, err)
		}
	}
	if b, _ := os.ReadFile(rw + "/old"); string(b) != "a\nb\n" {
		t.Errorf("edited file: %q", b)
	}
}

func TestSymlinkedGrantRefused(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	os.Symlink("/etc", dir+"/link")
	p := testPlan(t, privilege.SameAsUser, sandbox.WithReadBind(dir+"/link", "/work"))
	_, err := process.New().Start(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("err = %v", err)
	}
	assertNothingLeft(t, p.RunID)
}

func TestMemoryBombOOM(t *testing.T) {
	needRoot(t)
	p := testPlan(t, privilege.SameAsUser, sandbox.WithMemory(32<<20), sandbox.WithTmpfs(512<<20))
	p.Limits.MemoryBytes, p.Limits.TmpfsBytes = 32<<20, 512<<20
	sb := start(t, p)
	// A shell variable of 200 MB: the shell is the largest process.
	_, _, exit := run(t, sb, "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo done")
	st, err := sb.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !st.OOMKilled || exit.Code != 137 {
		t.Fatalf("exit %+v stats %+v: expected an OOM kill", exit, st)
	}
	if st.PeakMemoryBytes < 16<<20 {
		t.Fatalf("peak memory %d: too low", st.PeakMemoryBytes)
	}
	// Memory nobody owns (tmpfs) past the limit: the sandbox dies of it.
	p2 := testPlan(t, privilege.SameAsUser, sandbox.WithMemory(32<<20), sandbox.WithTmpfs(512<<20))
	p2.Limits.MemoryBytes, p2.Limits.TmpfsBytes = 32<<20, 512<<20
	sb2 := start(t, p2)
	_, _, exit = run(t, sb2, "head -c 200000000 /dev/zero > /tmp/big; echo done")
	if st, _ := sb2.Stats(context.Background()); !st.OOMKilled || exit.Code != 137 {
		t.Fatalf("tmpfs bomb: exit %+v stats %+v", exit, st)
	}
}

func TestForkBombStopped(t *testing.T) {
	needRoot(t)
	p := testPlan(t, privilege.SameAsUser)
	p.Limits.Pids = 16
	pids := int64(16 + isolation.InitSpareThreads)
	p.Spec.Linux.Resources.Pids.Limit = &pids
	sb := start(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var errb bytes.Buffer
	sb.Exec(ctx, isolation.Command{Args: []string{"/bin/sh", "-c", "for i in $(seq 100); do sleep 5 & done; wait"}, Env: []string{"PATH=" + sandbox.DefaultPath}},
		isolation.Stdio{Stderr: &errb})
	st, _ := sb.Stats(context.Background())
	if !st.PidsLimitHit && !strings.Contains(errb.String(), "fork") {
		t.Fatalf("pids limit not hit: stats %+v stderr %q", st, errb.String())
	}
	if err := sb.Kill(context.Background(), 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
}

func TestExecTimeout(t *testing.T) {
	needRoot(t)
	sb := start(t, testPlan(t, privilege.SameAsUser))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	exit, err := sb.Exec(ctx, isolation.Command{Args: []string{"sleep", "30"}, Env: []string{"PATH=" + sandbox.DefaultPath}}, isolation.Stdio{})
	if err == nil || exit.Signal == 0 {
		t.Fatalf("exit %+v err %v", exit, err)
	}
	if out, _, _ := run(t, sb, "echo still"); out != "still\n" {
		t.Fatalf("sandbox unusable after a timeout: %q", out)
	}
}

func BenchmarkStartExecClose(b *testing.B) {
	needRoot(b)
	be := process.New()
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		p := testPlan(b, privilege.SameAsUser)
		sb, err := be.Start(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		exit, err := sb.Exec(ctx, isolation.Command{Args: []string{"/bin/true"}}, isolation.Stdio{})
		if err != nil || exit.Code != 0 {
			b.Fatal(exit, err)
		}
		if err := sb.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func TestElevated(t *testing.T) {
	needRoot(t)
	sb := start(t, testPlan(t, privilege.Elevated))
	out, errs, exit := run(t, sb, "id -u; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; cat /proc/self/uid_map; touch /tmp/x && chown 0:0 /tmp/x && echo chown-ok; mount -t tmpfs none /tmp 2>/dev/null || echo mount-denied")
	if exit.Code != 0 {
		t.Fatalf("exit %+v stderr %q", exit, errs)
	}
	reserved, err := process.ReservedStart("/etc/subuid", "/etc/subgid")
	if err != nil {
		t.Fatal(err)
	}
	// Root inside is the first id of sandboxed's reserved range outside.
	for _, want := range []string{"0\n", "CapEff:\t00000000a80425fb", "NoNewPrivs:\t1", "Seccomp:\t2", fmt.Sprintf(" %d ", reserved), "chown-ok", "mount-denied"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "         0          0") {
		t.Errorf("uid 0 maps to host root:\n%s", out)
	}
}

func TestKillTakesEverythingDown(t *testing.T) {
	needRoot(t)
	sb := start(t, testPlan(t, privilege.SameAsUser))
	done := make(chan isolation.Exit, 1)
	pr, pw := io.Pipe()
	go func() {
		exit, _ := sb.Exec(context.Background(), isolation.Command{Args: []string{"/bin/sh", "-c", "trap '' TERM; sleep 60 & echo started; sleep 60"}, Env: []string{"PATH=" + sandbox.DefaultPath}}, isolation.Stdio{Stdout: pw})
		pw.Close()
		done <- exit
	}()
	// Kill once the command runs.
	if line, err := bufio.NewReader(pr).ReadString('\n'); err != nil || line != "started\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	go io.Copy(io.Discard, pr)
	if err := sb.Kill(context.Background(), 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	select {
	case exit := <-done:
		if exit.Signal == 0 {
			t.Fatalf("exit %+v", exit)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Exec did not return after Kill")
	}
}

func TestGCRemovesDeadRuns(t *testing.T) {
	needRoot(t)
	defer process.SetGCMinAge(0)()
	be := process.New()
	// Only this test process's runs are fair game: other processes on the
	// machine have live runs too.
	mine := fmt.Sprintf("test-%d-", os.Getpid())
	onlyMine := func(id string) bool { return !strings.HasPrefix(id, mine) }
	p := testPlan(t, privilege.SameAsUser)
	sb, err := be.Start(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	// Without liveness answers, a run whose init lives is spared.
	removed, err := be.GC(context.Background(), nil)
	if err != nil || len(removed) != 0 {
		t.Fatalf("gc of a live run: %v %v", removed, err)
	}
	if out, _, _ := run(t, sb, "echo alive"); out != "alive\n" {
		t.Fatal("live run was touched")
	}
	// A crashed controller: its init is gone (and, in a pid namespace,
	// everything with it), its cgroup is not.
	procsFile := runProcsFile(t, p.RunID)
	procs, _ := os.ReadFile(procsFile)
	for _, f := range strings.Fields(string(procs)) {
		pid, _ := strconv.Atoi(f)
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasPrefix(string(b), "sandboxed-init") {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for i := 0; i < 500; i++ {
		if b, _ := os.ReadFile(procsFile); len(b) == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	removed, err = be.GC(context.Background(), onlyMine)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range removed {
		found = found || strings.Contains(r, p.RunID)
	}
	if !found {
		t.Fatalf("gc removed %v, not %s", removed, p.RunID)
	}
	sb.Close(context.Background())
	assertNothingLeft(t, p.RunID)
}

// A writable grant that holds a symlink cannot redirect a nested grant's
// mountpoint out of the sandbox (nor make the init create files there).
func TestNestedGrantThroughSymlinkRefused(t *testing.T) {
	needRoot(t)
	outer := t.TempDir()
	victim := t.TempDir()
	src := t.TempDir()
	os.Symlink(victim, outer+"/sub")
	p := testPlan(t, privilege.SameAsUser, sandbox.WithWriteBind(outer, "/work"), sandbox.WithReadBind(src, "/work/sub/x"))
	_, err := process.New().Start(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("err = %v", err)
	}
	if ents, _ := os.ReadDir(victim); len(ents) != 0 {
		t.Fatalf("init created %v through the symlink", ents)
	}
	assertNothingLeft(t, p.RunID)
}

// Steps may run at once; stdin reaches the command; large output streams
// through without loss.
func TestConcurrentExecAndStdio(t *testing.T) {
	needRoot(t)
	sb := start(t, testPlan(t, privilege.Reduced))
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			var out bytes.Buffer
			in := strings.Repeat("line\n", 50000)
			exit, err := sb.Exec(context.Background(), isolation.Command{Args: []string{"/bin/sh", "-c", "wc -l; head -c 3000000 /dev/zero | wc -c; exit 7"}, Env: []string{"PATH=" + sandbox.DefaultPath}},
				isolation.Stdio{Stdin: strings.NewReader(in), Stdout: &out})
			if err == nil && (exit.Code != 7 || strings.Fields(out.String())[0] != "50000" || strings.Fields(out.String())[1] != "3000000") {
				err = fmt.Errorf("exit %+v out %q", exit, out.String())
			}
			errs <- err
		}()
	}
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if _, err := sb.Exec(context.Background(), isolation.Command{Args: []string{"/bin/sh", "-c", "head -c 5000000 /dev/zero"}, Env: []string{"PATH=" + sandbox.DefaultPath}},
		isolation.Stdio{Stdout: &out}); err != nil || out.Len() != 5000000 {
		t.Fatalf("large output: %d bytes, %v", out.Len(), err)
	}
	if _, _, exit := run(t, sb, "exit 3"); exit.Code != 3 {
		t.Fatalf("exit %+v", exit)
	}
	if _, errs, exit := runCmd(t, sb, []string{"no-such-tool"}); exit.Code != 127 || !strings.Contains(errs, "not found") {
		t.Fatalf("missing command: exit %+v stderr %q", exit, errs)
	}
	if _, _, exit := run(t, sb, "kill -KILL $$"); exit.Signal != 9 || exit.Code != 137 {
		t.Fatalf("killed: exit %+v", exit)
	}
}
