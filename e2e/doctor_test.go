package e2e

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// ciContainers are the containers a CI job runs in, as `docker run` flags:
// Docker's defaults as root and as a user, each relaxation of the defaults
// alone, and the flags doctor gives for the process tier.
var ciContainers = []struct {
	name  string
	flags []string
	// process is the privileges a process-tier run works as there.
	process []string
}{
	{"defaults as root", []string{"--user", "0"}, nil},
	{"defaults as user 1000", []string{"--user", "1000:1000"}, nil},
	{"seccomp unconfined", []string{"--user", "0", "--security-opt", "seccomp=unconfined"}, nil},
	{"CAP_SYS_ADMIN", []string{"--user", "0", "--cap-add", "SYS_ADMIN"}, nil},
	// As measured: same-as-user as root maps the tool's uid away with
	// idmapped mounts, which the container's root filesystem refuses.
	{"doctor's flags", []string{"--user", "0", "--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN",
		"--security-opt", "seccomp=unconfined", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw"}, []string{"reduced"}},
}

// inCIContainer runs argv inside a container of the runner image started
// with flags, with no network and the suite's sandboxed mounted in as
// /usr/local/bin/sandboxed, as a CI job would have it.
func inCIContainer(t *testing.T, flags []string, argv ...string) cli {
	t.Helper()
	dargs := append([]string{"run", "--rm", "--network", "none", "-e", "HOME=/tmp", "-w", "/tmp",
		"-v", env.bin + ":/usr/local/bin/sandboxed:ro"}, flags...)
	dargs = append(dargs, runnerImage)
	cmd := exec.Command("docker", append(dargs, argv...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("docker run: %v", err)
	}
	return cli{stdout: out.String(), stderr: errb.String(), code: code}
}

// trialTool is the shape of doctor's trial: one command, no permission.
const trialTool = `name: ok
description: prints ok
bash: echo ok
tags: [read]
security:
  execution-privilege: %s
  isolation: process
`

// TestDoctorMatchesRunsInCIContainers: in each container configuration a
// CI job runs in, doctor's verdict per tier and privilege is what a run
// of a trivial tool in that tier does there; a tier that fails carries
// the environment's fix, and the refused run carries the same fix; doctor
// exits 1 exactly when no tier runs.
func TestDoctorMatchesRunsInCIContainers(t *testing.T) {
	begin(t)
	for _, cc := range ciContainers {
		t.Run(cc.name, func(t *testing.T) {
			d := inCIContainer(t, cc.flags, "sandboxed", "doctor", "--format", "json")
			checks := doctorChecks(t, d)
			if l := checks["all/environment"]; !strings.Contains(l.Detail, "inside a container") || !strings.Contains(l.Detail, "/.dockerenv") {
				t.Errorf("environment: %+v", l)
			}
			if slices.Contains(cc.flags, "1000:1000") {
				if l := checks["process/user namespaces"]; l.OK || !strings.Contains(l.Detail, "seccomp filter of the enclosing container") || l.Fix == "" {
					t.Errorf("user namespaces: %+v", l)
				}
				if l := checks["all/mode"]; !strings.Contains(l.Detail, "rootless") {
					t.Errorf("mode: %+v", l)
				}
			}
			anyOK := false
			for _, tier := range []string{"process", "container", "landlock", "none"} {
				for _, priv := range []string{"same-as-user", "reduced"} {
					l, ok := checks[tier+"/runs a tool ("+priv+")"]
					if !ok {
						t.Errorf("doctor has no trial of %s (%s):\n%s", tier, priv, d.stdout)
						continue
					}
					anyOK = anyOK || l.OK
					// What a run does: the same tool, from a file, as a CI job runs it.
					// The none tier's trial is of an installed tool: the
					// built-in policy raises a tool given as a file path.
					target := "/tmp/ok.yaml"
					install := ""
					if tier == "none" {
						target, install = "ok", "sandboxed tool import --scope user /tmp/ok.yaml >/dev/null && cd / && "
					}
					script := "cat > /tmp/ok.yaml <<'E'\n" + strings.ReplaceAll(trialTool, "%s", priv) + "E\n" + install +
						"exec sandboxed run --json --isolation " + tier + " --approve isolation-none --approve isolation-landlock " + target
					r := inCIContainer(t, cc.flags, "sh", "-c", script)
					var res result
					if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
						t.Fatalf("run in %s: exit %d, %v\n%s%s", tier, r.code, err, r.stdout, r.stderr)
					}
					ran := res.Status == "ok" && strings.TrimSpace(res.Stdout) == "ok" && res.Isolation == tier
					if ran != l.OK {
						t.Errorf("%s (%s): doctor says ok=%t (%s), a run: %s in %s %+v", tier, priv, l.OK, l.Detail, res.Status, res.Isolation, res.Error)
					}
					if want := slices.Contains(cc.process, priv); tier == "process" && l.OK != want {
						t.Errorf("process (%s): ok=%t, want %t: %s", priv, l.OK, want, l.Detail)
					}
					if !l.OK && tier != "none" && l.Fix == "" {
						t.Errorf("%s (%s) fails without a fix: %+v", tier, priv, l)
					}
					if tier == "process" && !l.OK && res.Error != nil {
						// The environment's fix, in doctor and in the refusal alike.
						for _, want := range []string{"--cap-add SYS_ADMIN", "seccomp=unconfined"} {
							if !strings.Contains(l.Fix, want) || !strings.Contains(res.Error.Hint, want) {
								t.Errorf("process (%s): the fix lacks %q\ndoctor: %s\nrun: %s", priv, want, l.Fix, res.Error.Hint)
							}
						}
					}
					if tier == "none" && priv == "same-as-user" && !l.OK {
						t.Errorf("none (same-as-user) does not run in %s: %+v", cc.name, l)
					}
					if tier == "none" && priv == "same-as-user" {
						// The same tool from a file: raised to the process tier by the
						// built-in policy; where that fails, the hint says so and how.
						script := "cat > /tmp/ok.yaml <<'E'\n" + strings.ReplaceAll(trialTool, "%s", priv) + "E\n" +
							"exec sandboxed run --json --isolation none --approve isolation-none /tmp/ok.yaml"
						r := inCIContainer(t, cc.flags, "sh", "-c", script)
						var res result
						if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
							t.Fatalf("none from a file: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
						}
						if res.Status != "ok" && (res.Error == nil || !strings.Contains(res.Error.Hint, "isolation raised from none to process") ||
							!strings.Contains(res.Error.Hint, "sandboxed tool import FILE --scope user")) {
							t.Errorf("none from a file failed without saying the policy raised it: %s %+v", res.Status, res.Error)
						}
					}
					if tier == "container" && !l.OK && !strings.Contains(l.Fix, "docker.sock") {
						t.Errorf("container (%s) without a Docker socket: fix %q", priv, l.Fix)
					}
				}
			}
			if want := map[bool]int{true: 0, false: 1}[anyOK]; d.code != want {
				t.Errorf("doctor exit %d with a tier working=%t, want %d\n%s", d.code, anyOK, want, d.stderr)
			}
		})
	}
}
