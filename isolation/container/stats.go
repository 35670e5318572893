package container

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupStats is what the container's cgroup tells, best effort.
type cgroupStats struct {
	peak     int64 // bytes; 0 when unknown
	oomKills int64
	pidsMax  int64 // times fork failed on the pids limit
}

// cgroupRoot is where the cgroup hierarchies are mounted; a variable so
// tests can point it at a fake tree.
var cgroupRoot = "/sys/fs/cgroup"

// procRoot is where /proc is; a variable for tests.
var procRoot = "/proc"

// readCgroupStats reads the container's cgroup files. It finds the cgroup
// from /proc/PID/cgroup of the container's init (pid as the host sees it),
// else from the engine's usual places for id. Peak memory is v1
// memory.max_usage_in_bytes or v2 memory.peak (kernel 5.19 and later);
// OOM kills are v1 memory.oom_control or v2 memory.events "oom_kill";
// pids-limit hits are pids.events "max". Anything unreadable reads as
// zero: an engine on another host, another cgroup namespace, an old
// kernel.
func readCgroupStats(pid int, id string) cgroupStats {
	var st cgroupStats
	memDir, pidsDir, v2 := cgroupDirs(pid, id)
	if v2 {
		st.peak = readInt(filepath.Join(memDir, "memory.peak"))
		st.oomKills = readKey(filepath.Join(memDir, "memory.events"), "oom_kill")
		st.pidsMax = readKey(filepath.Join(memDir, "pids.events"), "max")
		return st
	}
	if memDir != "" {
		st.peak = readInt(filepath.Join(memDir, "memory.max_usage_in_bytes"))
		st.oomKills = readKey(filepath.Join(memDir, "memory.oom_control"), "oom_kill")
	}
	if pidsDir != "" {
		st.pidsMax = readKey(filepath.Join(pidsDir, "pids.events"), "max")
	}
	return st
}

// cgroupDirs returns the memory and pids cgroup directories of the
// container and whether they are one cgroup v2 directory.
func cgroupDirs(pid int, id string) (mem, pids string, v2 bool) {
	_, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers"))
	unified := err == nil
	if pid > 0 {
		if f, err := os.Open(filepath.Join(procRoot, strconv.Itoa(pid), "cgroup")); err == nil {
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				parts := strings.SplitN(sc.Text(), ":", 3)
				if len(parts) != 3 {
					continue
				}
				switch {
				case unified && parts[0] == "0" && parts[1] == "":
					return filepath.Join(cgroupRoot, parts[2]), "", true
				case hasController(parts[1], "memory"):
					mem = filepath.Join(cgroupRoot, "memory", parts[2])
				case hasController(parts[1], "pids"):
					pids = filepath.Join(cgroupRoot, "pids", parts[2])
				}
			}
			if mem != "" || pids != "" {
				return mem, pids, false
			}
		}
	}
	if unified {
		for _, d := range []string{"system.slice/docker-" + id + ".scope", "docker/" + id} {
			if dirExists(filepath.Join(cgroupRoot, d)) {
				return filepath.Join(cgroupRoot, d), "", true
			}
		}
		return "", "", true
	}
	for _, d := range []string{"docker/" + id, "system.slice/docker-" + id + ".scope"} {
		if dirExists(filepath.Join(cgroupRoot, "memory", d)) {
			mem = filepath.Join(cgroupRoot, "memory", d)
			pids = filepath.Join(cgroupRoot, "pids", d)
			break
		}
	}
	return mem, pids, false
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func readInt(p string) int64 {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// readKey reads the value of key from a flat "key value" file.
func readKey(p, key string) int64 {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// maxStats keeps the larger of two readings of each counter.
func maxStats(a, b cgroupStats) cgroupStats {
	return cgroupStats{peak: max(a.peak, b.peak), oomKills: max(a.oomKills, b.oomKills), pidsMax: max(a.pidsMax, b.pidsMax)}
}
