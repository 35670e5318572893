package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// begin marks the start of a test that runs sandboxes: when the test ends
// it fails if any run left a process, cgroup, container, mount, socket or
// temp dir behind.
func begin(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { checkNoLeaks(t) })
}

// checkNoLeaks looks for everything a run may create on the host. Cleanup
// is synchronous in sandboxed, so nothing is given time to go away except
// the kernel's own asynchronous reaping (a short settle).
func checkNoLeaks(t *testing.T) {
	t.Helper()
	var leaks []string
	for i := 0; i < 20; i++ {
		leaks = findLeaks()
		if len(leaks) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("left behind after the test:\n  %s", strings.Join(leaks, "\n  "))
}

func findLeaks() []string {
	var leaks []string
	// Processes of sandboxed (the CLI has exited; its inits must be gone):
	// the binary itself, and the init wherever it was started from (the
	// cache, a memory file, the binary) — it also names itself.
	procs, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, p := range procs {
		dir := filepath.Dir(p)
		if exited(dir) {
			continue // released everything; the host's init reaps the pid
		}
		target, _ := os.Readlink(p)
		comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
		// gVisor's sandbox and gofer processes of a runsc container: the
		// suite runs no other but the test cluster's (make cluster-up),
		// whose runtime state lives under /run/sandboxed-k8s: its pods
		// are the cluster's, checked through its API.
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		if strings.Contains(string(cmdline), "/run/sandboxed-k8s/") {
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(string(comm)), "runsc") || strings.HasSuffix(strings.TrimSuffix(target, " (deleted)"), "/runsc") {
			leaks = append(leaks, "runsc process "+filepath.Base(dir)+" ("+target+")")
			continue
		}
		if strings.HasPrefix(target, env.bin) || strings.HasPrefix(target, env.cacheHome+"/") ||
			strings.Contains(target, "memfd:sandboxed-init") || strings.TrimSpace(string(comm)) == "sandboxed-init" {
			leaks = append(leaks, "process "+filepath.Base(dir)+" ("+target+")")
		}
	}
	// Cgroups: v1 controllers and the v2 unified tree. A user-UID directory
	// is a subtree delegated to an unprivileged user by `sandboxed setup`
	// and outlives runs; the run cgroups inside it are checked like any.
	for _, pat := range []string{"/sys/fs/cgroup/*/sandboxed/*", "/sys/fs/cgroup/sandboxed/*",
		"/sys/fs/cgroup/*/sandboxed/user-*/*", "/sys/fs/cgroup/sandboxed/user-*/*"} {
		dirs, _ := filepath.Glob(pat)
		for _, d := range dirs {
			if strings.HasPrefix(filepath.Base(d), "user-") && filepath.Base(filepath.Dir(d)) == "sandboxed" {
				continue
			}
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				leaks = append(leaks, "cgroup "+d)
			}
		}
	}
	// Containers labelled with a run id. The suite always has Docker (setup
	// fails without it); a check that cannot ask is a failed check, never
	// a clean one.
	if env.docker {
		cmd := exec.Command("docker", "ps", "-aq", "--filter", "label=dev.sandboxed.run-id")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			leaks = append(leaks, fmt.Sprintf("cannot list containers (docker ps: %v: %s)", err, strings.TrimSpace(stderr.String())))
		}
		for _, id := range strings.Fields(string(out)) {
			leaks = append(leaks, "container "+id)
		}
		// Volumes of runs copied to an engine that could not see their
		// paths (a CI container's).
		cmd = exec.Command("docker", "volume", "ls", "-q", "--filter", "label=dev.sandboxed.run-id")
		stderr.Reset()
		cmd.Stderr = &stderr
		if out, err = cmd.Output(); err != nil {
			leaks = append(leaks, fmt.Sprintf("cannot list volumes (docker volume ls: %v: %s)", err, strings.TrimSpace(stderr.String())))
		}
		for _, name := range strings.Fields(string(out)) {
			leaks = append(leaks, "volume "+name)
		}
	}
	// Mounts in the host's mount namespace that belong to a run.
	if f, err := os.Open("/proc/self/mountinfo"); err != nil {
		leaks = append(leaks, "cannot list mounts: "+err.Error())
	} else {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 4 && (strings.HasPrefix(fields[4], env.runtimeDir) || strings.Contains(fields[4], "/sandboxed-run-")) {
				leaks = append(leaks, "mount "+fields[4])
			}
		}
		if err := sc.Err(); err != nil {
			leaks = append(leaks, "cannot read the mount table: "+err.Error())
		}
		f.Close()
	}
	// Per-run host directories and sockets.
	entries, err := os.ReadDir(env.runtimeDir)
	if err != nil {
		leaks = append(leaks, "cannot list the runtime dir: "+err.Error())
	}
	for _, e := range entries {
		leaks = append(leaks, "runtime dir entry "+filepath.Join(env.runtimeDir, e.Name()))
	}
	var tmps []string
	for _, pat := range []string{"sandboxed-run-*", "sandboxed-test-*", "sandboxed-scratch-*"} {
		m, _ := filepath.Glob(filepath.Join(os.TempDir(), pat))
		tmps = append(tmps, m...)
	}
	for _, d := range tmps {
		leaks = append(leaks, "temp dir "+d)
	}
	// Objects of runs in the test cluster's namespace.
	leaks = append(leaks, kubeLeaks()...)
	return leaks
}

// exited reports whether the process at /proc/PID dir is a zombie (or
// gone): its memory, files and mounts are released, and only its pid waits
// for its parent — for an orphaned init, the host's init — to reap it.
func exited(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}
