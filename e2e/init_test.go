package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The init sandboxed carries is kept in the cache directory and runs
// from there (every other test). When the cache could be changed by
// someone else it is neither used nor written: the process tier runs the
// init from a sealed memory file, the container tier mounts the sandboxed
// binary itself, and the run works the same.
func TestInitWhenTheCacheIsUnsafe(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		unsafe := filepath.Join(dir, "cache")
		if err := os.Mkdir(unsafe, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(unsafe, 0o777); err != nil {
			t.Fatal(err)
		}
		tool := toolYAML(t, dir, tier, "whoinit", `echo "INIT=$(cat /proc/1/comm)"`, nil, "")
		r, stderr := runCached(t, dir, tool, unsafe)
		if r.Status != "ok" || !strings.Contains(r.Stdout, "INIT=sandboxed-init") {
			t.Fatalf("status %s, stdout %q, error %+v, stderr %s", r.Status, r.Stdout, r.Error, stderr)
		}
		if left, _ := filepath.Glob(filepath.Join(unsafe, "sandboxed", "init-*")); len(left) > 0 {
			t.Errorf("the init was written into a world-writable cache: %v", left)
		}
	})
}

// The cache every other test uses holds exactly one init, read-only.
func TestInitIsCachedReadOnly(t *testing.T) {
	begin(t)
	dir := workdir(t, nil)
	tool := toolYAML(t, dir, "process", "cached", `cat /proc/1/comm`, nil, "")
	r, c := runJSON(t, dir, tool)
	expect(t, r, c, "ok", 0)
	inits, _ := filepath.Glob(filepath.Join(env.cacheHome, "sandboxed", "init-*"))
	if len(inits) != 1 {
		t.Fatalf("inits in the cache: %v, want one", inits)
	}
	fi, err := os.Stat(inits[0])
	if err != nil || fi.Mode().Perm() != 0o555 {
		t.Fatalf("cached init %s: %v %v, want mode 0555", inits[0], fi, err)
	}
	if d := sandboxed(t, dir, "doctor"); !strings.Contains(d.stdout, "kept at "+inits[0]) {
		t.Errorf("doctor does not name the cached init:\n%s", d.stdout)
	}
}

// A cached init the kernel will not execute (here: a noexec mount on the
// file itself, as a security module's denial would) is not the end of the
// process tier: it starts the init from a sealed memory file instead.
func TestInitFallsBackWhenTheCachedOneCannotRun(t *testing.T) {
	begin(t)
	dir := workdir(t, nil)
	cache := filepath.Join(dir, "cache")
	if err := os.Mkdir(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	giveToRunner(t, cache)
	tool := toolYAML(t, dir, "process", "noexec", `echo "INIT=$(cat /proc/1/comm)"`, nil, "")
	if r, stderr := runCached(t, dir, tool, cache); r.Status != "ok" {
		t.Fatalf("first run: %s %+v %s", r.Status, r.Error, stderr)
	}
	inits, _ := filepath.Glob(filepath.Join(cache, "sandboxed", "init-*"))
	if len(inits) != 1 {
		t.Fatalf("cached inits: %v", inits)
	}
	for _, args := range [][]string{{"--bind", inits[0], inits[0]}, {"-o", "remount,bind,ro,noexec", inits[0]}} {
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			t.Fatalf("mount %v: %v: %s", args, err, out)
		}
	}
	defer exec.Command("umount", inits[0]).Run()
	if err := exec.Command(inits[0]).Run(); err == nil {
		t.Fatal("the noexec mount did not stop exec; the test proves nothing")
	}
	r, stderr := runCached(t, dir, tool, cache)
	if r.Status != "ok" || !strings.Contains(r.Stdout, "INIT=sandboxed-init") {
		t.Fatalf("with the cached init unrunnable: status %s, stdout %q, error %+v, stderr %s", r.Status, r.Stdout, r.Error, stderr)
	}
}

// runCached runs `sandboxed run --json tool` in dir with XDG_CACHE_HOME
// set to cache and decodes the result; the second value is its stderr.
func runCached(t *testing.T, dir, tool, cache string) (result, string) {
	t.Helper()
	cmd := command("run", "--json", tool)
	cmd.Dir = dir
	cmd.Env = append(runEnv(), "XDG_CACHE_HOME="+cache)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	var r result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("not a result: %v\nstdout: %s\nstderr: %s", err, out.String(), errb.String())
	}
	return r, errb.String()
}

// An elevated run is root in its own user namespace and an unprivileged
// id outside: as root, the first id of sandboxed's reserved range;
// rootless, the user. Elevated containers need userns-remap, which these
// hosts do not have: process tier only.
func TestElevatedProcessRun(t *testing.T) {
	begin(t)
	dir := workdir(t, nil)
	tool := toolYAML(t, dir, "process", "elevated",
		`id -u; grep -E '^CapEff:' /proc/self/status; cat /proc/self/uid_map`, nil, "  execution-privilege: elevated\n")
	r, c := runJSON(t, dir, "--approve", "elevated", tool)
	expect(t, r, c, "ok", 0)
	for _, want := range []string{"0\n", "CapEff:\t00000000a80425fb"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.Stdout)
		}
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	m := strings.Fields(lines[len(lines)-1])
	if len(m) != 3 || m[0] != "0" || m[2] != "1" {
		t.Fatalf("uid_map %q: want root inside mapped to one id", lines[len(lines)-1])
	}
	if r := env.runner; r != nil && m[1] != fmt.Sprint(r.uid) {
		t.Errorf("rootless elevated maps root to %s, want the user %d", m[1], r.uid)
	} else if r == nil && (m[1] == "0" || m[1] == "65534") {
		t.Errorf("root inside maps to host %s, want sandboxed's reserved range", m[1])
	}
	if strings.Contains(r.Stdout, "         0          0") {
		t.Errorf("root inside maps to host root:\n%s", r.Stdout)
	}
}

// No grant reaches sandboxed's own files, whatever the policy: a tool
// that could write the cached init would run its code as the next
// sandbox's init. A grant of the cache itself is denied; a grant above
// it has it hidden.
func TestOwnDirsAreOutOfReach(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		dir := workdir(t, nil)
		// Every test's runs keep their init here, so it exists.
		own := filepath.Join(env.cacheHome, "sandboxed")
		if _, err := os.Stat(own); err != nil {
			r, c := runJSON(t, dir, toolYAML(t, dir, "process", "warm", "true", nil, ""))
			expect(t, r, c, "ok", 0)
		}
		deny := toolYAML(t, dir, tier, "intocache", `ls `+own, []string{"filesystem:write:" + own}, "")
		r, c := runJSON(t, dir, deny)
		expect(t, r, c, "denied", 126)

		above := toolYAML(t, dir, tier, "abovecache", `
echo ok > `+env.cacheHome+`/granted.txt && echo WROTE-GRANTED
ls `+own+`/ 2>&1 | grep -c init- || true
if echo evil > `+own+`/init-0000000000000000 2>/dev/null; then echo PLANTED; fi`, []string{"filesystem:write:" + env.cacheHome}, "")
		r, c = runJSON(t, dir, "--approve", "filesystem:write:"+env.cacheHome, above)
		if r.Status == "denied" {
			t.Fatalf("a grant above the cache was denied: %+v", r.Error)
		}
		expect(t, r, c, "ok", 0)
		if !strings.Contains(r.Stdout, "WROTE-GRANTED") {
			t.Fatalf("positive control: the grant did not work:\n%s\n%s", r.Stdout, r.Stderr)
		}
		if strings.Contains(r.Stdout, "PLANTED") {
			t.Errorf("a tool wrote into the init cache:\n%s", r.Stdout)
		}
		os.Remove(filepath.Join(env.cacheHome, "granted.txt"))
		if left, _ := filepath.Glob(filepath.Join(own, "init-0000000000000000")); len(left) > 0 {
			os.Remove(left[0])
			t.Errorf("a planted init is in the cache")
		}
	})
}

// The cache is made (and the init put in it) before the run is planned,
// so a grant that holds a cache which did not exist yet still has it
// hidden: the run cannot create the init inside the tool's reach.
func TestFreshCacheIsOutOfReach(t *testing.T) {
	begin(t)
	dir := workdir(t, nil)
	home := filepath.Join(dir, "fresh")
	must(t, os.Mkdir(home, 0o700))
	giveToRunner(t, home)
	own := filepath.Join(home, "sandboxed")
	tool := toolYAML(t, dir, "process", "freshcache", `
echo ok > `+home+`/granted.txt && echo WROTE-GRANTED
if ls `+own+`/init-* >/dev/null 2>&1; then echo SEES-INIT; fi
if echo evil > `+own+`/init-0000000000000000 2>/dev/null; then echo PLANTED; fi`, []string{"filesystem:write:" + home}, "")
	cmd := command("run", "--json", "--approve", "filesystem:write:"+home, tool)
	cmd.Dir = dir
	cmd.Env = append(runEnv(), "XDG_CACHE_HOME="+home)
	out, _ := cmd.Output()
	var r result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("not a result: %v: %s", err, out)
	}
	if r.Status != "ok" || !strings.Contains(r.Stdout, "WROTE-GRANTED") {
		t.Fatalf("status %s %+v stdout %q stderr %q", r.Status, r.Error, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stdout, "SEES-INIT") || strings.Contains(r.Stdout, "PLANTED") {
		t.Errorf("the fresh cache was within the tool's reach:\n%s", r.Stdout)
	}
	if inits, _ := filepath.Glob(filepath.Join(own, "init-*")); len(inits) != 1 || strings.HasSuffix(inits[0], "init-0000000000000000") {
		t.Errorf("cache holds %v, want the one real init", inits)
	}
}
