package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation/landlock"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
)

// What a reviewer is told is what runs: for each tier (the landlock tier,
// a pod of the Kubernetes backend and the none tier too), explain --json,
// run --dump-plan, the plan the run recorded and the running sandbox, read
// back from the host (its cgroup, its process's ids) and from inside (its
// mounts or, in the landlock tier, which has none, what it can read and
// write; its /tmp or its file size limit), give the same memory, pids and
// CPU limits, /tmp size, grant mounts and access, and the same uid and
// host uid; explain's egress rules are the plan's. Each tier here runs in
// a cgroup, which a CPU limit needs (TestLandlockTierInDefaultContainer
// runs where none can be made). Rootless, the tiers an
// unprivileged user runs here: the process and landlock tiers.
func TestExplainMatchesEnforcement(t *testing.T) {
	run := runTiers(append(append([]string{}, tiers...), "landlock", "none", kubeTier))
	if env.runner != nil {
		run = []string{"process", "landlock"}
	}
	forEachTier(t, run, func(t *testing.T, tier string) {
		dir := workdir(t, map[string]string{"data/x": "x", "out/.keep": ""})
		mark := fmt.Sprintf("sbxcontract%d", time.Now().UnixNano())
		iso, _ := tierYAML(tier)
		args := []string{"--approve", "all"}
		switch tier {
		case "none":
			// The built-in policy raises a tool file's none to process.
			must(t, os.WriteFile(filepath.Join(dir, "none.yaml"), []byte(landlockPolicy), 0o644))
			args = append(args, "--policy", "none.yaml")
		case "landlock":
			// A process-tier tool the operator runs in the landlock tier.
			iso = "process"
			args = append(args, "--isolation", "landlock")
			if kernelLandlockABI() < 6 && env.runner != nil {
				// A kernel without signal scoping (the VM's ABI 2) runs
				// a tool of the user's own uid only where the operator
				// accepts that gap by name (TestLandlockTierOnThisKernel).
				must(t, os.WriteFile(filepath.Join(dir, "gaps.yaml"), []byte(landlockGapsPolicy), 0o644))
				args = append(args, "--policy", "gaps.yaml")
			}
		}
		// A pod's write grants are copied back after the run: the host
		// cannot tell it to go on, and reads its limits from inside.
		waits := 300
		if tier == kubeTier {
			waits = 30
		}
		def := fmt.Sprintf(`name: contract
description: e2e tool contract
tags: [write]
bash: |
  (exec -a %s sleep 60) &
  echo ready > out/ready
  i=0; while [ ! -e out/go ] && [ $i -lt %d ]; do sleep 0.1; i=$((i+1)); done
  kill $! 2>/dev/null
  echo "UID $(id -u)"
  for f in memory.max memory/memory.limit_in_bytes pids.max pids/pids.max cpu.max cpu/cpu.cfs_quota_us cpu/cpu.cfs_period_us; do [ -r /sys/fs/cgroup/$f ] && echo "CG $f $(cat /sys/fs/cgroup/$f)"; done
  echo "TMP $(stat -f -c '%%b %%S' /tmp)"
  echo "FSIZE $(awk '/^Max file size/ {print $4}' /proc/self/limits)"
  while read -r _ _ _ _ mnt opts _; do echo "MOUNT $mnt $opts"; done < /proc/self/mountinfo
  for d in data out; do
    if (: > $d/.probe) 2>/dev/null; then rm -f $d/.probe; echo "ACCESS $PWD/$d rw"; elif ls $d > /dev/null 2>&1; then echo "ACCESS $PWD/$d ro"; fi
  done
security:
  isolation: %s
  required-permissions: ["filesystem:read:data", "filesystem:write:out", "network:external:api.example.com:8443"]
resources:
  max-memory: 96MB
sandboxed:
  pids-limit: 40
  cpus: 0.5
  tmpfs-size: 32MB
`, mark, waits, iso)
		must(t, os.WriteFile(filepath.Join(dir, "contract.yaml"), []byte(def), 0o644))

		// What explain says.
		c := sandboxed(t, dir, append(append([]string{"permissions", "explain", "--json"}, args...), "contract.yaml")...)
		if c.code != 0 {
			t.Fatalf("explain: exit %d: %s", c.code, c.stderr)
		}
		var ex explainJSON
		must(t, json.Unmarshal([]byte(c.stdout), &ex))
		said := ex.facts(t)

		// What the plan says.
		c = sandboxed(t, dir, append(append([]string{"run", "--dump-plan"}, args...), "contract.yaml")...)
		if c.code != 0 {
			t.Fatalf("dump-plan: exit %d: %s", c.code, c.stderr)
		}
		var dp dumpJSON
		must(t, json.Unmarshal([]byte(c.stdout), &dp))
		planned := dp.facts()

		// What runs.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := command(append(append([]string{"run", "--json", "--no-server"}, args...), "contract.yaml")...)
		cmd.Dir = dir
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		must(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var ran facts
		var pid int
		var podMemory int64
		wait := 60 * time.Second
		if tier == kubeTier {
			wait = 15 * time.Second // the pod's tool goes on by itself
		}
		for deadline := time.Now().Add(wait); pid == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(dir, "out", "ready")); err == nil || tier == kubeTier {
				pid = findMarked(mark)
			}
			if tier == kubeTier && ran.cpu == "" {
				// The test cluster's node is this host: the pod's CPU
				// and memory limits are read from its cgroup here.
				ran.cpu, podMemory = podLimits(t)
			}
		}
		if pid == 0 && tier == kubeTier {
			// Under gVisor the pod's processes are its kernel's, not the
			// host's: the limits are read from inside, the host uid is the
			// pod's own.
			pid = -1
		}
		if pid == 0 {
			_ = os.WriteFile(filepath.Join(dir, "out", "go"), nil, 0o644)
			<-done
			t.Fatalf("the sandbox's marked process never appeared: %s %s", out.String(), errb.String())
		}
		if pid > 0 {
			ran.hostUID = hostUID(t, pid)
			ran.memory, ran.pids, ran.cpu = cgroupLimits(t, pid)
		}
		must(t, os.WriteFile(filepath.Join(dir, "out", "go"), nil, 0o644))
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run: %v\n%s\n%s", err, out.String(), errb.String())
			}
		case <-ctx.Done():
			t.Fatal("run hung")
		}
		var res struct {
			RunID  string `json:"run_id"`
			Stdout string `json:"stdout"`
		}
		if err := json.Unmarshal([]byte(out.String()), &res); err != nil || res.RunID == "" {
			t.Fatalf("run --json: %v: %s", err, out.String())
		}
		recorded := recordedPlan(t, res.RunID)
		inside := ran
		ran.readInside(t, res.Stdout, dir, tier == "landlock")
		if pid < 0 {
			ran.hostUID = ran.uid
			if ran.memory == 0 && ran.pids == 0 {
				// gVisor shows the pod no cgroupfs, and its limits are
				// its kernel's: the pod's cgroup on the node holds the
				// tool's memory and gVisor's own (explain says how
				// much); its pids are gVisor's kernel's.
				t.Logf("the pod shows no cgroup limits: pids compared between explain and the plan only")
				ran.memory, ran.pids = podMemory-specconv.GVisorMemoryOverhead, planned.pids
			}
			if ran.cpu == "" {
				t.Errorf("the pod's cgroup was not found on this host, the test cluster's node")
			}
			t.Logf("the pod's cgroup on this host: cpu %q, memory %d", ran.cpu, podMemory)
		} else {
			ran.memory, ran.pids, ran.cpu = inside.memory, inside.pids, inside.cpu
		}
		wantTmp, wantMounts := int64(32<<20), 2
		if tier == "none" {
			// No sandbox: the host's /tmp, no mounts; the tool runs as
			// the user, in the run's cgroup (root's here).
			wantTmp, wantMounts, ran.tmpfs = 0, 0, 0
		}

		// Limits: explain, the plan and the cgroup (or engine) agree.
		for _, v := range []struct {
			what                string
			explain, plan, real int64
		}{
			{"memory", said.memory, planned.memory, ran.memory},
			{"pids", said.pids, planned.pids, ran.pids},
			{"tmpfs", said.tmpfs, planned.tmpfs, ran.tmpfs},
		} {
			if v.explain != v.plan || v.plan != v.real {
				t.Errorf("%s: explain says %d, the plan %d, the sandbox has %d", v.what, v.explain, v.plan, v.real)
			}
		}
		if said.cpu != planned.cpu || planned.cpu != ran.cpu {
			t.Errorf("cpu: explain says %q, the plan %q, the sandbox has %q", said.cpu, planned.cpu, ran.cpu)
		}
		if planned.memory != 96<<20 || planned.toolPids != 40 || planned.tmpfs != wantTmp || planned.cpu != "50000 100000" {
			t.Errorf("the plan's limits are not the definition's: %+v", planned)
		}
		// Mounts: each grant's access, in explain, in the plan and inside.
		for target, access := range planned.mounts {
			if said.mounts[target] != access || ran.mounts[target] != access {
				t.Errorf("mount %s: explain %q, plan %q, inside %q", target, said.mounts[target], access, ran.mounts[target])
			}
		}
		if len(planned.mounts) != wantMounts || len(said.mounts) != wantMounts || len(ran.mounts) != wantMounts {
			t.Errorf("the plan binds %v, explain %v, inside %v: want %d grant mounts", planned.mounts, said.mounts, ran.mounts, wantMounts)
		}
		// Egress: the rules explain names are the proxy's.
		if tier != "none" && (strings.Join(said.egress, ",") != strings.Join(planned.egress, ",") || len(planned.egress) != 1) {
			t.Errorf("egress: explain %v, plan %v", said.egress, planned.egress)
		}
		// The user: inside as the run's plan says, and explain and
		// --dump-plan say the same. In the landlock tier as root each run
		// has a uid of its own (landlock.ToolID): explain's and
		// --dump-plan's are their runs', of the same range.
		if ran.uid != recorded.uid {
			t.Errorf("uid: the run's plan says %d, the tool runs as %d", recorded.uid, ran.uid)
		}
		if tier == "landlock" && env.runner == nil {
			for _, u := range []int64{said.uid, planned.uid, recorded.uid} {
				if !landlock.IsToolID(uint32(u)) {
					t.Errorf("uid: explain %d, plan %d, the run's plan %d: want each a uid of its run's own", said.uid, planned.uid, recorded.uid)
				}
			}
		} else if said.uid != planned.uid || recorded.uid != planned.uid {
			t.Errorf("uid: explain %d, plan %d, the run's plan %d", said.uid, planned.uid, recorded.uid)
		}
		if said.hostUID >= 0 && said.hostUID != ran.hostUID {
			t.Errorf("host uid: explain says %d, the sandbox's process runs as %d", said.hostUID, ran.hostUID)
		}
		if said.hostUID < 0 && ran.hostUID != ran.uid {
			t.Errorf("the tool runs as host uid %d (uid %d inside) and explain does not say so", ran.hostUID, ran.uid)
		}
	})
}

// facts are the values the three sources are compared on. pids is the
// mechanism's value (the cgroup's); toolPids what the tool gets; cpu the
// quota and period in microseconds, as cgroup v2's cpu.max says them.
type facts struct {
	memory, pids, toolPids, tmpfs int64
	cpu                           string
	uid, hostUID                  int64
	mounts                        map[string]string // target: ro or rw
	egress                        []string
}

type explainJSON struct {
	Filesystem []explainPoint `json:"filesystem"`
	Network    []explainPoint `json:"network"`
	Privilege  []explainPoint `json:"privilege_isolation"`
	Resources  []explainPoint `json:"resources"`
}

type explainPoint struct {
	Subject    string `json:"subject"`
	Mechanisms []struct {
		Kind   string `json:"kind"`
		Value  string `json:"value"`
		Target string `json:"target"`
		Access string `json:"access"`
		Detail string `json:"detail"`
	} `json:"mechanisms"`
}

var (
	tmpfsSize = regexp.MustCompile(`tmpfs of ([0-9.]+)(MiB|GiB|KiB)`)
	hostIDRE  = regexp.MustCompile(`on the host uid (\d+)`)
)

func (e explainJSON) facts(t *testing.T) facts {
	f := facts{hostUID: -1, mounts: map[string]string{}}
	var tmpfsPoint int64
	for _, p := range e.Resources {
		for _, m := range p.Mechanisms {
			n, _ := strconv.ParseInt(m.Value, 10, 64)
			if m.Value == "" {
				continue // a note (an approximation's), not the value
			}
			switch p.Subject {
			case "limits.memory":
				f.memory = n
			case "limits.pids":
				f.pids = n
			case "limits.cpus":
				f.cpu = m.Value
			case "limits.tmpfs":
				tmpfsPoint, _ = strconv.ParseInt(strings.TrimPrefix(m.Value, "RLIMIT_FSIZE="), 10, 64)
			}
		}
	}
	for _, p := range e.Filesystem {
		for _, m := range p.Mechanisms {
			switch {
			case m.Kind == "bind" && strings.HasPrefix(p.Subject, "filesystem:"):
				f.mounts[m.Target] = map[string]string{"read-only": "ro", "read-write": "rw"}[m.Access]
			case m.Kind == "rlimit" && strings.HasPrefix(m.Value, "RLIMIT_FSIZE="):
				f.tmpfs, _ = strconv.ParseInt(strings.TrimPrefix(m.Value, "RLIMIT_FSIZE="), 10, 64)
			case m.Kind == "tmpfs" && m.Target == "/tmp":
				if s := tmpfsSize.FindStringSubmatch(m.Detail); s != nil {
					v, _ := strconv.ParseFloat(s[1], 64)
					f.tmpfs = int64(v * map[string]float64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[s[2]])
				}
			}
		}
	}
	for _, p := range e.Network {
		for _, m := range p.Mechanisms {
			if m.Kind == "proxy" && m.Value != "" {
				f.egress = append(f.egress, m.Value)
			}
		}
	}
	for _, p := range e.Privilege {
		if p.Subject != "execution-privilege" || len(p.Mechanisms) == 0 {
			continue
		}
		m := p.Mechanisms[0]
		u, _, _ := strings.Cut(m.Value, ":")
		f.uid, _ = strconv.ParseInt(u, 10, 64)
		if s := hostIDRE.FindStringSubmatch(m.Detail); s != nil {
			f.hostUID, _ = strconv.ParseInt(s[1], 10, 64)
		}
	}
	if f.memory == 0 || f.pids == 0 {
		t.Fatalf("explain --json lacks a limit: %+v", f)
	}
	if tmpfsPoint != f.tmpfs {
		t.Errorf("explain's limits.tmpfs says %d, its /tmp %d", tmpfsPoint, f.tmpfs)
	}
	return f
}

type dumpJSON struct {
	Plan planJSON `json:"plan"`
}

// planJSON is a plan as --dump-plan prints it and a run records it.
type planJSON struct {
	Limits struct {
		MemoryBytes int64 `json:"memory_bytes"`
		Pids        int64 `json:"pids"`
		TmpfsBytes  int64 `json:"tmpfs_bytes"`
	} `json:"limits"`
	Spec struct {
		Process struct {
			User struct {
				UID int64 `json:"uid"`
			} `json:"user"`
			Rlimits []struct {
				Type string `json:"type"`
				Hard int64  `json:"hard"`
			} `json:"rlimits"`
		} `json:"process"`
		Mounts []struct {
			Destination string   `json:"destination"`
			Type        string   `json:"type"`
			Options     []string `json:"options"`
		} `json:"mounts"`
		Linux struct {
			Resources struct {
				Memory struct {
					Limit int64 `json:"limit"`
				} `json:"memory"`
				Pids struct {
					Limit int64 `json:"limit"`
				} `json:"pids"`
				CPU *struct {
					Quota  int64 `json:"quota"`
					Period int64 `json:"period"`
				} `json:"cpu"`
			} `json:"resources"`
		} `json:"linux"`
	} `json:"spec"`
	Egress *struct {
		Allow []string `json:"allow"`
	} `json:"egress"`
}

func (d dumpJSON) facts() facts { return d.Plan.facts() }

func (d planJSON) facts() facts {
	s := d.Spec
	f := facts{memory: s.Linux.Resources.Memory.Limit, pids: s.Linux.Resources.Pids.Limit, toolPids: d.Limits.Pids,
		uid: s.Process.User.UID, mounts: map[string]string{}}
	if c := s.Linux.Resources.CPU; c != nil {
		f.cpu = fmt.Sprintf("%d %d", c.Quota, c.Period)
	}
	for _, r := range s.Process.Rlimits {
		if r.Type == "RLIMIT_FSIZE" {
			f.tmpfs = r.Hard // the landlock tier's /tmp size: no tmpfs
		}
	}
	for _, m := range s.Mounts {
		switch {
		case m.Destination == "/tmp" && m.Type == "tmpfs":
			for _, o := range m.Options {
				if v, ok := strings.CutPrefix(o, "size="); ok {
					f.tmpfs, _ = strconv.ParseInt(v, 10, 64)
				}
			}
		case m.Type == "bind" && (strings.HasSuffix(m.Destination, "/data") || strings.HasSuffix(m.Destination, "/out")):
			f.mounts[m.Destination] = "ro"
			for _, o := range m.Options {
				if o == "rw" {
					f.mounts[m.Destination] = "rw"
				}
			}
		}
	}
	if d.Egress != nil {
		for _, a := range d.Egress.Allow {
			f.egress = append(f.egress, strings.TrimPrefix(a, "network:external:"))
		}
	}
	if f.tmpfs == 0 {
		f.tmpfs = d.Limits.TmpfsBytes
	}
	return f
}

// recordedPlan is the facts of the plan run runID recorded: the one its
// backend was given.
func recordedPlan(t *testing.T, runID string) facts {
	b, err := os.ReadFile(filepath.Join(env.stateDir, "runs", runID, "plan.json"))
	must(t, err)
	var p planJSON
	must(t, json.Unmarshal(b, &p))
	return p.facts()
}

// readInside reads what the tool printed of itself: its uid, its /tmp's
// size and the access of its grant mounts — with noMounts (the landlock
// tier), its file size limit and what it could write and read.
func (f *facts) readInside(t *testing.T, out, dir string, noMounts bool) {
	f.mounts = map[string]string{}
	var quota, period string
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 4 && fields[0] == "CG" && fields[1] == "cpu.max":
			f.cpu = fields[2] + " " + fields[3]
		case len(fields) == 3 && fields[0] == "CG" && fields[1] == "cpu/cpu.cfs_quota_us":
			quota = fields[2]
		case len(fields) == 3 && fields[0] == "CG" && fields[1] == "cpu/cpu.cfs_period_us":
			period = fields[2]
		case len(fields) == 2 && fields[0] == "UID":
			f.uid, _ = strconv.ParseInt(fields[1], 10, 64)
		case len(fields) == 3 && fields[0] == "TMP":
			blocks, _ := strconv.ParseInt(fields[1], 10, 64)
			size, _ := strconv.ParseInt(fields[2], 10, 64)
			f.tmpfs = blocks * size
		case len(fields) == 3 && fields[0] == "CG" && strings.HasPrefix(filepath.Base(fields[1]), "memory."):
			f.memory, _ = strconv.ParseInt(fields[2], 10, 64)
		case len(fields) == 3 && fields[0] == "CG" && filepath.Base(fields[1]) == "pids.max":
			f.pids, _ = strconv.ParseInt(fields[2], 10, 64)
		case len(fields) == 3 && fields[0] == "MOUNT" && !noMounts && (fields[1] == filepath.Join(dir, "data") || fields[1] == filepath.Join(dir, "out")):
			f.mounts[fields[1]] = strings.SplitN(fields[2], ",", 2)[0]
		case len(fields) == 3 && fields[0] == "ACCESS" && noMounts:
			f.mounts[fields[1]] = fields[2]
		}
	}
	if quota != "" && period != "" {
		f.cpu = quota + " " + period
	}
	if noMounts {
		f.tmpfs = 0
		for _, line := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(line, "FSIZE "); ok {
				f.tmpfs, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
		}
	}
	if f.tmpfs == 0 || f.uid < 0 {
		t.Fatalf("the tool printed no /tmp size or uid: %s", out)
	}
}

// podLimits are the CPU and memory limits of the running contract pod,
// read from its cgroup on this host (the test cluster's node; its
// kubelet's cgroupfs driver names it pod<UID>), cpu as cgroup v2's
// cpu.max says it; "" until the pod runs.
func podLimits(t *testing.T) (cpu string, memory int64) {
	var l struct {
		Items []struct {
			Metadata struct {
				UID string `json:"uid"`
			} `json:"metadata"`
			Status struct {
				Phase string `json:"phase"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := kubeRequest("GET", "/api/v1/namespaces/"+kubeNamespace+"/pods?labelSelector=dev.sandboxed.tool%3Dcontract", "", &l); err != nil {
		t.Fatalf("list the contract pod: %v", err)
	}
	for _, p := range l.Items {
		if p.Status.Phase != "Running" {
			continue
		}
		// The pod's folder in the cpu hierarchy (v1: cpu, or cpu,cpuacct
		// where cpu is a link to it; v2: the one hierarchy), a QoS class
		// folder or two below the kubelet's root; the memory hierarchy
		// has it at the same place.
		var found, rel string
		for _, root := range []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup"} {
			_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
				switch {
				case err != nil && path == root:
					return filepath.SkipAll // no such hierarchy here
				case err != nil || !d.IsDir():
					return nil
				}
				if d.Name() == "pod"+p.Metadata.UID {
					found, rel = path, strings.TrimPrefix(path, root)
					return filepath.SkipAll
				}
				if strings.Count(strings.TrimPrefix(path, root), "/") >= 4 {
					return filepath.SkipDir
				}
				return nil
			})
			if found != "" {
				break
			}
		}
		if found == "" {
			return "", 0
		}
		read := func(name string) string {
			v, err := os.ReadFile(filepath.Join(found, name))
			if err != nil {
				v, err = os.ReadFile(filepath.Join("/sys/fs/cgroup/memory", rel, name))
			}
			if err != nil {
				return ""
			}
			return strings.TrimSpace(string(v))
		}
		mem := read("memory.max")
		if mem == "" {
			mem = read("memory.limit_in_bytes")
		}
		memory, _ = strconv.ParseInt(mem, 10, 64)
		if cpu = read("cpu.max"); cpu == "" {
			cpu = read("cpu.cfs_quota_us") + " " + read("cpu.cfs_period_us")
		}
		if memory == 0 || cpu == " " {
			t.Fatalf("the pod's cgroup %s has no CPU or memory limit (cpu %q, memory %q)", found, cpu, mem)
		}
		return cpu, memory
	}
	return "", 0
}

// findMarked is the host pid of the process whose argv[0] is mark.
func findMarked(mark string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.HasPrefix(string(b), mark+"\x00") {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			return pid
		}
	}
	return 0
}

// hostUID is pid's real uid as the host sees it.
func hostUID(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	t.Fatalf("no Uid in /proc/%d/status", pid)
	return -1
}

// cgroupLimits are the memory, pids and CPU limits of pid's cgroup, read
// from the host's cgroupfs (v1 controllers or v2); cpu as cpu.max says it.
func cgroupLimits(t *testing.T, pid int) (memory, pids int64, cpu string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	must(t, err)
	read := func(p string) int64 {
		v, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
		if err != nil {
			t.Fatalf("%s: %q", p, v)
		}
		return n
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			switch ctl {
			case "memory":
				memory = read(filepath.Join("/sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes"))
			case "pids":
				pids = read(filepath.Join("/sys/fs/cgroup/pids", parts[2], "pids.max"))
			case "cpu":
				dir := filepath.Join("/sys/fs/cgroup", parts[1], parts[2]) // "cpu" or "cpu,cpuacct"
				cpu = fmt.Sprintf("%d %d", read(filepath.Join(dir, "cpu.cfs_quota_us")), read(filepath.Join(dir, "cpu.cfs_period_us")))
			case "":
				if parts[0] == "0" && memory == 0 {
					if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
						memory = read(filepath.Join("/sys/fs/cgroup", parts[2], "memory.max"))
						pids = read(filepath.Join("/sys/fs/cgroup", parts[2], "pids.max"))
						v, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", parts[2], "cpu.max"))
						if err != nil {
							t.Fatalf("read cpu.max: %v (is the cpu controller enabled for the run's cgroup?)", err)
						}
						cpu = strings.TrimSpace(string(v))
					}
				}
			}
		}
	}
	if memory == 0 || pids == 0 || cpu == "" {
		t.Fatalf("no memory, pids or cpu limit found for pid %d in:\n%s", pid, b)
	}
	return memory, pids, cpu
}
