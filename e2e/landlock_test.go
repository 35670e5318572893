package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The landlock tier where CI jobs run: inside `docker run` with Docker's
// defaults (its seccomp profile and capabilities, a read-only cgroupfs, no
// user namespaces), as root and as an unprivileged user, with the host's
// Docker socket mounted into the job's container as CI jobs often have it.
// The job (landlockJob) runs sandboxed there and reports each case on a
// line; the hostile tool (landlockProbe) prints LEAK for every wall it
// got through.
func TestLandlockTierInDefaultContainer(t *testing.T) {
	begin(t)
	dir := workdir(t, map[string]string{
		"job.sh":              landlockJob,
		"probe.py":            landlockProbe,
		"policy.yaml":         landlockPolicy,
		"refuse.yaml":         "version: 1\nsources:\n  - scope: any\n    isolation:\n      without-namespaces: never\n",
		"cpus.yaml":           "version: 1\nsources:\n  - scope: any\n    isolation:\n      without-namespaces: landlock\nlimits:\n  cpus:\n    max: 1\n",
		"tools/hello.yaml":    mustRead(t, "../examples/tools/hello.yaml"),
		"tools/probe.yaml":    landlockTool("probe", "5000", "64MiB", "python3 /tmp/w/in/probe.py", "filesystem:read:/tmp/w/in", "filesystem:write:/tmp/w/out"),
		"tools/forkbomb.yaml": landlockTool("forkbomb", "3000", "64MiB", "bomb() { bomb | bomb & }; bomb; sleep 5"),
		"tools/memory.yaml": landlockTool("memory", "20000", "64MiB",
			`for i in 1 2 3 4; do python3 -c 'x = bytearray(400 << 20); print("ALLOCATED")' & done; wait; echo done`),
		"tools/daemon.yaml":  landlockTool("daemon", "5000", "64MiB", "setsid bash -c 'exec -a lldaemon sleep 1000' </dev/null >/dev/null 2>&1 & echo started"),
		"tools/timeout.yaml": landlockTool("slow", "1500", "64MiB", "sleep 31 & setsid bash -c 'exec -a llslow sleep 32' </dev/null >/dev/null 2>&1 & sleep 30"),
		"tools/network.yaml": landlockTool("network", "15000", "128MiB",
			"curl -sS http://web.test/; curl -s http://other.test/ | grep -q 'sandboxed egress proxy: refused' && echo other refused; curl -sS --noproxy '*' --max-time 3 http://"+webAddr+"/ || echo bypass refused",
			"network:external:web.test"),
		"tools/netprobe.yaml": landlockTool("netprobe", "20000", "128MiB", "python3 /tmp/w/in/netprobe.py", "filesystem:read:/tmp/w/in", "network:external:web.test"),
		"tools/netwait.yaml":  landlockTool("netwait", "15000", "64MiB", "sleep 4", "network:external:web.test"),
		"tools/netlong.yaml":  landlockTool("netlong", "60000", "64MiB", "sleep 40", "network:external:web.test"),
		"tools/oomscore.yaml": landlockTool("oomscore", "5000", "64MiB", "echo tool $(cat /proc/self/oom_score_adj); (echo daemon $(cat /proc/self/oom_score_adj))"),
		"tools/initkill.yaml": landlockTool("initkill", "60000", "64MiB",
			"bash -c 'exec -a llchild sleep 1000' & setsid bash -c 'exec -a llorphan sleep 1000' </dev/null >/dev/null 2>&1 & (setsid bash -c 'exec -a lldouble sleep 1000' </dev/null >/dev/null 2>&1 &) ; sleep 40"),
		"tools/localhost.yaml": landlockTool("localhost", "5000", "64MiB",
			"bash -c 'exec 3<>/dev/tcp/127.0.0.1/9090 && head -c 13 <&3'; echo; bash -c 'exec 3<>/dev/tcp/127.0.0.2/9090' 2>/dev/null || echo other address refused",
			"network:localhost:9090"),
		"tools/secrets.yaml": landlockTool("secrets", "5000", "64MiB",
			"cat /tmp/w/sec/readme.txt /tmp/w/sec/sub/notes.txt; ls -A /tmp/w/sec | grep -qx .env && echo listed .env; for f in .env id_rsa key.pem .aws/credentials sub/.env.local; do cat /tmp/w/sec/$f 2>/dev/null; done; echo END",
			"filesystem:read:/tmp/w/sec"),
		"tools/named.yaml": landlockTool("named", "5000", "64MiB", "tr a-z A-Z < /tmp/w/sec/.env", "filesystem:read:/tmp/w/sec/.env"),
		"tools/limits.yaml": landlockTool("limits", "5000", "64MiB",
			"awk '/^Max processes/ {print \"NPROC\", $3} /^Max data size/ {print \"DATA\", $4}' /proc/self/limits; echo \"UID $(id -u)\""),
		"netprobe.py": landlockNetProbe,
		"hosts":       mustRead(t, testNet.hostsFile),
	})
	sock := "/var/run/docker.sock"
	var st syscall.Stat_t
	if err := syscall.Stat(sock, &st); err != nil {
		t.Fatalf("the test mounts the host's Docker socket into the job: %v", err)
	}
	for _, user := range []string{"0", "1000"} {
		t.Run("user "+user, func(t *testing.T) {
			args := []string{"run", "--rm", "--user", user, "--group-add", fmt.Sprint(st.Gid),
				"-e", "JOB_SECRET=jobsecret-7d1f", "-e", "HOME=/tmp/home", "-e", "WEB_ADDR=" + webAddr,
				"-e", "SANDBOXED_TEST_HOSTS_FILE=/t/hosts",
				"-v", env.bin + ":/usr/local/bin/sandboxed:ro", "-v", dir + ":/t:ro", "-v", sock + ":" + sock,
				runnerImage, "bash", "/t/job.sh"}
			out, err := exec.Command("docker", args...).CombinedOutput()
			t.Logf("job output:\n%s", out)
			if err != nil {
				t.Fatalf("the job failed: %v", err)
			}
			lines := string(out)
			for _, want := range []string{
				"hello-landlock: Hello, Ada!", "hello-landlock: rc=0",
				"hello-process: rc=125", "hello-process-hint: isolation-landlock",
				"hello-unapproved: rc=126",
				"hello-refused: rc=126", "hello-refused-why: the policy", "hello-refused-asked: rc=126",
				"hello-cpus: rc=125", "hello-cpus-why: the policy's quota",
				"hello-none: Hello, Ada!", "hello-none: rc=0",
				"probe: rc=0", "probe: DONE",
				"forkbomb: ended", "memory: ended", "daemon: rc=0",
				"timeout: rc=124",
				"records: landlock other.test:80=deny web.test:80=allow",
				"network: " + strings.TrimSpace(webBody), "network: other refused", "network: bypass refused", "network: rc=0",
				"netprobe: PROXIED", "netprobe: DONE", "netprobe: rc=0",
				"netwait: rc=0", "relay: found", "killed: running", "killed: all gone", "killed: gc rc=0",
				"oomscore: tool 1000", "oomscore: daemon 1000", "oomscore-none: tool 1000", "oomscore-none: daemon 1000",
				"initkill landlock: running", "initkill landlock: controller ended", "initkill landlock: all gone",
				"initkill none: running", "initkill none: controller ended", "initkill none: all gone",
				"localhost: local service", "localhost: other address refused", "localhost: rc=0",
				"secrets: PLAIN-FILE", "secrets: SUB-FILE", "secrets: listed .env", "secrets: END", "secrets: rc=0",
				"named-unapproved: rc=126", "named: HIDDEN-7C2E-.ENV", "named: rc=0",
				"explain: landlock", "explain: masks", "explain: no Landlock rule",
				"limits: no cgroup", "limits: the plan's pids are the tool's", "limits: explain says the plan's",
				"limits: RLIMIT_NPROC holds the plan's", "limits: RLIMIT_DATA is the plan's", "limits: the plan's uid",
				"victim: alive", "init: alive",
				"left: none",
			} {
				if !strings.Contains(lines, want+"\n") {
					t.Errorf("job output lacks %q", want)
				}
			}
			for _, bad := range []string{"LEAK", "ALLOCATED", "jobsecret-7d1f", "LEFT ", "hidden-7c2e"} {
				if strings.Contains(lines, bad) {
					t.Errorf("job output has %q", bad)
				}
			}
		})
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// landlockTool is a definition that runs script with timeout (ms), a
// memory limit and perms.
func landlockTool(name, timeout, memory, script string, perms ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\ndescription: landlock tier case %s\nversion: 1.0.0\n", name, name)
	fmt.Fprintf(&b, "bash: |\n  %s\n", script)
	fmt.Fprintf(&b, "security:\n  execution-privilege: same-as-user\n  isolation: process\n")
	if len(perms) > 0 {
		b.WriteString("  required-permissions:\n")
		for _, p := range perms {
			fmt.Fprintf(&b, "    - %s\n", p)
		}
	}
	fmt.Fprintf(&b, "resources:\n  max-memory: %s\nsandboxed:\n  pids-limit: 32\ntimeout: %s\ntags: [run]\n", memory, timeout)
	return b.String()
}

// landlockPolicy lets the landlock tier stand in where the process tier
// cannot run, and allows the none tier (for its own case).
const landlockPolicy = `version: 1
sources:
  - scope: any
    trusted: true
    isolation:
      allowed: [none, process, container]
      minimum: none
      without-namespaces: landlock
paths:
  allow-write: [/tmp/w/out]
approval:
  auto-approve: [tier:read_only, tier:write, tier:execute, tier:external_api, tier:unknown]
`

// landlockJob is what a CI job does: its own processes and files, a
// listener on the loopback and on the container's address, then the runs.
const landlockJob = `set -u
mkdir -p $HOME /tmp/w/in /tmp/w/out && chmod 777 /tmp/w/out
cp /t/probe.py /t/netprobe.py /tmp/w/in/
echo jobsecret-7d1f > /tmp/jobsecret.txt
sleep 1000 & victim=$!
echo $victim > /tmp/w/in/victim
addr=$(python3 -c 'import socket; print(socket.gethostbyname(socket.gethostname()))')
echo "$addr" > /tmp/w/in/addr
python3 - <<'EOF' &
import socket, threading
def serve(host, port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port)); s.listen(8)
    while True:
        c, a = s.accept(); print("LEAK accepted a connection on %s:%d" % (host, port), flush=True); c.close()
for h in ("127.0.0.1", "127.0.0.2", open("/tmp/w/in/addr").read().strip()):
    for p in (3128, 8080):
        threading.Thread(target=serve, args=(h, p), daemon=True).start()
threading.Thread(target=serve, args=("127.0.0.2", 9090), daemon=True).start()
def greet():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 9090)); s.listen(8)
    while True:
        c, a = s.accept(); c.sendall(b"local service"); c.close()
threading.Thread(target=greet, daemon=True).start()
threading.Event().wait()
EOF
listener=$!
sleep 0.5
run() { name=$1; shift; out=$(sandboxed run "$@" 2>/tmp/err); rc=$?; printf '%s\n' "$out" | sed "s/^/$name: /"; sed "s/^/$name-stderr: /" /tmp/err; echo "$name: rc=$rc"; }
run hello-landlock --isolation landlock --approve isolation-landlock /t/tools/hello.yaml NAME=Ada
run hello-process /t/tools/hello.yaml NAME=Ada
grep -q 'approve isolation-landlock' /tmp/err && echo "hello-process-hint: isolation-landlock"
run hello-unapproved --isolation landlock /t/tools/hello.yaml NAME=Ada
run hello-refused --policy /t/refuse.yaml --approve all /t/tools/hello.yaml NAME=Ada
grep -q 'without-namespaces never' /tmp/err && echo "hello-refused-why: the policy"
run hello-refused-asked --policy /t/refuse.yaml --isolation landlock --approve all /t/tools/hello.yaml NAME=Ada
run hello-cpus --policy /t/cpus.yaml /t/tools/hello.yaml NAME=Ada
grep -q 'limits.cpus.default and limits.cpus.max to 0' /tmp/err && echo "hello-cpus-why: the policy's quota"
run hello-none --policy /t/policy.yaml --isolation none --approve isolation-none /t/tools/hello.yaml NAME=Ada
P="--policy /t/policy.yaml"
run probe $P /t/tools/probe.yaml
run forkbomb $P /t/tools/forkbomb.yaml; echo "forkbomb: ended"
run memory $P /t/tools/memory.yaml; echo "memory: ended"
run daemon $P /t/tools/daemon.yaml
run timeout $P /t/tools/timeout.yaml
run network $P /t/tools/network.yaml
# The result records each connection, as in the other tiers.
sandboxed run --json $P /t/tools/network.yaml 2>/dev/null | python3 -c 'import json, sys
r = json.load(sys.stdin)
print("records:", r["isolation"], " ".join(sorted("%s:%d=%s" % (e["host"], e["port"], e["verdict"]) for e in r["egress"])))'
run netprobe $P /t/tools/netprobe.yaml
run localhost $P --approve network:localhost:9090 /t/tools/localhost.yaml
# The secrets of a read grant: ordinary files read, secrets refused (their
# names listed), a secret named in the grant read once approved; explain
# reviews the landlock tier and lists the masks in its words.
mkdir -p /tmp/w/sec/sub /tmp/w/sec/.aws
echo PLAIN-FILE > /tmp/w/sec/readme.txt; echo SUB-FILE > /tmp/w/sec/sub/notes.txt
for f in .env id_rsa key.pem .aws/credentials sub/.env.local; do echo "hidden-7c2e-$(basename $f)" > /tmp/w/sec/$f; done
run secrets $P /t/tools/secrets.yaml
run named-unapproved $P /t/tools/named.yaml
run named $P --approve filesystem:read:/tmp/w/sec/.env /t/tools/named.yaml
sandboxed permissions explain --json $P /t/tools/secrets.yaml > /tmp/explain.json 2>/tmp/err || cat /tmp/err
grep -q '"value": *"landlock"' /tmp/explain.json && echo "explain: landlock"
grep -q 'secrets.mask\[0\] .env' /tmp/explain.json && grep -q 'secrets.mask\[11\] .aws' /tmp/explain.json && echo "explain: masks"
grep -q 'a mask inside a read grant gets no Landlock rule' /tmp/explain.json && echo "explain: no Landlock rule"
# Without a cgroup the plan names none, and its limits are what each
# command gets: RLIMIT_NPROC of the tool's pids (on top of what the uid
# runs already when the tool shares it), RLIMIT_DATA of its memory; the
# tool runs as the plan's uid, and explain says so.
sandboxed run $P /t/tools/limits.yaml > /tmp/limits.out 2>&1
sandboxed run --dump-plan $P /t/tools/limits.yaml > /tmp/lplan.json 2>/tmp/err || cat /tmp/err
sandboxed permissions explain --json $P /t/tools/limits.yaml > /tmp/lexplain.json 2>/tmp/err || cat /tmp/err
python3 - <<'EOF'
import json, os
plan = json.load(open("/tmp/lplan.json"))["plan"]
spec = plan["spec"]
ex = json.load(open("/tmp/lexplain.json"))
said = [m.get("value") for p in ex["resources"] if p["subject"] == "limits.pids" for m in p["mechanisms"] if m["kind"] == "rlimit"]
got = dict(l.split()[:2] for l in open("/tmp/limits.out") if l.split()[:1] in (["NPROC"], ["DATA"], ["UID"]))
print("limits-got:", got, "plan:", spec["linux"].get("cgroupsPath", ""), spec["linux"]["resources"], plan["limits"], spec["process"]["user"], "explain:", said)
pids = spec["linux"]["resources"]["pids"]["limit"]
if not spec["linux"].get("cgroupsPath"): print("limits: no cgroup")
if pids == plan["limits"]["pids"]: print("limits: the plan's pids are the tool's")
if said == [str(pids)]: print("limits: explain says the plan's")
own = os.getuid() == 0
if (own and int(got["NPROC"]) == pids) or (not own and int(got["NPROC"]) > pids): print("limits: RLIMIT_NPROC holds the plan's")
if int(got["DATA"]) == spec["linux"]["resources"]["memory"]["limit"]: print("limits: RLIMIT_DATA is the plan's")
lo, hi, u, pu = 0x5b000000, 0x5b000000 + (1 << 20), int(got["UID"]), spec["process"]["user"]["uid"]
if (own and lo <= u < hi and lo <= pu < hi) or (not own and u == pu == os.getuid()): print("limits: the plan's uid")
EOF
# Another process of the container that finds the relay the init listens
# on for a run with network gets nothing through it.
listening() { python3 -c 'import sys
for l in open("/proc/net/tcp").readlines()[1:]:
    f = l.split()
    if f[3] == "0A" and f[1].startswith("0100007F:"): print(int(f[1].split(":")[1], 16))' | sort; }
listening > /tmp/before
run netwait $P /t/tools/netwait.yaml > /tmp/netwait.out &
netwait=$!
sleep 2
for port in $(listening | comm -13 /tmp/before -); do
  echo "relay: found"
  curl -s --max-time 3 -x http://127.0.0.1:$port http://web.test/ | grep -q 'hello from' && echo "LEAK the relay on $port served the job"
  (exec 3<>/dev/tcp/127.0.0.1/$port; printf 'GET http://web.test/ HTTP/1.0\r\n\r\n' >&3; timeout 3 cat <&3) 2>/dev/null | grep -q 'hello from' && echo "LEAK the relay on $port served a raw request"
done
wait $netwait
cat /tmp/netwait.out
# The controller killed during a run with network: the init, its relay
# and supervisor, and the tool go with it; gc removes what it left.
sandboxed run $P /t/tools/netlong.yaml >/dev/null 2>&1 &
ctl=$!
sleep 1.5
alive() { for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c "^$1"; }
test "$(alive sandboxed-init)" -gt 0 && test "$(alive 'sleep 40')" -gt 0 && echo "killed: running"
kill -9 $ctl
wait $ctl
sleep 0.5
test "$(alive sandboxed-init)" = 0 && test "$(alive 'sleep 40')" = 0 && echo "killed: all gone"
sandboxed gc >/dev/null 2>&1; echo "killed: gc rc=$?"
# Outside a cgroup the OOM killer takes the tool before its init.
run oomscore $P --isolation landlock --approve isolation-landlock /t/tools/oomscore.yaml
run oomscore-none $P --isolation none --approve isolation-none /t/tools/oomscore.yaml
# The init killed outright (SIGKILL, as the OOM killer does) while its
# tool runs with daemons that left its session: no cgroup holds them, and
# the controller, their subreaper now, kills them and ends.
for tier in landlock none; do
  sandboxed run $P --isolation $tier --approve isolation-$tier /t/tools/initkill.yaml >/dev/null 2>&1 &
  ctl=$!
  for i in $(seq 50); do test "$(alive lldouble)" -gt 0 && break; sleep 0.1; done
  init=
  for p in /proc/[0-9]*; do
    c=$(tr '\0' ' ' < $p/cmdline 2>/dev/null) || continue
    case "$c" in sandboxed-init*) test "$(awk '{print $4}' $p/stat)" = $ctl && init=${p#/proc/};; esac
  done
  test -n "$init" && test "$(alive llchild)$(alive llorphan)$(alive lldouble)" = 111 && echo "initkill $tier: running"
  kill -9 $init
  for i in $(seq 100); do kill -0 $ctl 2>/dev/null || break; sleep 0.1; done
  kill -0 $ctl 2>/dev/null || echo "initkill $tier: controller ended"
  wait $ctl
  test "$(alive llchild)$(alive llorphan)$(alive lldouble)$(alive 'sleep 40')" = 0000 && echo "initkill $tier: all gone"
  sandboxed gc >/dev/null 2>&1
done
kill -0 $victim && echo "victim: alive"
kill -0 1 && echo "init: alive"
kill $listener $victim
sleep 0.2
left=
for p in /proc/[0-9]*; do
  c=$(tr '\0' ' ' < $p/cmdline 2>/dev/null) || continue
  case "$c" in *sandboxed*|*lldaemon*|*llslow*|*"sleep 3"*|*"sleep 4"*|*probe.py*|*bytearray*|*bomb*) left="$left $c"; echo "LEFT $c";; esac
done
ls /tmp | grep sandboxed-scratch && left="$left scratch"
# The runs' host directories (the proxy's socket among them), the killed
# run's removed by gc.
for d in /run/sandboxed /tmp/sandboxed-$(id -u); do
  ls "$d" 2>/dev/null | grep -E '^[0-9]{8}T[0-9]{6}-' | sed "s|^|LEFT $d/|" | grep . && left="$left hostdir"
done
test -z "$left" && echo "left: none"
exit 0
`

// landlockProbe is the hostile tool: each wall it gets through is a LEAK
// line. It runs as python3 from a read grant.
const landlockProbe = `import os, resource, signal, socket
def leak(what): print("LEAK " + what, flush=True)
def refused(what, f):
    try:
        f()
    except OSError:
        return
    leak(what)
secret = "jobsecret-7d1f"
refused("read a file of the job outside the grants", lambda: open("/tmp/jobsecret.txt").read())
refused("list /tmp", lambda: os.listdir("/tmp"))
refused("list the job's home", lambda: os.listdir(os.path.dirname(os.environ["HOME"])))
refused("write /tmp", lambda: open("/tmp/probe-leak", "w"))
refused("write a read grant", lambda: open("/tmp/w/in/probe-leak", "w"))
open("/tmp/w/out/ok", "w").write("ok")
refused("chown in a write grant", lambda: os.chown("/tmp/w/out/ok", os.getuid(), os.getgid()))
refused("truncate by path outside the grants", lambda: os.truncate("/tmp/jobsecret.txt", 0))
if secret in repr(dict(os.environ)):
    leak("the job's environment")
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            if secret in open("/proc/%s/environ" % pid).read():
                leak("environ of pid " + pid)
        except OSError:
            pass
victim = int(open("/tmp/w/in/victim").read())
for pid in (1, victim):
    refused("read the memory of pid %d" % pid, lambda: open("/proc/%d/mem" % pid, "rb").read(1))
refused("signal a process of the job", lambda: os.kill(victim, signal.SIGKILL))
refused("signal the container's init", lambda: os.kill(1, signal.SIGKILL))
inits = [int(p) for p in os.listdir("/proc") if p.isdigit() and open("/proc/%s/cmdline" % p, "rb").read().startswith(b"sandboxed-init")]
if not inits:
    leak("no sandbox init found to try")
for pid in inits:
    refused("signal the sandbox init", lambda: os.kill(pid, signal.SIGKILL))
    refused("read the sandbox init's environment", lambda: open("/proc/%d/environ" % pid).read())
    refused("take the sandbox init's descriptors (RLIMIT_NOFILE 0)", lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (0, 0)))
    refused("starve the sandbox init (SCHED_IDLE)", lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)))
    refused("lower the sandbox init's priority", lambda: os.setpriority(os.PRIO_PROCESS, pid, 19))
refused("limit a process of the job", lambda: resource.prlimit(victim, resource.RLIMIT_NOFILE, (0, 0)))
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
os.nice(1)
addr = open("/tmp/w/in/addr").read().strip()
for host in ("127.0.0.1", addr):
    for port in (3128, 8080):
        refused("tcp to %s:%d" % (host, port), lambda: socket.create_connection((host, port), timeout=2))
refused("a unix socket", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
refused("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
refused("a datagram socket pair", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))
a, b = socket.socketpair()
a.send(b"x"); assert b.recv(1) == b"x"
if os.path.exists("/var/run/docker.sock"):
    refused("the docker socket", lambda: socket.socket(socket.AF_UNIX).connect("/var/run/docker.sock"))
print("DONE", flush=True)
`

// landlockNetProbe is the hostile tool with a network grant: the proxy
// (127.0.0.1:3128, where its variables point, a listener of the job's
// there notwithstanding) serves it; every other way out is a LEAK line.
const landlockNetProbe = `import os, socket
def leak(what): print("LEAK " + what, flush=True)
def refused(what, f):
    try:
        f()
    except OSError:
        return
    leak(what)
def get(s):
    s.sendall(b"GET http://web.test/ HTTP/1.0\r\nHost: web.test\r\n\r\n")
    b = b""
    while True:
        d = s.recv(4096)
        if not d:
            return b
        b += d
assert os.environ["HTTP_PROXY"] == "http://127.0.0.1:3128", os.environ["HTTP_PROXY"]
# create_connection with a timeout: a non-blocking socket, polled.
if b"hello from the test host" in get(socket.create_connection(("127.0.0.1", 3128), timeout=5)):
    print("PROXIED", flush=True)
web = os.environ.get("WEB_ADDR", "198.51.100.2")
addr = open("/tmp/w/in/addr").read().strip()
for host, port in (("127.0.0.2", 3128), (addr, 3128), ("0.0.0.0", 3128), ("127.0.0.1", 8080), (web, 80), (web, 443)):
    refused("tcp to %s:%d" % (host, port), lambda: socket.create_connection((host, port), timeout=2))
for host in ("::1", "::ffff:127.0.0.1"):
    refused("tcp6 to [%s]:3128" % host, lambda: socket.socket(socket.AF_INET6).connect((host, 3128)))
# Every port the container listens on at 127.0.0.1 but the proxy's: the
# init's relay among them.
for l in open("/proc/net/tcp").readlines()[1:]:
    f = l.split()
    if f[3] == "0A":
        port = int(f[1].split(":")[1], 16)
        if port != 3128:
            refused("tcp to 127.0.0.1:%d (a listener of the container)" % port, lambda: socket.create_connection(("127.0.0.1", port), timeout=2))
def fastopen():
    s = socket.socket()
    s.sendto(b"GET / HTTP/1.0\r\n\r\n", 0x20000000, (web, 80))
refused("TCP fast open", fastopen)
refused("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
refused("a raw socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
refused("sctp", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132))
refused("a unix socket", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
refused("bind", lambda: socket.socket().bind(("127.0.0.1", 0)))
refused("listen", lambda: socket.socket().listen(1))
def pair_connect(path):
    a, b = socket.socketpair()
    a.connect(path)
for path in ("/var/run/docker.sock", "\0sandboxed"):
    refused("connect a socket pair to %r" % path, lambda: pair_connect(path))
    refused("send on a socket pair to %r" % path, lambda: socket.socketpair()[0].sendto(b"x", path))
# A second thread rewrites the address while connect() waits for the
# init: a connection that reached the job's listener at 127.0.0.2:3128
# would be a LEAK line of the job's.
import ctypes, struct, threading
libc = ctypes.CDLL(None, use_errno=True)
good = struct.pack("=H", socket.AF_INET) + struct.pack(">H", 3128) + bytes([127, 0, 0, 1]) + bytes(8)
bad = good[:4] + bytes([127, 0, 0, 2]) + bytes(8)
buf = ctypes.create_string_buffer(good, 16)
stop = []
def flip():
    while not stop:
        ctypes.memmove(buf, bad, 16)
        ctypes.memmove(buf, good, 16)
t = threading.Thread(target=flip)
t.start()
for i in range(100):
    s = socket.socket()
    libc.connect(s.fileno(), buf, 16)
    s.close()
stop.append(1)
t.join()
print("DONE", flush=True)
`

// The landlock tier's network on this host, as root and, in the rootless
// mode, as a user: the proxy serves the granted host over HTTP and HTTPS,
// refuses the others and records each; a connection around the proxy is
// refused by the init.
func TestLandlockEgressOnThisHost(t *testing.T) {
	begin(t)
	grant := "network:external:web.test"
	script := fmt.Sprintf(`
curl -sf http://web.test/ | sed 's/^/HTTP:/'
curl -sf --cacert %s https://web.test/ | sed 's/^/HTTPS:/'
curl -sf http://other.test/ >/dev/null || echo OTHER-REFUSED
curl -sf --noproxy '*' --max-time 3 http://%s/ >/dev/null || echo DIRECT-REFUSED
(exec 3<>/dev/tcp/127.0.0.2/3128) 2>/dev/null || echo PROXY-PORT-ELSEWHERE-REFUSED
true`, testNet.caFile, webAddr)
	dir, tool := egressTool(t, "process", "llfetch", script, grant)
	r, c := runJSON(t, dir, append([]string{"--isolation", "landlock", "--approve", "isolation-landlock"}, append(approvals(grant), tool)...)...)
	expect(t, r, c, "ok", 0)
	if r.Isolation != "landlock" {
		t.Fatalf("ran in %q", r.Isolation)
	}
	for _, want := range []string{"HTTP:" + strings.TrimSpace(webBody), "HTTPS:" + strings.TrimSpace(webBody),
		"OTHER-REFUSED", "DIRECT-REFUSED", "PROXY-PORT-ELSEWHERE-REFUSED"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("want %q in:\n%s%s", want, r.Stdout, r.Stderr)
		}
	}
	v := egressVerdicts(r)
	if v["web.test:80"] != "allow" || v["web.test:443"] != "allow" || v["other.test:80"] != "deny" || len(v) != 3 {
		t.Errorf("egress records: %+v", r.Egress)
	}
}

// The landlock tier through a server's pool, as root and, in the rootless
// mode, as a user: 20 consecutive calls each see a fresh run (no file or
// variable of an earlier call) and most claim a warm sandbox; once the
// server's teardowns are done no sleeper an earlier call left is alive
// (this tier shows the host's processes, and a served run's teardown
// comes after its result, so a call may still see the previous one's
// dying). A call with network grants, whose init supervises connect()
// and so cannot use the spare started before its config, still reaches
// the proxy.
func TestServeLandlockPoolFreshEveryCall(t *testing.T) {
	begin(t)
	ll := []string{"--isolation", "landlock", "--approve", "isolation-landlock"}
	dir := workdir(t, nil)
	script := strings.Replace(freshScript, `case "$c" in "${s}-sleeper"*)`, `case "$c" in "${s}-never"*)`, 1)
	tool := toolYAML(t, dir, "process", "fresh", script, nil, "")
	grant := "network:external:web.test"
	_, fetch := egressTool(t, "process", "llfetch", "curl -sf http://web.test/ | sed 's/^/HTTP:/'", grant)
	srv := startServer(t, dir, "--pool-size", "2")
	for i := 0; i < 20; i++ {
		r, c := runJSON(t, dir, append(ll, tool)...)
		if r.Status != "ok" || c.code != 0 || strings.TrimSpace(r.Stdout) != "fresh" || r.Isolation != "landlock" {
			t.Fatalf("call %d: status %s exit %d isolation %s\nstdout: %s\nstderr: %s\nserver: %s", i, r.Status, c.code, r.Isolation, r.Stdout, r.Stderr, srv.log.String())
		}
	}
	if n := srv.callsReach(20); n != 20 {
		t.Fatalf("the server answered %d calls of 20 (the rest ran cold):\n%s", n, srv.log.String())
	}
	if srv.claims() < 10 {
		t.Errorf("%d of 20 calls claimed a warm sandbox, want most:\n%s", srv.claims(), srv.log.String())
	}
	for deadline := time.Now().Add(10 * time.Second); findMarked("mark-sleeper") != 0; {
		if time.Now().After(deadline) {
			t.Fatal("a sleeper an earlier call left outlived its run")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := 0; i < 3; i++ {
		r, c := runJSON(t, dir, append(ll, append(approvals(grant), fetch)...)...)
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "HTTP:"+strings.TrimSpace(webBody)) {
			t.Fatalf("call %d with network: %s%s\nserver: %s", i, r.Stdout, r.Stderr, srv.log.String())
		}
	}
}
