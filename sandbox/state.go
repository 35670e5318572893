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

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// StateDir is where run records and the audit log live:
// $SANDBOXED_STATE_DIR, else $XDG_STATE_HOME/sandboxed, else
// ~/.local/state/sandboxed.
func StateDir() string {
	if d := os.Getenv("SANDBOXED_STATE_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) { // relative: ignored, as XDG says
		return filepath.Join(d, "sandboxed")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = "/"
	}
	return filepath.Join(home, ".local", "state", "sandboxed")
}

// RuntimeDir is where per-run host directories (sockets, bookkeeping) live.
// It is short, so Unix socket paths stay under the kernel's 108-byte limit:
// $SANDBOXED_RUNTIME_DIR, else /run/sandboxed for root, else
// $XDG_RUNTIME_DIR/sandboxed, else /tmp/sandboxed-UID.
func RuntimeDir() string {
	if d := os.Getenv("SANDBOXED_RUNTIME_DIR"); d != "" {
		// A relative one is relative to the working directory; the plan
		// names the run's host directory by its absolute path.
		if abs, err := filepath.Abs(d); err == nil {
			return abs
		}
		return d
	}
	if os.Geteuid() == 0 {
		return "/run/sandboxed"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "sandboxed")
	}
	return fmt.Sprintf("/tmp/sandboxed-%d", os.Geteuid())
}

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

// recordFiles are the names of a run record's files, plan.json only for a
// run that got as far as a plan.
func recordFiles(withPlan bool) []string {
	if withPlan {
		return []string{"stdout", "stderr", "result.json", "plan.json"}
	}
	return []string{"stdout", "stderr", "result.json"}
}

// writeRecord stores result.json, stdout and stderr of a run, and
// plan.json, the plan its backend was given (RecordedPlan), when it got
// that far. The files are written into a directory under stagingDir that
// is renamed into place, so a record that is visible is whole. They are
// not fsync'd: the record is a convenience, and the audit log (fsync'd) is
// what survives a crash. staged, when not nil, is that directory made
// while the run ran (stageRecord); writeRecord uses it when it can and
// removes it otherwise.
func writeRecord(stateDir string, r *Result, plan *isolation.Plan, stdout, stderr []byte, staged *stagedRecord) error {
	dir := RunDir(stateDir, r.RunID)
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		staged.discard()
		return fmt.Errorf("encode run record: %w", err)
	}
	files := map[string][]byte{"stdout": stdout, "stderr": stderr, "result.json": append(js, '\n')}
	if plan != nil {
		pj, err := json.MarshalIndent(RecordedPlan(plan), "", "  ")
		if err != nil {
			staged.discard()
			return fmt.Errorf("encode run record: %w", err)
		}
		files["plan.json"] = append(pj, '\n')
	}
	write := fillStaged
	tmp := staged.take(r.RunID, plan != nil)
	if tmp == "" {
		if tmp, err = makeRecordDir(stateDir, r.RunID); err != nil {
			return fmt.Errorf("create run record %s: %w", dir, err)
		}
		write = writeFresh
	}
	for name, data := range files {
		if err := write(filepath.Join(tmp, name), data); err != nil {
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

// writeFresh creates the file at path with data.
func writeFresh(path string, data []byte) error { return os.WriteFile(path, data, 0o600) }

// fillStaged writes data into the empty file at path that stageRecord
// created. It does not truncate the file: ext4 writes a file truncated to
// nothing back to disk as soon as it is closed (auto_da_alloc), which
// costs a record more than creating its files.
func fillStaged(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() != 0 {
		err = fmt.Errorf("%s is not empty", path)
	}
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// makeRecordDir makes a fresh staging directory for the record of runID.
func makeRecordDir(stateDir, runID string) (string, error) {
	staging := stagingDir(stateDir)
	if err := os.MkdirAll(staging, 0o700); err != nil {
		return "", err
	}
	return os.MkdirTemp(staging, runID+"-")
}

// stagedRecord is the staging directory of a run's record, made with its
// files (empty) while the run runs, so that writing the record at the end
// of the run only fills them in and renames the directory. Making a
// directory and creating files is what a record costs on a busy file
// system (a file system's inode allocation), about as much as the audit
// line's fsync, which the record is written beside; made ahead, it is off
// the path from the tool's exit to the run's report.
type stagedRecord struct {
	done     chan struct{}
	dir      string // "" when it could not be made
	runID    string
	withPlan bool
	made     time.Time
}

// stageRecord starts making, beside the caller, the staging directory of
// the record of runID (with plan.json when withPlan). The caller must
// hand the result to writeRecord, which uses or removes it; a controller
// that dies before leaves it to gc, as it would a record it was writing.
func stageRecord(stateDir, runID string, withPlan bool) *stagedRecord {
	s := &stagedRecord{done: make(chan struct{}), runID: runID, withPlan: withPlan}
	go func() {
		defer close(s.done)
		s.made = time.Now()
		dir, err := makeRecordDir(stateDir, runID)
		if err != nil {
			return // writeRecord makes it, and reports what fails
		}
		for _, name := range recordFiles(withPlan) {
			f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				os.RemoveAll(dir)
				return
			}
			f.Close()
		}
		s.dir = dir
	}()
	return s
}

// take waits for the staging directory and returns it when it is the
// record of runID with the files of a record with or without a plan, and
// young enough that gc cannot take it for a crashed controller's
// leftover (gc removes staging directories older than halfRecordAge);
// else it removes it and returns "". Nil-safe.
func (s *stagedRecord) take(runID string, withPlan bool) string {
	if s == nil {
		return ""
	}
	<-s.done
	if s.dir == "" {
		return ""
	}
	if s.runID != runID || s.withPlan != withPlan || time.Since(s.made) > halfRecordAge/2 {
		os.RemoveAll(s.dir)
		return ""
	}
	return s.dir
}

// discard removes the staging directory. Nil-safe.
func (s *stagedRecord) discard() {
	if s == nil {
		return
	}
	<-s.done
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
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
