package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestContainerTierFromACIContainer runs the container tier from inside a
// CI container that has the host's Docker socket mounted
// (Docker-outside-of-Docker): the engine resolves bind sources on the
// host. With the job's directory mounted from the host at the same path
// (the tool, its read grant, the run and cache directories), a tool with a
// read grant runs; a grant of a directory only the CI container has is
// refused, naming it.
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
	tool := func(name, grant string) string {
		p := filepath.Join(shared, "work", name+".yaml")
		must(t, os.WriteFile(p, []byte("name: "+name+"\ndescription: reads its grant\ntags: [read]\nbash: cat "+grant+"/in.txt\n"+
			"security:\n  isolation: container\n  required-permissions:\n    - filesystem:read:"+grant+"\n"), 0o644))
		return p
	}
	shown := tool("shown", filepath.Join(shared, "work", "data"))
	hidden := tool("hidden", "/ci-only")
	flags := []string{"--user", "0", "-v", "/var/run/docker.sock:/var/run/docker.sock",
		"-v", env.bin + ":" + env.bin + ":ro", "-v", shared + ":" + shared,
		"-e", "SANDBOXED_RUNTIME_DIR=" + filepath.Join(shared, "run"),
		"-e", "SANDBOXED_STATE_DIR=" + filepath.Join(shared, "state"),
		"-e", "XDG_CACHE_HOME=" + filepath.Join(shared, "cache"),
		"-w", filepath.Join(shared, "work")}

	for _, tc := range []struct {
		name, tool string
		ok         bool
	}{
		{"a grant the engine sees", shown, true},
		{"a grant only the CI container has", hidden, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := "mkdir -p /ci-only && echo secret > /ci-only/in.txt && exec " + env.bin + " run --json " + tc.tool
			c := inCIContainer(t, flags, "sh", "-c", script)
			var r result
			if err := json.Unmarshal([]byte(c.stdout), &r); err != nil {
				t.Fatalf("exit %d, not a result: %v\n%s%s", c.code, err, c.stdout, c.stderr)
			}
			if tc.ok {
				if r.Status != "ok" || strings.TrimSpace(r.Stdout) != "hello from the host" {
					t.Errorf("status %s exit %d stdout %q: %+v\n%s", r.Status, r.ExitCode, r.Stdout, r.Error, r.Stderr)
				}
				return
			}
			if r.Status != "error" || r.Error == nil || !strings.Contains(r.Error.Message, "/ci-only") || !strings.Contains(r.Error.Message, "resolves bind sources on its own host") {
				t.Errorf("status %s: %+v, want a refusal naming /ci-only", r.Status, r.Error)
			}
		})
	}
}
