package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/xdg"
	"github.com/sandboxed-dev/sandboxed/isolation"
)

// StateDir is where run records and the audit log live:
// $SANDBOXED_STATE_DIR, else $XDG_STATE_HOME/sandboxed, else
// ~/.local/state/sandboxed, else — for a user whose home is missing or not
// theirs to write (a CI container's --user 1000 has HOME=/) — the runtime
// directory's state/, which lasts as long as the machine or container.
func StateDir() string {
	if d := os.Getenv("SANDBOXED_STATE_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) { // relative: ignored, as XDG says
		return filepath.Join(d, "sandboxed")
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return filepath.Join(xdg.RuntimeDir(), "state")
	}
	dir := filepath.Join(home, ".local", "state", "sandboxed")
	if _, err := os.Stat(dir); err != nil && !writable(xdg.ExistingPrefix(dir)) {
		return filepath.Join(xdg.RuntimeDir(), "state")
	}
	return dir
}

// writable reports whether this process may create entries in dir.
func writable(dir string) bool {
	return syscall.Access(dir, 2 /* W_OK */) == nil
}

// RuntimeDir is where per-run host directories (sockets, bookkeeping) live.
// It is short, so Unix socket paths stay under the kernel's 108-byte limit:
// $SANDBOXED_RUNTIME_DIR, else /run/sandboxed for root, else
// $XDG_RUNTIME_DIR/sandboxed, else /tmp/sandboxed-UID.
func RuntimeDir() string { return xdg.RuntimeDir() }

// NewRunID returns a fresh run id: UTC time then 6 random bytes, so ids sort
// by start time and are safe in cgroup names, Docker labels and paths.
func NewRunID(now time.Time) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("read random: %v", err))
	}
	return now.UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// RunDir is the run record directory of runID under stateDir.
func RunDir(stateDir, runID string) string {
	return filepath.Join(stateDir, "runs", runID)
}

// warmRecord builds, once per process and beside the caller, encoding/json's
// encoders for the run record's types. The first encoding of a plan builds
// one for every type of the OCI runtime spec, about a millisecond of a CLI
// run's time; a run starts this when it is prepared, so that writeRecord at
// its end only encodes. It also looks the user up for the audit line
// (os/user keeps the answer; reading the user database is 0.1 ms). The
// encoders and that answer are all it leaves behind.
var warmRecord = sync.OnceFunc(func() {
	go func() {
		_, _ = json.Marshal(&isolation.Plan{Spec: &specs.Spec{}})
		_, _ = json.Marshal(&Result{})
		_, _ = user.Current()
	}()
})

// stagingDir is where run records are written before they are renamed
// into place (writeRecord): a directory of its own, so that gc looks for
// the leftovers of a crash there without reading every record's name (the
// runs directory keeps one per run, and a scan of ten thousand costs a run
// about 10 ms).
func stagingDir(stateDir string) string { return filepath.Join(stateDir, "runs", ".staging") }

// writeRecord stores result.json, stdout and stderr (those that are not
// empty) of a run, and plan.json, the plan its backend was given
// (RecordedPlan), when it got that far. The files are written into a directory under stagingDir that
// is renamed into place, so a record that is visible is whole. They are
// not fsync'd: the record is a convenience, and the audit log (fsync'd) is
// what survives a crash.
func writeRecord(stateDir string, r *Result, plan *isolation.Plan, stdout, stderr []byte) error {
	dir := RunDir(stateDir, r.RunID)
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode run record: %w", err)
	}
	// An output the run did not write is no file: each file is an inode
	// to allocate, and on some file systems (ext4 without a journal, after
	// many removals) that is most of a record's cost.
	files := map[string][]byte{"result.json": append(js, '\n')}
	if len(stdout) > 0 {
		files["stdout"] = stdout
	}
	if len(stderr) > 0 {
		files["stderr"] = stderr
	}
	if plan != nil {
		pj, err := json.MarshalIndent(RecordedPlan(plan), "", "  ")
		if err != nil {
			return fmt.Errorf("encode run record: %w", err)
		}
		files["plan.json"] = append(pj, '\n')
	}
	staging := stagingDir(stateDir)
	if err := os.MkdirAll(staging, 0o700); err != nil {
		return fmt.Errorf("create run records dir %s: %w", staging, err)
	}
	tmp, err := os.MkdirTemp(staging, r.RunID+"-")
	if err != nil {
		return fmt.Errorf("create run record %s: %w", dir, err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o600); err != nil {
			os.RemoveAll(tmp)
			return fmt.Errorf("write run record: %w", err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("store run record %s: %w", dir, err)
	}
	return nil
}

// ensurePrivateDir makes dir (mode 0711) if it is missing and checks that
// it is a real directory owned by this user that nobody else can write:
// the run's sockets live under it, and another user who could rename
// them could drive a sandbox's init or its egress.
func ensurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return fmt.Errorf("create runtime dir %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check runtime dir %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("runtime dir %s is not a directory (a link?): refusing", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("runtime dir %s belongs to uid %d, not to you (%d): refusing", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("runtime dir %s is writable by others (mode %v): refusing", dir, fi.Mode().Perm())
	}
	return nil
}

// RecordedPlan is plan as the run record stores it: whole, except the
// values of its environment variables, which may hold what env: grants
// passed from the host (tokens); their names stay. The plan is not
// changed.
func RecordedPlan(plan *isolation.Plan) *isolation.Plan {
	cp := *plan
	if plan.Spec == nil || plan.Spec.Process == nil {
		return &cp
	}
	spec := *plan.Spec
	proc := *plan.Spec.Process
	proc.Env = make([]string, len(plan.Spec.Process.Env))
	for i, kv := range plan.Spec.Process.Env {
		k, _, _ := strings.Cut(kv, "=")
		proc.Env[i] = k + "=" + redacted
	}
	spec.Process = &proc
	cp.Spec = &spec
	return &cp
}

// redacted stands for a value the run record leaves out.
const redacted = "(not recorded)"
