package landlock_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/internal/testenv"
	"github.com/sandboxed-dev/sandboxed/internal/tier"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/landlock"
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

var seq atomic.Int64

// plan is a landlock-tier plan with binds (host path, "ro" or "rw").
func plan(t *testing.T, limits isolation.Limits, binds ...[2]string) *isolation.Plan {
	t.Helper()
	id := fmt.Sprintf("lltest-%d-%d", os.Getpid(), seq.Add(1))
	if limits.KillGrace == 0 {
		limits.KillGrace = 100 * time.Millisecond
	}
	// As the planner writes it: the init's spare threads above the
	// tool's pids, the landlock tier's shape.
	limits.MemoryBytes = cmp.Or(limits.MemoryBytes, 256<<20)
	limits.Pids = cmp.Or(limits.Pids, 64)
	limits.TmpfsBytes = cmp.Or(limits.TmpfsBytes, sandbox.DefaultTmpfsBytes)
	// Where no cgroup can hold the limits the spec names none, and its
	// pids limit is the tool's own (RLIMIT_NPROC on its uid).
	pids, cgroup := limits.Pids+isolation.InitSpareThreads, process.CgroupHolds(limits)
	if !cgroup {
		pids = limits.Pids
	}
	spec, err := sandbox.NewSpec(id, privilege.SameAsUser, sandbox.WithMemory(limits.MemoryBytes),
		sandbox.WithPids(pids), sandbox.WithTmpfs(limits.TmpfsBytes),
		sandbox.WithTier(isolation.TierLandlock, false))
	if err != nil {
		t.Fatal(err)
	}
	if !cgroup {
		if err := sandbox.WithoutCgroup()(spec); err != nil {
			t.Fatal(err)
		}
	}
	// The tool's ids, as the planner writes them: the run's own as root,
	// else this process's.
	spec.Process.User = specs.User{UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
	if os.Geteuid() == 0 {
		tid := landlock.ToolID(id)
		spec.Process.User = specs.User{UID: tid, GID: tid}
	}
	spec.Linux.Seccomp = landlock.WithSeccompRules(spec.Linux.Seccomp, false)
	for _, b := range binds {
		spec.Mounts = append(spec.Mounts, specs.Mount{Destination: b[0], Source: b[0], Type: "bind", Options: []string{"bind", b[1]}})
	}
	return &isolation.Plan{RunID: id, Tier: isolation.TierLandlock, Privilege: privilege.SameAsUser, Spec: spec,
		Limits: limits, Scratch: filepath.Join(t.TempDir(), "scratch")}
}

// withEgress gives p network through a proxy socket in its run's
// directory, edited by edit, and the profile that goes with it.
func withEgress(p *isolation.Plan, edit func(e *isolation.Egress)) {
	p.Egress = &isolation.Egress{ProxyPort: 3128, ProxySocket: filepath.Join(filepath.Dir(p.Scratch), "proxy.sock")}
	if edit != nil {
		edit(p.Egress)
	}
	p.Spec.Linux.Seccomp = landlock.WithSeccompRules(sandbox.SeccompProfile(p.Privilege), true)
}

func run(t *testing.T, ctx context.Context, sb isolation.Sandbox, p *isolation.Plan, script string) (string, isolation.Exit) {
	t.Helper()
	var out syncBuffer
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + p.Scratch, "TMPDIR=" + p.Scratch}
	exit, err := sb.Exec(ctx, isolation.Command{Args: []string{"/bin/sh", "-c", script}, Env: env, Cwd: "/"},
		isolation.Stdio{Stdout: &out, Stderr: &out})
	if err != nil && ctx.Err() == nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	return out.String(), exit
}

// syncBuffer takes a command's stdout and stderr, written concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t *testing.T, p *isolation.Plan) isolation.Sandbox {
	t.Helper()
	// A started run is a real sandbox (as root, with a cgroup): the
	// suites that make them run with SANDBOXED_E2E=1, one at a time.
	testenv.NeedE2E(t)
	if sbinit.LandlockABI() < 1 {
		testenv.Need(t, "Landlock", errors.New("this kernel has no Landlock"))
	}
	sb, err := landlock.New().Start(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close(context.Background()) })
	return sb
}

// startWarm starts the run of p as a resident controller does: a warm
// sandbox of its key, prestarted with its run id, then claimed.
func startWarm(t *testing.T, p *isolation.Plan) isolation.Sandbox {
	t.Helper()
	testenv.NeedE2E(t)
	if sbinit.LandlockABI() < 1 {
		testenv.Need(t, "Landlock", errors.New("this kernel has no Landlock"))
	}
	ctx := context.Background()
	b := landlock.New()
	key, ok := b.WarmKey(p)
	if !ok {
		t.Fatal("no warm key for a landlock-tier plan")
	}
	w, err := b.Prestart(ctx, key, p.RunID, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sb, err := w.Claim(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close(context.Background()) })
	return sb
}

// The walls of the tier, each from inside a started run, cold and warm.
func TestConfinement(t *testing.T) {
	t.Run("cold", func(t *testing.T) { testConfinement(t, start) })
	t.Run("warm", func(t *testing.T) { testConfinement(t, startWarm) })
}

func testConfinement(t *testing.T, start func(*testing.T, *isolation.Plan) isolation.Sandbox) {
	ctx := context.Background()
	readDir, writeDir := t.TempDir(), t.TempDir()
	secret := t.TempDir()
	for _, d := range []string{readDir, writeDir, secret} {
		os.Chmod(d, 0o777)
		os.Chmod(filepath.Dir(d), 0o755)
	}
	os.WriteFile(filepath.Join(readDir, "in"), []byte("readable"), 0o644)
	os.WriteFile(filepath.Join(secret, "key"), []byte("secret"), 0o644)
	// Masks inside the read grant, as the planner writes them: a file
	// under /dev/null, a folder under an empty tmpfs.
	os.WriteFile(filepath.Join(readDir, ".env"), []byte("secret"), 0o644)
	os.MkdirAll(filepath.Join(readDir, "sub", ".aws"), 0o755)
	os.WriteFile(filepath.Join(readDir, "sub", ".aws", "credentials"), []byte("secret"), 0o644)
	os.WriteFile(filepath.Join(readDir, "sub", "notes"), []byte("readable too"), 0o644)
	p := plan(t, isolation.Limits{}, [2]string{readDir, "ro"}, [2]string{writeDir, "rw"})
	p.Spec.Mounts = append(p.Spec.Mounts,
		specs.Mount{Destination: readDir + "/.env", Type: "bind", Source: "/dev/null", Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}},
		specs.Mount{Destination: readDir + "/sub/.aws", Type: "tmpfs", Source: "tmpfs", Options: []string{"ro", "nosuid", "nodev", "noexec", "size=4k", "mode=000"}})
	sb := start(t, p)
	cases := []struct {
		name, script, want string
	}{
		{"read grant", "cat " + readDir + "/in", "readable"},
		{"write grant", "echo w > " + writeDir + "/out && cat " + writeDir + "/out", "w"},
		{"scratch is HOME", "echo s > $HOME/f && cat $TMPDIR/f", "s"},
		{"beside a mask", "cat " + readDir + "/sub/notes", "readable too"},
		{"masked file", "cat " + readDir + "/.env || echo refused", "refused"},
		{"masked folder", "cat " + readDir + "/sub/.aws/credentials || echo refused", "refused"},
		{"masked names listed", "ls -A " + readDir, ".env"},
		{"no read outside grants", "cat " + secret + "/key || echo refused", "refused"},
		{"no listing outside grants", "ls " + secret + " || echo refused", "refused"},
		{"no write in a read grant", "echo x > " + readDir + "/in || echo refused", "refused"},
		{"no write to /tmp", "echo x > /tmp/ll-" + p.RunID + " || echo refused", "refused"},
		{"no environ of others", "cat /proc/1/environ || echo refused", "refused"},
		{"no environ of the init", "cat /proc/$PPID/environ; echo; cat /proc/" + strconv.Itoa(os.Getpid()) + "/environ || echo refused", "refused"},
		{"no tcp", "(echo > /dev/tcp/127.0.0.1/22) 2>&1 || echo refused", "refused"},
		{"no capabilities", "grep CapEff /proc/self/status", "0000000000000000"},
		{"no_new_privs", "grep NoNewPrivs /proc/self/status", "1"},
		{"seccomp filter", "grep '^Seccomp:' /proc/self/status", "2"},
		{"no limits of the init", "prlimit --pid $PPID --nofile=0:0 2>/dev/null && echo changed || echo refused", "refused"},
		{"no priority of the init", "renice -n 19 -p $PPID >/dev/null 2>&1 && echo changed || echo refused", "refused"},
		{"no scheduling of the init", "chrt -i -p 0 $PPID 2>/dev/null && echo changed || echo refused", "refused"},
		{"own limits and priority", "ulimit -n 64 && ulimit -S -v 4000000 && nice -n 5 true && echo ok", "ok"},
		{"own session", `read pid comm state ppid pgrp sid rest < /proc/$$/stat; test $sid = $$ && echo own`, "own"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, exit := run(t, ctx, sb, p, c.script)
			if !strings.Contains(out, c.want) {
				t.Fatalf("%s: want %q in (exit %+v):\n%s", c.script, c.want, exit, out)
			}
			if c.want == "refused" && strings.Contains(out, "secret") {
				t.Fatalf("%s: leaked:\n%s", c.script, out)
			}
		})
	}
	if os.Geteuid() == 0 {
		out, _ := run(t, ctx, sb, p, "id -u")
		if uid, _ := strconv.Atoi(strings.TrimSpace(out)); uint32(uid) != p.Spec.Process.User.UID || !landlock.IsToolID(uint32(uid)) {
			t.Fatalf("as root the tool runs as uid %s, want the spec's, %d, one of its own", out, p.Spec.Process.User.UID)
		}
	}
	if _, err := os.Stat("/tmp/ll-" + p.RunID); err == nil {
		t.Fatal("wrote to /tmp")
	}
}

// A daemon that left its session, and the processes a fork loop made,
// die with the run; the scratch directory goes. Cold and warm.
func TestNothingOutlivesTheRun(t *testing.T) {
	t.Run("cold", func(t *testing.T) { testNothingOutlives(t, start) })
	t.Run("warm", func(t *testing.T) { testNothingOutlives(t, startWarm) })
}

func testNothingOutlives(t *testing.T, start func(*testing.T, *isolation.Plan) isolation.Sandbox) {
	ctx := context.Background()
	p := plan(t, isolation.Limits{Pids: 32, MemoryBytes: 64 << 20, TmpfsBytes: 1 << 20})
	sb := start(t, p)
	marker := "llmark" + strconv.Itoa(os.Getpid()) + p.RunID[len(p.RunID)-2:]
	out, exit := run(t, ctx, sb, p, "setsid bash -c 'exec -a "+marker+" sleep 300' </dev/null >/dev/null 2>&1 & sleep 0.2; echo started")
	if exit.Code != 0 || !strings.Contains(out, "started") {
		t.Fatalf("daemon: %v %s", exit, out)
	}
	// A fork loop: the process limit stops it (several processes).
	out, _ = run(t, ctx, sb, p, "i=0; while [ $i -lt 100 ]; do sleep 20 >/dev/null 2>&1 & i=$((i+1)); done; echo done")
	if !strings.Contains(strings.ToLower(out), "fork") {
		t.Fatalf("fork loop not stopped: %s", out)
	}
	// A memory hog: the per-process limit stops it.
	out, exit = run(t, ctx, sb, p, "head -c 200000000 /dev/zero | tr '\\0' a | (x=$(cat); echo ${#x})")
	if exit.Code == 0 && strings.Contains(out, "200000000") {
		t.Fatalf("memory limit: %v %s", exit, out)
	}
	// A file larger than the tmpfs size.
	out, _ = run(t, ctx, sb, p, "head -c 3000000 /dev/zero > $TMPDIR/big; wc -c < $TMPDIR/big")
	if strings.Contains(out, "3000000") {
		t.Fatalf("file size limit: %s", out)
	}
	if !hasProcess(marker) {
		t.Fatal("the daemon did not start")
	}
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if hasProcess(marker) {
		t.Fatal("a daemon outlived its run")
	}
	if _, err := os.Stat(p.Scratch); !os.IsNotExist(err) {
		t.Fatalf("scratch directory left: %v", err)
	}
}

// A timeout kills the whole tree.
func TestKillKillsTheTree(t *testing.T) {
	ctx := context.Background()
	p := plan(t, isolation.Limits{Pids: 32})
	sb := start(t, p)
	marker := "llkill" + strconv.Itoa(os.Getpid())
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	go func() {
		<-tctx.Done()
		sb.Kill(ctx, 100*time.Millisecond)
	}()
	_, exit := run(t, tctx, sb, p, "setsid bash -c 'exec -a "+marker+" sleep 300' </dev/null >/dev/null 2>&1 & sleep 30")
	if exit.Signal == 0 {
		t.Fatalf("exit %+v", exit)
	}
	deadline := time.Now().Add(2 * time.Second)
	for hasProcess(marker) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if hasProcess(marker) {
		t.Fatal("a daemon outlived the kill")
	}
}

func hasProcess(marker string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.HasPrefix(b, []byte(marker)) {
			return true
		}
	}
	return false
}

// What the tier cannot give is refused, with the gap named, unless the
// plan accepts it.
func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name   string
		abi    int
		edit   func(p *isolation.Plan)
		refuse string // "" accepts
	}{
		{"no landlock", 0, nil, "this kernel has none"},
		{"abi 1", 1, func(p *isolation.Plan) { p.AcceptGaps = []string{tier.GapSignals} }, ""},
		{"network", 7, func(p *isolation.Plan) { withEgress(p, nil) }, ""},
		{"network without its profile", 7, func(p *isolation.Plan) { p.Egress = &isolation.Egress{ProxyPort: 3128, ProxySocket: "/run/p.sock"} }, "SeccompRules"},
		{"network's profile without network", 7, func(p *isolation.Plan) { withEgress(p, nil); p.Egress = nil }, "SeccompRules"},
		{"localhost grant", 7, func(p *isolation.Plan) { withEgress(p, func(e *isolation.Egress) { e.LocalhostPorts = []int{8080} }) }, ""},
		{"localhost grant of the proxy's port", 7, func(p *isolation.Plan) { withEgress(p, func(e *isolation.Egress) { e.LocalhostPorts = []int{3128} }) }, "localhost port 3128"},
		{"credentials", 7, func(p *isolation.Plan) {
			withEgress(p, func(e *isolation.Egress) { e.Credentials = []isolation.Credential{{Name: "TOKEN"}} })
		}, "credentials and HTTP rules"},
		{"proxy socket not absolute", 7, func(p *isolation.Plan) { withEgress(p, func(e *isolation.Egress) { e.ProxySocket = "p.sock" }) }, "egress proxy"},
		{"elevated", 7, func(p *isolation.Plan) { p.Privilege = privilege.Elevated }, "elevated"},
		{"observe", 7, func(p *isolation.Plan) { p.Observe = true }, "observing"},
		{"no tier rules", 7, func(p *isolation.Plan) { p.Spec.Linux.Seccomp = sandbox.SeccompProfile(privilege.SameAsUser) }, "SeccompRules"},
		{"mask in a read grant", 7, func(p *isolation.Plan) { addMask(p, dir, "ro") }, ""},
		{"mask in a write grant", 7, func(p *isolation.Plan) { addMask(p, dir, "rw") }, "mask at " + dir + "/hidden inside the write grant of " + dir},
		{"mask accepted", 7, func(p *isolation.Plan) { addMask(p, dir, "rw"); p.AcceptGaps = []string{tier.GapMasks} }, ""},
		{"mask in a system directory", 7, func(p *isolation.Plan) { addMask(p, "/usr/share", "ro") }, "beneath /usr"},
		{"read grant inside a write grant", 7, func(p *isolation.Plan) { addBind(p, dir, "rw"); addBind(p, dir+"/sub", "ro") }, "mask at " + dir + "/sub"},
		{"write grant inside a read grant", 7, func(p *isolation.Plan) { addBind(p, dir, "ro"); addBind(p, dir+"/sub", "rw") }, ""},
		{"tool tmpfs", 7, func(p *isolation.Plan) {
			p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: "/data", Type: "tmpfs", Options: []string{"rw"}})
		}, "mounts nothing"},
		// The spec's user is what runs: as root one of the run's own,
		// else this process's; the tier changes neither.
		{"root's uid", 7, func(p *isolation.Plan) { p.Spec.Process.User = specs.User{} }, "uid 0, gid 0 in the landlock tier"},
		{"nobody", 7, func(p *isolation.Plan) { p.Spec.Process.User = specs.User{UID: 65534, GID: 65534} }, "uid 65534, gid 65534 in the landlock tier"},
		{"another gid", 7, func(p *isolation.Plan) { p.Spec.Process.User.GID++ }, "in the landlock tier"},
	}
	if os.Geteuid() != 0 {
		// A tool sharing the user's uid needs signal scoping.
		cases = append(cases, struct {
			name   string
			abi    int
			edit   func(p *isolation.Plan)
			refuse string
		}{"abi 5 shared uid", 5, nil, "signal scoping"}, struct {
			name   string
			abi    int
			edit   func(p *isolation.Plan)
			refuse string
		}{"abi 5 accepted", 5, func(p *isolation.Plan) { p.AcceptGaps = []string{tier.GapSignals} }, ""})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := plan(t, isolation.Limits{})
			if c.edit != nil {
				c.edit(p)
			}
			b := &landlock.Backend{ABI: func() int { return c.abi }}
			err := b.Check(context.Background(), p)
			switch {
			case c.refuse == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.refuse != "" && (err == nil || !strings.Contains(err.Error(), c.refuse)):
				t.Fatalf("want a refusal with %q, got %v", c.refuse, err)
			case c.refuse != "" && !errors.Is(err, isolation.ErrUnsupported) && !errors.Is(err, landlock.ErrBadPlan):
				t.Fatalf("refusal is neither unsupported nor a bad plan: %v", err)
			}
		})
	}
}

// The signal-scoping refusal for a tool sharing the user's uid, whatever
// uid this test runs as.
func TestSignalScopingRefusal(t *testing.T) {
	for _, c := range []struct {
		abi    int
		shared bool
		accept []string
		refuse bool
	}{
		{1, true, nil, true}, {2, true, nil, true}, {4, true, nil, true}, {5, true, nil, true},
		{6, true, nil, false}, {7, true, nil, false},
		{2, false, nil, false}, {4, true, []string{tier.GapSignals}, false},
		{0, false, []string{tier.GapSignals, tier.GapMasks}, true},
	} {
		r := landlock.ABIRefusal(c.abi, c.shared, c.accept)
		if (r != nil) != c.refuse {
			t.Errorf("abi %d shared %v accept %v: refusal %v", c.abi, c.shared, c.accept, r)
		}
	}
}

func addBind(p *isolation.Plan, path, mode string) {
	os.MkdirAll(path, 0o755)
	if mode == "rw" {
		os.Chmod(path, 0o777)
	}
	p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: path, Source: path, Type: "bind", Options: []string{"bind", mode}})
}

func addMask(p *isolation.Plan, dir, mode string) {
	addBind(p, dir, mode)
	p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: dir + "/hidden", Type: "tmpfs", Options: []string{"ro", "size=4k"}})
}

// gc removes the scratch directory of a run that is not live, and only
// with a liveness answer.
func TestGCScratch(t *testing.T) {
	testenv.NeedE2E(t) // the process tier's gc of this host's cgroups runs too
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	id := "20260101T000000-0123456789ab"
	dir := landlock.ScratchDir(tmp, id)
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, "sub"), 0) // as a tool may leave it
	b := landlock.New()
	// Every other run counts as live: this test reaps nothing of theirs.
	onlyMine := func(run string) bool { return run != id }
	if _, err := b.GC(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal("removed without a liveness answer")
	}
	if _, err := b.GC(context.Background(), func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal("removed a live run's scratch directory")
	}
	removed, err := b.GC(context.Background(), onlyMine)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) || !slices.Contains(removed, "scratch directory "+dir) {
		t.Fatalf("not removed: %v %v", removed, err)
	}
}

// A warm sandbox serves only plans of its key and its run id; a refused
// claim, and a discarded sandbox, leave no process behind.
func TestWarmRefusals(t *testing.T) {
	testenv.NeedE2E(t)
	ctx := context.Background()
	b := landlock.New()
	p := plan(t, isolation.Limits{})
	if _, ok := b.WarmKey(&isolation.Plan{Tier: isolation.TierProcess, Spec: p.Spec}); ok {
		t.Fatal("a process-tier plan has a landlock warm key")
	}
	key, ok := b.WarmKey(p)
	if !ok {
		t.Fatal("no warm key")
	}
	if _, err := b.Prestart(ctx, `{"tier":"process"}`, p.RunID, t.TempDir()); !errors.Is(err, landlock.ErrBadPlan) {
		t.Fatalf("prestart with another tier's key: %v", err)
	}
	w, err := b.Prestart(ctx, key, p.RunID, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other := plan(t, isolation.Limits{})
	if _, err := w.Claim(ctx, other); !errors.Is(err, landlock.ErrBadPlan) {
		t.Fatalf("claim with another run's plan: %v", err)
	}
	if _, err := w.Claim(ctx, p); !errors.Is(err, isolation.ErrClosed) {
		t.Fatalf("second claim of a consumed sandbox: %v", err)
	}
	if _, err := os.Stat(p.Scratch); !os.IsNotExist(err) {
		t.Fatalf("a refused claim made the scratch directory: %v", err)
	}
	w, err = b.Prestart(ctx, key, p.RunID, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Discard(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Discard(ctx); err != nil {
		t.Fatalf("second discard: %v", err)
	}
}
