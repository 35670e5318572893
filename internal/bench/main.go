//go:build linux

// Command bench times sandboxed against its peers, side by side and
// interleaved in one run, and prints p50/p90 and the ratios the project's
// bars are stated in. It is run by `make bench`; it asserts nothing, it
// reports.
//
//	process tier  vs  bare exec and bubblewrap (bwrap --unshare-all, read-only /usr), and
//	                  the floor under any cold run (floor/: a Go program, bwrap, a Go init, an fsync)
//	rootless process tier vs bubblewrap, both run as an unprivileged user
//	container tier vs docker run --rm --network none of the same image
//	container tier under runsc vs docker run --runtime runsc (when the engine has runsc)
//	Kubernetes backend: per-run latency, and throughput with 4 and 16 runs at once (kubernetes.go)
//
// The rootless pair runs as -user (default $SANDBOXED_BENCH_USER, else
// none: the pair is skipped and says so) when
// the bench runs as root, and as the bench's own user otherwise.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"
)

type peer struct {
	name string
	argv []string
	dir  string
	env  []string
	cred *syscall.Credential // run as this user; nil: as the bench
}

func main() {
	bin := flag.String("bin", "bin/sandboxed", "the sandboxed binary to time")
	n := flag.Int("n", 50, "runs of each peer")
	image := flag.String("image", "sandboxed-runner:latest", "runner image for the container tier")
	skipContainer := flag.Bool("no-container", false, "skip the container tier")
	skipProxy := flag.Bool("no-proxy", false, "skip the egress proxy latency")
	skipRunsc := flag.Bool("no-runsc", false, "skip the container tier under runsc")
	onlyResident := flag.Bool("resident", false, "time only the resident controller (mcp, serve)")
	rootlessUser := flag.String("user", os.Getenv("SANDBOXED_BENCH_USER"), "unprivileged user the rootless pair runs as (as root)")
	flag.Parse()

	if err := ensureBwrap(); err != nil {
		fatal(err)
	}
	abs, err := filepath.Abs(*bin)
	if err != nil {
		fatal(err)
	}
	work, err := os.MkdirTemp("", "sandboxed-bench-")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(work)
	// The runtime directories on a tmpfs, where sandboxed keeps them by
	// default (/run/sandboxed, $XDG_RUNTIME_DIR/sandboxed); the records
	// and the audit log on disk, as in the user's state directory.
	rt, err := os.MkdirTemp(runtimeBase(), "sandboxed-bench-")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(rt)
	if err := os.Chmod(rt, 0o755); err != nil {
		fatal(err)
	}
	state := filepath.Join(work, "state")
	benchEnv := []string{"SANDBOXED_STATE_DIR=" + state, "SANDBOXED_RUNTIME_DIR=" + filepath.Join(rt, "run")}

	floor, err := floorPeer(work)
	if err != nil {
		fatal(err)
	}

	tool := func(name, tier string, extra ...string) string {
		p := filepath.Join(work, name+".yaml")
		def := fmt.Sprintf(`name: %s
description: Does nothing; for timing the sandbox itself.
bash: "true"
tags: [read]
security:
  isolation: %s
resources:
  max-memory: 64MB
  timeout: 10000
sandboxed:
  pids-limit: 64
%s`, name, tier, strings.Join(extra, ""))
		if err := os.WriteFile(p, []byte(def), 0o644); err != nil {
			fatal(err)
		}
		return p
	}

	groups := [][]peer{{
		{name: "bare exec", argv: []string{"/bin/bash", "-c", "true"}},
		{name: "bwrap", argv: bwrapArgv()},
		// The CLI starting and exiting, nothing else: the floor under
		// every sandboxed command, whatever the sandbox costs.
		{name: "sandboxed version", argv: []string{abs, "version"}},
		floor,
		// The landlock tier standing in for the process tier, as in a
		// CI container (here beside it, on the host).
		{name: "sandboxed landlock", argv: []string{abs, "run", "--isolation", "landlock", "--approve", "isolation-landlock", tool("noop-landlock", "process")}, dir: work, env: benchEnv},
		{name: "sandboxed process", argv: []string{abs, "run", tool("noop-process", "process")}, dir: work, env: benchEnv},
	}}
	if g, err := rootlessGroup(abs, work, rt, *rootlessUser, tool("noop-rootless", "process")); err != nil {
		fmt.Fprintln(os.Stderr, "bench: rootless process tier skipped:", err)
	} else {
		groups = append(groups, g)
	}
	if !*skipContainer {
		if err := exec.Command("docker", "image", "inspect", *image).Run(); err != nil {
			fmt.Fprintf(os.Stderr, "bench: container tier skipped: image %s missing (run: %s images build)\n", *image, abs)
		} else {
			groups = append(groups, []peer{
				{name: "docker run", argv: []string{"docker", "run", "--rm", "--network", "none", *image, "/bin/bash", "-c", "true"}},
				{name: "sandboxed container", argv: []string{abs, "run", tool("noop-container", "container")}, dir: work, env: benchEnv},
			})
			// The container tier under gVisor against docker run with
			// the same runtime, when the engine has runsc.
			if out, err := exec.Command("docker", "info", "--format", "{{json .Runtimes}}").Output(); err != nil || !strings.Contains(string(out), `"runsc"`) {
				fmt.Fprintf(os.Stderr, "bench: container tier under runsc skipped: the engine has no runtime runsc (sudo %s setup --runtime runsc)\n", abs)
			} else if !*skipRunsc {
				groups = append(groups, []peer{
					{name: "docker run --runtime runsc", argv: []string{"docker", "run", "--rm", "--runtime", "runsc", "--network", "none", *image, "/bin/bash", "-c", "true"}},
					{name: "sandboxed container (runsc)", argv: []string{abs, "run", tool("noop-runsc", "container", "  runtime: runsc\n")}, dir: work, env: benchEnv},
				})
			}
		}
	}

	if !*skipProxy {
		if err := proxyLatency(*n * 40); err != nil {
			fmt.Fprintln(os.Stderr, "bench: egress proxy:", err)
		}
	}

	haveImage := !*skipContainer && exec.Command("docker", "image", "inspect", *image).Run() == nil
	if err := residentBench(abs, work, benchEnv, *image, haveImage, *n); err != nil {
		fmt.Fprintln(os.Stderr, "bench: resident controller:", err)
	}
	if *onlyResident {
		return
	}
	for _, g := range groups {
		for _, p := range g { // warm caches, and fail early if a peer cannot run
			if err := once(p); err != nil {
				fatal(fmt.Errorf("%s: %w", p.name, err))
			}
		}
		times := make(map[string][]time.Duration)
		for i := 0; i < *n; i++ {
			for j := range g { // rotate the order so no peer always goes first
				p := g[(i+j)%len(g)]
				t0 := time.Now()
				if err := once(p); err != nil {
					fatal(fmt.Errorf("%s: %w", p.name, err))
				}
				times[p.name] = append(times[p.name], time.Since(t0))
			}
		}
		report(g, times, *n)
	}
	kubernetesRows(abs, work, benchEnv, tool)
}

// ensureBwrap installs bubblewrap from Debian's packages when it is
// missing (as root on a Debian-like system), so the bench always has its
// peer; elsewhere it says how to get it.
func ensureBwrap() error {
	if _, err := exec.LookPath("bwrap"); err == nil {
		return nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil || os.Geteuid() != 0 {
		return fmt.Errorf("bubblewrap (bwrap) is missing and the bench cannot install it here: install the bubblewrap package, then run make bench again")
	}
	fmt.Fprintln(os.Stderr, "bench: installing bubblewrap from Debian's packages")
	for _, args := range [][]string{{"update", "-qq"}, {"install", "-y", "-qq", "--no-install-recommends", "bubblewrap"}} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	_, err := exec.LookPath("bwrap")
	return err
}

func bwrapArgv() []string { return bwrapAround(nil, "/bin/bash", "-c", "true") }

// runtimeBase is a tmpfs to keep the runtime directories in: /dev/shm
// where it is one, else the temporary directory.
func runtimeBase() string {
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) == nil && st.Type == unix.TMPFS_MAGIC {
		return "/dev/shm"
	}
	return os.TempDir()
}

// bwrapAround is bubblewrap's argv for cmd, with binds added before it.
func bwrapAround(binds []string, cmd ...string) []string {
	a := []string{"bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr"}
	for _, l := range []string{"bin", "sbin", "lib", "lib64", "lib32"} {
		if fi, err := os.Lstat("/" + l); err == nil {
			if fi.Mode()&os.ModeSymlink != 0 {
				t, _ := os.Readlink("/" + l)
				a = append(a, "--symlink", t, "/"+l)
			} else {
				a = append(a, "--ro-bind", "/"+l, "/"+l)
			}
		}
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
	a = append(a, binds...)
	return append(a, cmd...)
}

// floorPeer builds ./internal/bench/floor into work and returns it as a
// peer: a Go program that runs bubblewrap around a Go init that execs
// `bash -c true`, then appends an fsync'd line — what every cold run
// costs at least, whatever it is built on.
func floorPeer(work string) (peer, error) {
	bin := filepath.Join(work, "floor")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./internal/bench/floor")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return peer{}, fmt.Errorf("build the floor: %v: %s", err, out)
	}
	around := bwrapAround([]string{"--ro-bind", bin, "/floor"}, "/floor", "init", "/bin/bash", "-c", "true")
	var err error
	if around[0], err = exec.LookPath(around[0]); err != nil {
		return peer{}, err
	}
	argv := append([]string{bin, filepath.Join(work, "floor-audit.jsonl")}, around...)
	return peer{name: floorName, argv: argv}, nil
}

const floorName = "floor (Go CLI, bwrap, Go init, fsync)"

// rootlessGroup is bwrap against the process tier, both run as name (or
// as this unprivileged process), with directories that user owns.
func rootlessGroup(bin, work, rt, name, tool string) ([]peer, error) {
	var cred *syscall.Credential
	uid, gid := os.Getuid(), os.Getgid()
	home, _ := os.UserHomeDir()
	if os.Geteuid() == 0 {
		if name == "" {
			return nil, fmt.Errorf("no unprivileged user to run it as (make bench BENCH_USER=NAME, or SANDBOXED_BENCH_USER)")
		}
		u, err := user.Lookup(name)
		if err != nil {
			return nil, err
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		if uid == 0 {
			return nil, fmt.Errorf("%s is root", name)
		}
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
		home = filepath.Join(work, "home")
	}
	var env []string
	for _, d := range []string{"home", "rstate", "rrun", "rcache"} {
		p := filepath.Join(work, d)
		if d == "rrun" {
			p = filepath.Join(rt, d)
		}
		if err := os.MkdirAll(p, 0o700); err != nil {
			return nil, err
		}
		if err := os.Chown(p, uid, gid); err != nil && cred != nil {
			return nil, err
		}
	}
	if err := os.Chmod(work, 0o755); err != nil {
		return nil, err
	}
	env = append(env, "HOME="+home, "SANDBOXED_STATE_DIR="+filepath.Join(work, "rstate"),
		"SANDBOXED_RUNTIME_DIR="+filepath.Join(rt, "rrun"), "XDG_CACHE_HOME="+filepath.Join(work, "rcache"))
	g := []peer{
		{name: "bwrap (rootless)", argv: bwrapArgv(), cred: cred},
		{name: "sandboxed process (rootless)", argv: []string{bin, "run", tool}, dir: work, env: env, cred: cred},
	}
	if err := once(g[1]); err != nil {
		return nil, fmt.Errorf("%s: %w", g[1].name, err)
	}
	return g, nil
}

func once(p peer) error {
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), p.env...)
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func pct(d []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(q*float64(len(s)-1))]
}

func report(g []peer, times map[string][]time.Duration, n int) {
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "PEER\tP50\tP90\tRUNS\n")
	for _, p := range g {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", p.name, ms(pct(times[p.name], .5)), ms(pct(times[p.name], .9)), n)
	}
	w.Flush()
	last := g[len(g)-1].name
	for _, p := range g[:len(g)-1] {
		r50 := float64(pct(times[last], .5)) / float64(pct(times[p.name], .5))
		r90 := float64(pct(times[last], .9)) / float64(pct(times[p.name], .9))
		fmt.Printf("ratio %s / %s: p50 %.2fx, p90 %.2fx\n", last, p.name, r50, r90)
	}
	switch last {
	case "sandboxed process (rootless)":
		r := float64(pct(times[last], .5)) / float64(pct(times["bwrap (rootless)"], .5))
		fmt.Printf("bar: rootless process p50 <= 1.5x bwrap as the same user: %s (%.2fx)\n\n", verdict(r <= 1.5), r)
	case "sandboxed process":
		r := float64(pct(times[last], .5)) / float64(pct(times["bwrap"], .5))
		fmt.Printf("bar: process p50 <= 1.5x bwrap: %s (%.2fx)\n", verdict(r <= 1.5), r)
		if v, ok := times["sandboxed version"]; ok {
			fmt.Printf("floor: the CLI's own start-up and exit (sandboxed version) is %.2fx bwrap\n", float64(pct(v, .5))/float64(pct(times["bwrap"], .5)))
		}
		if v, ok := times[floorName]; ok {
			fmt.Printf("floor: a Go program running bwrap around a Go init, then fsyncing a line, is %.2fx bwrap\n", float64(pct(v, .5))/float64(pct(times["bwrap"], .5)))
		}
		if v, ok := times["sandboxed landlock"]; ok {
			fmt.Printf("landlock: p50 %.2fx bwrap, %.2fx the process tier\n", float64(pct(v, .5))/float64(pct(times["bwrap"], .5)), float64(pct(v, .5))/float64(pct(times[last], .5)))
		}
		fmt.Println()
	case "sandboxed container (runsc)":
		// Reported, not a bar: gVisor's start dominates both peers.
		fmt.Println()
	case "sandboxed container":
		r := float64(pct(times[last], .5)) / float64(pct(times["docker run"], .5))
		fmt.Printf("bar: container p50 <= 0.9x docker run: %s (%.2fx)\n\n", verdict(r <= 0.9), r)
	}
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

// proxyLatency runs the egress package's 1 KB GET benchmarks (direct,
// through the proxy's socket, and through the in-sandbox relay plus the
// proxy — a tool's path), all in one run, and prints the p50 each adds.
func proxyLatency(iters int) error {
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", "GET", "-benchtime", fmt.Sprintf("%dx", iters), "./isolation/egress")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	p50 := map[string]float64{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := strings.TrimPrefix(f[0], "Benchmark")
		if i := strings.LastIndex(name, "-"); i > 0 {
			name = name[:i]
		}
		for i := 2; i+1 < len(f); i++ {
			if f[i+1] == "p50-ns" {
				fmt.Sscanf(f[i], "%g", new(float64))
				var v float64
				fmt.Sscanf(f[i], "%g", &v)
				p50[name] = v
			}
		}
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "1 KB GET\tP50\tADDED BY THE PROXY\n")
	for _, mode := range []string{"keepalive", "newconn"} {
		direct := p50["DirectGET/"+mode]
		for _, path := range []string{"DirectGET", "ProxiedGET", "RelayedGET"} {
			v := p50[path+"/"+mode]
			fmt.Fprintf(w, "%s/%s\t%.1fµs\t%+.1fµs\n", path, mode, v/1000, (v-direct)/1000)
		}
	}
	w.Flush()
	fmt.Println()
	return nil
}
