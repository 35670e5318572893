package container

import (
	"os"
	"path/filepath"
	"testing"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func withFakeRoots(t *testing.T) (cg, proc string) {
	t.Helper()
	cg, proc = t.TempDir(), t.TempDir()
	oldCg, oldProc := cgroupRoot, procRoot
	cgroupRoot, procRoot = cg, proc
	t.Cleanup(func() { cgroupRoot, procRoot = oldCg, oldProc })
	return cg, proc
}

func TestCgroupStatsV1(t *testing.T) {
	cg, proc := withFakeRoots(t)
	writeFiles(t, cg, map[string]string{
		"memory/custom/abc/memory.max_usage_in_bytes": "1048576\n",
		"memory/custom/abc/memory.oom_control":        "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
		"pids/custom/abc/pids.events":                 "max 4\n",
	})
	writeFiles(t, proc, map[string]string{
		"42/cgroup": "12:pids:/custom/abc\n11:memory:/custom/abc\n1:name=systemd:/custom/abc\n0::/\n",
	})
	st := readCgroupStats(42, "abc")
	if st.peak != 1048576 || st.oomKills != 1 || st.pidsMax != 4 {
		t.Errorf("v1 stats from /proc/PID/cgroup = %+v", st)
	}
	// Without a pid: the engine's usual place.
	writeFiles(t, cg, map[string]string{"memory/docker/def/memory.max_usage_in_bytes": "7\n"})
	if st := readCgroupStats(0, "def"); st.peak != 7 {
		t.Errorf("v1 stats from docker/ID = %+v", st)
	}
}

func TestCgroupStatsV2(t *testing.T) {
	cg, proc := withFakeRoots(t)
	writeFiles(t, cg, map[string]string{
		"cgroup.controllers":                          "memory pids\n",
		"system.slice/docker-abc.scope/memory.peak":   "2097152\n",
		"system.slice/docker-abc.scope/memory.events": "low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n",
		"system.slice/docker-abc.scope/pids.events":   "max 0\n",
	})
	writeFiles(t, proc, map[string]string{"42/cgroup": "0::/system.slice/docker-abc.scope\n"})
	st := readCgroupStats(42, "abc")
	if st.peak != 2097152 || st.oomKills != 2 || st.pidsMax != 0 {
		t.Errorf("v2 stats = %+v", st)
	}
	if st := readCgroupStats(0, "abc"); st.peak != 2097152 {
		t.Errorf("v2 stats without pid = %+v", st)
	}
	if st := readCgroupStats(0, "gone"); st != (cgroupStats{}) {
		t.Errorf("stats of a missing cgroup = %+v, want zero", st)
	}
}
