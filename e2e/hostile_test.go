package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

// tiers lists the sandboxing tiers every hostile test runs against, with
// the same expectations.
var tiers = []string{"process", "container"}

// runscTier is the container tier with runtime runsc (gVisor): a tool for
// it says isolation: container and sandboxed: runtime: runsc.
const runscTier = "container-runsc"

// conformanceTiers are the tiers of the hostile and egress suites: every
// tier, the container tier under gVisor, and the Kubernetes backend (its
// pods run under gVisor too), with the same expectations.
var conformanceTiers = append(append([]string{}, tiers...), runscTier, kubeTier)

// gvisor reports whether tier's sandboxes run under gVisor, whose /proc
// and /dev differ from Linux's in ways the tests name.
func gvisor(tier string) bool { return tier == runscTier || tier == kubeTier }

// tierYAML returns the isolation a tool for tier names, and the runtime
// it asks for ("" for the engine's default).
func tierYAML(tier string) (isolation, runtime string) {
	switch tier {
	case runscTier:
		return "container", "runsc"
	case kubeTier:
		// The backend and its RuntimeClass come from the environment
		// (useCluster), as an operator would set them.
		return "container", ""
	}
	return tier, ""
}

// toolYAML writes a one-step bash tool for tier into dir and returns its path.
// extra is YAML appended at the top level (parameters, resources, ...).
func toolYAML(t *testing.T, dir, tier, name, script string, perms []string, extra string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\ndescription: e2e tool %s\ntags: [read]\n", name, name)
	b.WriteString("bash: |\n")
	for _, l := range strings.Split(strings.TrimRight(script, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	iso, runtime := tierYAML(tier)
	fmt.Fprintf(&b, "security:\n  isolation: %s\n", iso)
	if len(perms) > 0 {
		b.WriteString("  required-permissions:\n")
		for _, p := range perms {
			fmt.Fprintf(&b, "    - %q\n", p)
		}
	}
	if runtime != "" {
		// Into the tool's own sandboxed: block when extra has one.
		if strings.HasPrefix(extra, "sandboxed:\n") || strings.Contains(extra, "\nsandboxed:\n") {
			extra = strings.Replace("\n"+extra, "\nsandboxed:\n", "\nsandboxed:\n  runtime: "+runtime+"\n", 1)[1:]
		} else {
			extra += "sandboxed:\n  runtime: " + runtime + "\n"
		}
	}
	b.WriteString(extra)
	p := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// forTiers runs f once per tier as a subtest, with the leak check.
func forTiers(t *testing.T, f func(t *testing.T, tier string)) {
	forTierList(t, tiers, f)
}

// forConformance is forTiers over conformanceTiers: the hostile and egress
// suites also run on the container tier under runsc.
func forConformance(t *testing.T, f func(t *testing.T, tier string)) {
	forTierList(t, conformanceTiers, f)
}

// runTiers returns which of tiers this run tests: all of them, except that
// SANDBOXED_E2E_TIERS (comma-separated) narrows them for a developer's
// quick run and for the cgroup v2 VM, which has no Docker engine (CI always
// runs every tier; a test keeps only the named tiers it has), and that the
// rootless mode is the process tier's: the container tier needs the Docker
// engine's socket, which is root's to give.
func runTiers(tiers []string) []string {
	run := tiers
	if only := os.Getenv("SANDBOXED_E2E_TIERS"); only != "" && !testenv.CI() {
		named := strings.Split(only, ",")
		run = slices.DeleteFunc(slices.Clone(tiers), func(t string) bool { return !slices.Contains(named, t) })
	}
	if env.runner != nil {
		run = []string{"process"}
	}
	return run
}

func forTierList(t *testing.T, tiers []string, f func(t *testing.T, tier string)) {
	forEachTier(t, runTiers(tiers), f)
}

// forEachTier runs f as a subtest of each of tiers, as they are.
func forEachTier(t *testing.T, tiers []string, f func(t *testing.T, tier string)) {
	for _, tier := range tiers {
		t.Run(tier, func(t *testing.T) {
			if tier == kubeTier {
				useCluster(t)
			}
			begin(t)
			f(t, tier)
		})
	}
}

func expect(t *testing.T, r result, c cli, status string, exit int) {
	t.Helper()
	if r.Status != status || c.code != exit {
		t.Fatalf("status %q exit %d, want %q %d\nstdout: %s\nstderr: %s\nerror: %+v",
			r.Status, c.code, status, exit, r.Stdout, r.Stderr, r.Error)
	}
}

func TestWritesOutsideGrantsFail(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"out/.keep": ""})
		tool := toolYAML(t, dir, tier, "writer", `
echo granted > out/ok.txt && echo WROTE-GRANTED
for p in ./evil.txt /etc/evil.txt /usr/evil.txt /evil.txt /var/evil.txt /proc/evil.txt /dev/evil.txt; do
  if (echo x > "$p") 2>/dev/null; then echo "ESCAPED $p"; fi
done
echo private > /tmp/evil.txt && echo PRIVATE-TMP-OK
echo done`, []string{"filesystem:write:./out"}, "")
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "WROTE-GRANTED") { // positive control
			t.Fatalf("the granted write did not happen: %s %s", r.Stdout, r.Stderr)
		}
		escaped := r.Stdout
		if gvisor(tier) {
			// gVisor does not apply the read-only path to /dev: its /dev is
			// the Sentry's own in-memory filesystem, inside the sandbox's
			// memory limit, and reaches no host file. The equivalent check
			// is that nothing appeared in the host's /dev (below).
			escaped = strings.ReplaceAll(escaped, "ESCAPED /dev/evil.txt", "")
		}
		if strings.Contains(escaped, "ESCAPED") {
			t.Errorf("writes escaped the grant:\n%s", r.Stdout)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "out/ok.txt")); err != nil || string(b) != "granted\n" {
			t.Errorf("granted file on the host: %q %v", b, err)
		}
		if !strings.Contains(r.Stdout, "PRIVATE-TMP-OK") {
			t.Errorf("the sandbox's private /tmp is not writable: %s", r.Stdout)
		}
		for _, p := range []string{filepath.Join(dir, "evil.txt"), "/etc/evil.txt", "/usr/evil.txt", "/evil.txt", "/var/evil.txt", "/tmp/evil.txt", "/dev/evil.txt"} {
			if _, err := os.Stat(p); err == nil {
				os.Remove(p)
				t.Errorf("%s appeared on the host", p)
			}
		}
	})
}

func TestSymlinkInGrantCannotReachOut(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		secretDir := workdir(t, map[string]string{"secret.txt": "TOP-SECRET\n"})
		dir := workdir(t, map[string]string{"data/ok.txt": "VISIBLE\n", "secret.txt": "NEIGHBOUR-SECRET\n"})
		must(t, os.Symlink(filepath.Join(secretDir, "secret.txt"), filepath.Join(dir, "data/abs")))
		must(t, os.Symlink("../secret.txt", filepath.Join(dir, "data/rel")))
		must(t, os.Symlink(secretDir, filepath.Join(dir, "data/dirlink")))
		tool := toolYAML(t, dir, tier, "reader", `
cat data/ok.txt
cat data/abs data/rel data/dirlink/secret.txt 2>/dev/null
echo x > data/dirlink/planted 2>/dev/null
echo end`, []string{"filesystem:read:./data"}, "")
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "VISIBLE") {
			t.Fatalf("the granted read did not happen: %s %s", r.Stdout, r.Stderr)
		}
		if strings.Contains(r.Stdout, "SECRET") {
			t.Errorf("a symlink reached outside the grant:\n%s", r.Stdout)
		}
		if _, err := os.Stat(filepath.Join(secretDir, "planted")); err == nil {
			t.Errorf("a write through a symlink reached the host")
		}
	})
}

func TestHostIsInvisible(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HOST-LOOPBACK\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	t.Setenv("SANDBOXED_E2E_SECRET_TOKEN", "hunter2-host-secret")
	forConformance(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, tier, "snoop", fmt.Sprintf(`
echo POSITIVE
ls -A /root 2>/dev/null | head -3 | sed 's/^/ROOT:/'
ls -A /home 2>/dev/null | head -3 | sed 's/^/HOME:/'
env | grep -i hunter2 && echo LEAKED-ENV
for s in /var/run/docker.sock /run/docker.sock; do [ -e "$s" ] && echo "SOCKET $s"; done
set -- /proc/[0-9]*; echo "PROCS $#"
grep -v -E '^ *(Inter|face|lo:)' /proc/net/dev | sed 's/^/IFACE:/'
(exec 3<>/dev/tcp/127.0.0.1/%d && cat <&3) 2>/dev/null | sed 's/^/NET:/'
(exec 3<>/dev/tcp/198.51.100.1/80) 2>/dev/null && echo ROUTE
true`, port), nil, "")
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "POSITIVE") {
			t.Fatalf("the tool did not run: %s %s", r.Stdout, r.Stderr)
		}
		for _, bad := range []string{"ROOT:", "HOME:", "LEAKED-ENV", "hunter2", "SOCKET", "IFACE:", "NET:", "ROUTE"} {
			if strings.Contains(r.Stdout, bad) {
				t.Errorf("host visible (%s):\n%s", bad, r.Stdout)
			}
		}
		var n int
		fmt.Sscanf(r.Stdout[strings.Index(r.Stdout, "PROCS ")+6:], "%d", &n)
		if n == 0 || n > 8 {
			t.Errorf("%d processes visible in /proc; the host's must not be", n)
		}
	})
}

// perlSyscall is a shell snippet that prints NAME:OK when the syscall
// succeeded and NAME:EPERM-like otherwise; perl (perl-base) is essential
// on Debian, so it is on the host and in the runner image.
func perlSyscall(name string, nr int, args string) string {
	return fmt.Sprintf(`perl -e '$r = syscall(%d, %s); print "%s:", ($r == -1 ? "BLOCKED($!)" : "OK"), "\n"'`, nr, args, name)
}

func TestPrivilegedOperationsFail(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, tier, "escalate", strings.Join([]string{
			`echo POSITIVE`,
			`mkdir -p /tmp/m && mount -t tmpfs none /tmp/m 2>/dev/null && echo MOUNTED`,
			perlSyscall("ptrace", 101, "0, 0, 0, 0"),
			`(echo h > /proc/sysrq-trigger) 2>/dev/null && echo SYSRQ`,
			`[ -n "$(head -c 16 /proc/kcore 2>/dev/null | od -An -c)" ] && echo KCORE`,
			`for f in /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/pids.max /sys/fs/cgroup/memory/memory.limit_in_bytes; do (echo 1 > $f) 2>/dev/null && echo "CGROUP-WRITE $f"; done`,
			`unshare -U true 2>/dev/null && echo UNSHARED`,
			`unshare -n true 2>/dev/null && echo UNSHARED-NET`,
			`hostname evil 2>/dev/null && echo HOSTNAME`,
			`grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status`,
			`id -u | sed 's/^/UID:/'`,
			`perl -e 'print "NNP:", syscall(157, 39, 0, 0, 0, 0), "\n"'`, // prctl(PR_GET_NO_NEW_PRIVS)
		}, "\n"), nil, "")
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "POSITIVE") || !strings.Contains(r.Stdout, "ptrace:") {
			t.Fatalf("the tool did not run: %s %s", r.Stdout, r.Stderr)
		}
		for _, bad := range []string{"MOUNTED", "ptrace:OK", "SYSRQ", "KCORE", "CGROUP-WRITE", "UNSHARED", "HOSTNAME"} {
			if strings.Contains(r.Stdout, bad) {
				t.Errorf("%s succeeded inside the sandbox:\n%s", bad, r.Stdout)
			}
		}
		wants := []string{"CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2", "NNP:1"}
		if gvisor(tier) {
			// gVisor's /proc/self/status has no NoNewPrivs line: the
			// prctl answer (NNP:1) is the check there.
			wants = slices.DeleteFunc(wants, func(w string) bool { return w == "NoNewPrivs:\t1" })
		}
		for _, want := range wants {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("want %q in /proc/self/status:\n%s", want, r.Stdout)
			}
		}
	})
}

func TestReducedRunsAsNobody(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, tier, "whoami", `echo "UID:$(id -u) GID:$(id -g)"`, nil,
			"  execution-privilege: reduced\n")
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "UID:65534 GID:65534") {
			t.Errorf("reduced run: %q", r.Stdout)
		}
	})
}

// TestMemoryBombIsOOM: the memory limit's kill is reported as oom on every
// tier. Under gVisor the kill may end the whole sandbox (the host's OOM
// killer picks the Sentry, which holds the pod's memory) and nothing inside
// survives to say it: the container tier reads the engine's record of the
// kill, the kubernetes tier the container's status (OOMKilled), which the
// test cluster's runtime reports as gVisor's own shim does (runsc.sh).
func TestMemoryBombIsOOM(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, tier, "membomb", `echo STARTED; perl -e '$x = "x" x (512*1024*1024); print length($x)'`, nil,
			"resources:\n  max-memory: 64MB\n  timeout: 60000\n")
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "oom", 137)
		if !strings.Contains(r.Stdout, "STARTED") {
			t.Fatalf("the tool did not run: %s", r.Stderr)
		}
		if r.Error == nil || !strings.Contains(r.Error.Message, "64") {
			t.Errorf("the OOM message does not name the limit: %+v", r.Error)
		}
	})
}

// A tool's max-memory is the tool's on every backend: a 64MB tool may use
// most of it (under gVisor the pod's limit holds the runtime's own memory
// above the tool's, which it did not: 30 MB was killed there).
func TestMemoryLimitIsTheTools(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, tier, "memuse", `python3 -c 'b = bytearray(36 << 20); print("USED", len(b))'`, nil,
			"resources:\n  max-memory: 64MB\n  timeout: 60000\n")
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "USED 37748736") {
			t.Errorf("the tool did not use its 36 MB: %s %s", r.Stdout, r.Stderr)
		}
	})
}

func TestForkBombIsContained(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, tier, "forkbomb", `echo STARTED; bomb() { bomb | bomb & }; bomb; sleep 3; echo SURVIVED`, nil,
			"timeout: 8000\nsandboxed:\n  pids-limit: 64\n")
		t0 := time.Now()
		r, c := runJSON(t, dir, tool)
		if !strings.Contains(r.Stdout, "STARTED") {
			t.Fatalf("the tool did not run: %+v %s", r, c.stderr)
		}
		// The sandbox outlasts the bomb: the tool's forks fail inside it,
		// and the run ends as the tool's own (under runsc, a host task
		// bound below the tool's would kill gVisor's Sentry instead).
		if r.ExitCode == 125 || r.Status == "error" {
			t.Errorf("the sandbox did not outlast the fork bomb: %s exit %d: %+v\n...%s", r.Status, r.ExitCode, r.Error, r.Stderr[max(0, len(r.Stderr)-300):])
		}
		if time.Since(t0) > 90*time.Second {
			t.Errorf("the fork bomb run took %s", time.Since(t0))
		}
		// The host stays responsive.
		t1 := time.Now()
		must(t, exec.Command("/bin/true").Run())
		if d := time.Since(t1); d > 2*time.Second {
			t.Errorf("host unresponsive: /bin/true took %s", d)
		}
	})
}

// TestPidsLimitBoundsProcesses: a tool with sandboxed: {pids-limit: N} has
// at most N processes and threads at once, on every tier. perl (the step's
// one command, which bash executes in its place) forks up to 3N children
// that sleep and counts those that started: with perl itself that is at
// most N-1. The control: at least N/2 start, so the limit is the tool's
// and not eaten by the sandbox's own tasks. Those count within N on the
// local tiers (the init's threads are in the run's cgroup, but for the
// spare ones it keeps, sbinit.SpareThreads, which the limit adds) and
// beside it under gVisor, where the init sets RLIMIT_NPROC of N plus its
// own tasks.
func TestPidsLimitBoundsProcesses(t *testing.T) {
	const n = 24
	forConformance(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, tier, "pids", fmt.Sprintf(`perl -e '
my @kids;
for (1..%d) { my $p = fork(); last unless defined $p; if ($p == 0) { sleep 60; exit 0 } push @kids, $p }
print "STARTED:", scalar(@kids), "\n";
kill "KILL", @kids; waitpid($_, 0) for @kids;'`, 3*n), nil, fmt.Sprintf("sandboxed:\n  pids-limit: %d\n", n))
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "ok", 0)
		_, count, _ := strings.Cut(r.Stdout, "STARTED:")
		started, err := strconv.Atoi(strings.TrimSpace(count))
		if err != nil {
			t.Fatalf("the tool did not count its children: %q %s", r.Stdout, r.Stderr)
		}
		t.Logf("%s: %d of %d children started under pids-limit %d", tier, started, 3*n, n)
		if started > n-1 {
			t.Errorf("%d children started beside perl: more than pids-limit %d processes", started, n)
		}
		if started < n/2 {
			t.Errorf("only %d children started under pids-limit %d: the sandbox's own tasks take the tool's", started, n)
		}
	})
}

func TestTimeoutLeavesNoProcess(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, tier, "stubborn",
			`trap '' TERM; setsid sleep 4242 & echo STARTED; while true; do sleep 1; done`, nil, "timeout: 1500\n")
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "timeout", 124)
		if !strings.Contains(r.Stdout, "STARTED") {
			t.Fatalf("the tool did not run: %s", r.Stderr)
		}
		assertNoSleep(t, "4242")
	})
}

func TestDaemonAfterSuccessIsKilled(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, tier, "daemon", `setsid sleep 4343 >/dev/null 2>&1 < /dev/null & echo STARTED`, nil, "")
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "STARTED") {
			t.Fatalf("the tool did not run: %s", r.Stderr)
		}
		assertNoSleep(t, "4343")
	})
}

func assertNoSleep(t *testing.T, arg string) {
	t.Helper()
	out, _ := exec.Command("pgrep", "-f", "sleep "+arg).Output()
	if len(strings.TrimSpace(string(out))) > 0 {
		exec.Command("pkill", "-9", "-f", "sleep "+arg).Run()
		t.Errorf("a process of the run survived it: sleep %s (pids %s)", arg, strings.TrimSpace(string(out)))
	}
}

func TestHugeOutputKeepsMemoryBounded(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, tier, "flood", `head -c 200000000 /dev/zero | tr '\0' x; echo; echo END >&2`, nil, "timeout: 120000\n")
		cmd := command("run", "--json", tool)
		cmd.Dir = dir
		cmd.Env = runEnv()
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if !strings.Contains(string(out), `"stdout_truncated": true`) && !strings.Contains(string(out), `"stdout_truncated":true`) {
			t.Errorf("200 MB of output was not flagged as truncated")
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		if rss := ru.Maxrss * 1024; rss > 100<<20 {
			t.Errorf("sandboxed peak RSS %d MB with 200 MB of output; want < 100 MB", rss>>20)
		} else {
			t.Logf("peak RSS %.1f MB", float64(rss)/(1<<20))
		}
	})
}

func TestParameterInjectionIsLiteral(t *testing.T) {
	payloads := []string{
		`$(touch /tmp/PWNED-a)`, "`touch /tmp/PWNED-b`", `; touch /tmp/PWNED-c`, `| touch /tmp/PWNED-d`,
		`&& touch /tmp/PWNED-e`, "a\ntouch /tmp/PWNED-f", `'; touch /tmp/PWNED-g; '`, `"; touch /tmp/PWNED-h; "`,
		`-rf`, `$HOME ${PATH} \ * ~`,
	}
	forConformance(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		extra := "parameters:\n  MSG:\n    type: string\n    description: text to print\n    required: true\n"
		tool := toolYAML(t, dir, tier, "echoer", `printf '[%s]' {MSG}; printf '[%s]' "{MSG}"; printf '[%s]' '{MSG}'; touch /tmp/RAN`, nil, extra)
		for _, p := range payloads {
			r, c := runJSON(t, dir, tool, "MSG="+p)
			expect(t, r, c, "ok", 0)
			want := strings.Repeat("["+p+"]", 3)
			if r.Stdout != want {
				t.Errorf("payload %q came out as %q, want %q", p, r.Stdout, want)
			}
		}
		matches, _ := filepath.Glob("/tmp/PWNED-*")
		if len(matches) > 0 {
			for _, m := range matches {
				os.Remove(m)
			}
			t.Errorf("injection ran on the host: %v", matches)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestGitMetadataStaysReadOnlyInAWritableGrant(t *testing.T) {
	forConformance(t, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{".git/config": "[core]\n", ".git/hooks/.keep": "", "sub/.git/config": "[core]\n"})
		tool := toolYAML(t, dir, tier, "gitmeta", `
echo ok > file.txt && echo WROTE
mv .git .git.old 2>/dev/null && echo MOVED-GIT
mv sub sub2 2>/dev/null && echo MOVED-SUB
echo "fsmonitor = evil" >> .git/config 2>/dev/null && echo WROTE-CONFIG
echo x > .git/hooks/pre-commit 2>/dev/null && echo WROTE-HOOK
echo x > sub/.git/config 2>/dev/null && echo WROTE-SUBCONFIG
true`, []string{"filesystem:write:."}, "")
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "WROTE") {
			t.Fatalf("the granted write did not happen: %s %s", r.Stdout, r.Stderr)
		}
		for _, bad := range []string{"MOVED-GIT", "MOVED-SUB", "WROTE-CONFIG", "WROTE-HOOK", "WROTE-SUBCONFIG"} {
			if strings.Contains(r.Stdout, bad) {
				t.Errorf("%s inside a writable grant:\n%s", bad, r.Stdout)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(dir, ".git/config")); string(b) != "[core]\n" {
			t.Errorf(".git/config changed on the host: %q", b)
		}
	})
}

// TestNoMultipathTCPNoListening: in the process tier, where Landlock is the
// second wall, no tool gets a Multipath TCP socket, which Landlock's TCP
// rules do not cover (the seccomp filter refuses it with EPROTONOSUPPORT),
// and no tool may bind a TCP port, even on its own loopback (EACCES). The
// host itself opens a Multipath TCP socket: the refusal is the sandbox's,
// not the kernel's. The container tier has neither wall (no Landlock, so
// nothing for Multipath TCP to get around; its network is none): the probe
// only has to run there.
func TestNoMultipathTCPNoListening(t *testing.T) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 262)
	testenv.Need(t, "a kernel with Multipath TCP enabled (net.mptcp.enabled=1)", err)
	syscall.Close(fd)
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, tier, "sockets", `
perl -e 'use Socket; if (socket(my $s, PF_INET, SOCK_STREAM, 262)) { print "MPTCP-OPEN\n" } else { printf "mptcp=%d\n", $!+0 }'
perl -e 'use Socket; socket(my $s, PF_INET, SOCK_STREAM, 0) or die "socket: $!"; if (bind($s, pack_sockaddr_in(4000, inet_aton("127.0.0.1")))) { print "bind=ok\n" } else { printf "bind=%d\n", $!+0 }'
`, nil, "")
		r, c := runJSON(t, dir, tool)
		expect(t, r, c, "ok", 0)
		if tier == "process" && !strings.Contains(r.Stdout, "mptcp=93\n") {
			t.Errorf("Multipath TCP socket: want EPROTONOSUPPORT (93):\n%s\n%s", r.Stdout, r.Stderr)
		}
		if tier == "process" && !strings.Contains(r.Stdout, "bind=13\n") {
			t.Errorf("TCP bind in the process tier: want EACCES (13) from Landlock:\n%s\n%s", r.Stdout, r.Stderr)
		}
		if !strings.Contains(r.Stdout, "bind=") {
			t.Errorf("the bind probe did not run:\n%s\n%s", r.Stdout, r.Stderr)
		}
	})
}
