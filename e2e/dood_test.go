package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestContainerTierFromACIContainer runs the container tier from inside a
// CI container that has the host's Docker socket mounted
// (Docker-outside-of-Docker): the engine resolves bind sources on the
// host.
//
// With nothing shared (a default `docker run` as root or as a user in the
// socket's group, the socket and the binary mounted, the job's files only
// in the CI container), a tool with a read
// grant reads what the CI container holds: the init and the grant are
// copied into a volume the engine owns, the init speaks over the
// container's attached streams (egress too), a masked secret in the
// granted folder is not copied, a timeout kills the tree, a write grant
// the engine cannot see is refused with the reason, gc reaps what a
// crashed run left, Ctrl-C mid-run leaves nothing, and no container or volume is left. With the job's directory mounted from the host at the
// same path, the grant is bound as on the host, and a grant beside it
// that only the CI container has is copied.
func TestContainerTierFromACIContainer(t *testing.T) {
	if env.runner != nil {
		t.Log("the rootless mode runs only the process tier; the root mode covers the container tier")
		return
	}
	begin(t)
	shared, err := os.MkdirTemp(env.workRoot, "dood-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(shared) })
	must(t, os.Chmod(shared, 0o755))
	must(t, os.MkdirAll(filepath.Join(shared, "work", "data"), 0o755))
	must(t, os.WriteFile(filepath.Join(shared, "work", "data", "in.txt"), []byte("hello from the host\n"), 0o644))
	toolYAML := func(name, grant, script string) string {
		return "name: " + name + "\ndescription: reads its grant\ntags: [read]\nbash: " + script + "\n" +
			"security:\n  isolation: container\n  required-permissions:\n    - " + grant + "\n"
	}
	sharedTool := filepath.Join(shared, "work", "shown.yaml")
	must(t, os.WriteFile(sharedTool, []byte(toolYAML("shown", "filesystem:read:"+filepath.Join(shared, "work", "data"), "cat "+filepath.Join(shared, "work", "data", "in.txt"))), 0o644))
	socket := []string{"--user", "0", "-v", "/var/run/docker.sock:/var/run/docker.sock"}
	// A job user who is not root, in the socket's group.
	var st syscall.Stat_t
	must(t, syscall.Stat("/var/run/docker.sock", &st))
	member := []string{"--user", "1000:1000", "--group-add", strconv.Itoa(int(st.Gid)), "-v", "/var/run/docker.sock:/var/run/docker.sock"}
	samepath := append(append([]string(nil), socket...),
		"-v", env.bin+":"+env.bin+":ro", "-v", shared+":"+shared,
		"-e", "SANDBOXED_RUNTIME_DIR="+filepath.Join(shared, "run"),
		"-e", "SANDBOXED_STATE_DIR="+filepath.Join(shared, "state"),
		"-e", "XDG_CACHE_HOME="+filepath.Join(shared, "cache"),
		"-w", filepath.Join(shared, "work"))
	// The job's own files, made in the CI container: the engine has none.
	job := "mkdir -p /job/data && echo 'hello from the CI container' > /job/data/in.txt && echo TOKEN=dood-secret-42 > /job/data/.env && " +
		"cat > /job/read.yaml <<'E'\n" + toolYAML("read", "filesystem:read:/job/data", `cat /job/data/in.txt; cat /job/data/.env; ls -a /job/data`) + "E\n" +
		"cat > /job/write.yaml <<'E'\n" + toolYAML("write", "filesystem:write:/job/out", `echo hi > /job/out/x`) + "E\n" +
		"cat > /job/net.yaml <<'E'\n" + toolYAML("net", "network:localhost:8765", `curl -s --max-time 5 http://127.0.0.1:8765/in.txt`) + "E\n" +
		"cat > /job/slow.yaml <<'E'\n" + toolYAML("slow", "filesystem:read:/job/data", `sleep 300 & sleep 300`) + "timeout: 2s\nE\n" +
		"(cd /job/data && exec python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 &) && sleep 1 && " +
		"cd /job && exec sandboxed run --json --approve network:localhost:8765 "

	for _, tc := range []struct {
		name   string
		flags  []string
		script string
		check  func(t *testing.T, r result)
	}{
		{"a grant the engine sees at the same path", samepath, "exec " + env.bin + " run --json " + sharedTool, func(t *testing.T, r result) {
			if r.Status != "ok" || strings.TrimSpace(r.Stdout) != "hello from the host" {
				t.Errorf("status %s exit %d stdout %q: %+v\n%s", r.Status, r.ExitCode, r.Stdout, r.Error, r.Stderr)
			}
		}},
		{"shared paths and a grant only the CI container has", samepath, job + "/job/read.yaml", func(t *testing.T, r result) {
			if r.Status != "ok" || !strings.HasPrefix(r.Stdout, "hello from the CI container\n") {
				t.Errorf("status %s exit %d stdout %q: %+v\n%s", r.Status, r.ExitCode, r.Stdout, r.Error, r.Stderr)
			}
		}},
		{"nothing shared: a read grant is copied, its secret is not", socket, job + "/job/read.yaml", func(t *testing.T, r result) {
			if r.Status != "ok" || !strings.HasPrefix(r.Stdout, "hello from the CI container\n") {
				t.Errorf("status %s exit %d stdout %q: %+v\n%s", r.Status, r.ExitCode, r.Stdout, r.Error, r.Stderr)
			}
			if strings.Contains(r.Stdout+r.Stderr, "dood-secret-42") {
				t.Errorf("the masked secret reached the tool: %q", r.Stdout)
			}
		}},
		{"nothing shared, a job user who is not root", member, strings.ReplaceAll(job, "/job", "/tmp/job") + "/tmp/job/read.yaml", func(t *testing.T, r result) {
			if r.Status != "ok" || !strings.HasPrefix(r.Stdout, "hello from the CI container\n") || strings.Contains(r.Stdout, "dood-secret-42") {
				t.Errorf("status %s exit %d stdout %q: %+v\n%s", r.Status, r.ExitCode, r.Stdout, r.Error, r.Stderr)
			}
		}},
		{"nothing shared: egress goes over the attached streams", socket, job + "/job/net.yaml", func(t *testing.T, r result) {
			if r.Status != "ok" || r.Stdout != "hello from the CI container\n" {
				t.Errorf("status %s exit %d stdout %q: %+v\n%s", r.Status, r.ExitCode, r.Stdout, r.Error, r.Stderr)
			}
		}},
		{"nothing shared: a timeout kills the tree", socket, job + "/job/slow.yaml", func(t *testing.T, r result) {
			if r.Status != "timeout" || r.ExitCode != 124 {
				t.Errorf("status %s exit %d: %+v", r.Status, r.ExitCode, r.Error)
			}
		}},
		{"nothing shared: a write grant is refused", socket, job + "/job/write.yaml", func(t *testing.T, r result) {
			if r.Status != "error" || r.Error == nil || !strings.Contains(r.Error.Message, "/job/out") || !strings.Contains(r.Error.Message, "write grant") {
				t.Errorf("status %s: %+v, want a refusal naming /job/out", r.Status, r.Error)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := inCIContainer(t, tc.flags, "sh", "-c", tc.script)
			var r result
			if err := json.Unmarshal([]byte(c.stdout), &r); err != nil {
				t.Fatalf("exit %d, not a result: %v\n%s%s", c.code, err, c.stdout, c.stderr)
			}
			tc.check(t, r)
		})
	}
	t.Run("nothing shared: gc reaps a crashed run's container and volume", func(t *testing.T) {
		crash := strings.TrimSuffix(job, "exec sandboxed run --json --approve network:localhost:8765 ") +
			"sed /^timeout:/d /job/slow.yaml > /job/long.yaml && (sandboxed run --json /job/long.yaml >/dev/null 2>&1 & echo $! > /job/pid; wait) & sleep 4; kill -9 $(cat /job/pid); sleep 1; exec sandboxed gc"
		c := inCIContainer(t, socket, "sh", "-c", crash)
		if c.code != 0 || !strings.Contains(c.stdout, "removed container sandboxed-") || !strings.Contains(c.stdout, "removed volume sandboxed-") {
			t.Errorf("gc: exit %d\n%s%s", c.code, c.stdout, c.stderr)
		}
	})
	t.Run("nothing shared: Ctrl-C mid-run leaves nothing for gc", func(t *testing.T) {
		intr := strings.TrimSuffix(job, "exec sandboxed run --json --approve network:localhost:8765 ") +
			"sed /^timeout:/d /job/slow.yaml > /job/long.yaml && sandboxed run --json /job/long.yaml >/dev/null 2>&1 & pid=$!; sleep 4; kill -INT $pid; wait $pid; echo run ended $?; exec sandboxed gc"
		c := inCIContainer(t, socket, "sh", "-c", intr)
		if c.code != 0 || !strings.Contains(c.stdout, "run ended") || strings.Contains(c.stdout, "removed") {
			t.Errorf("gc after an interrupted run: exit %d, want nothing left to remove\n%s%s", c.code, c.stdout, c.stderr)
		}
	})
	t.Run("doctor says so, and its trial runs", func(t *testing.T) {
		checks := doctorChecks(t, inCIContainer(t, socket, "sandboxed", "doctor", "--format", "json"))
		if l := checks["container/engine's paths"]; !strings.Contains(l.Detail, "copied into a volume") {
			t.Errorf("engine's paths: %+v", l)
		}
		if l := checks["container/runs a tool (same-as-user)"]; !l.OK {
			t.Errorf("the container tier's trial: %+v", l)
		}
	})
}
