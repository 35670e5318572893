package policy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sandboxed-dev/sandboxed/permissions"
)

// AuditRecord is one line of the audit log (JSON Lines). Field names are
// stable; docs/operations.md documents them.
type AuditRecord struct {
	Time             time.Time `json:"time"`
	User             string    `json:"user"`
	Host             string    `json:"host"`
	RunID            string    `json:"run_id"`
	Tool             string    `json:"tool"`
	Version          string    `json:"version,omitempty"`
	DefinitionPath   string    `json:"definition_path,omitempty"`
	DefinitionSHA256 string    `json:"definition_sha256,omitempty"`
	// Parameters are the bound parameters, masked with Mask.
	Parameters map[string]string `json:"parameters,omitempty"`
	// Approvals are the --approve values given.
	Approvals []string `json:"approvals,omitempty"`
	// Verdict is the policy's overall verdict.
	Verdict Verdict `json:"verdict,omitempty"`
	// Decisions are the policy's items, one per grant and security field.
	Decisions []AuditDecision `json:"decisions,omitempty"`
	// Tier is the isolation tier the run used.
	Tier string `json:"tier"`
	// SecurityTier is the tool's security tier (read_only … unknown).
	SecurityTier Tier `json:"security_tier,omitempty"`
	// Commands are the command lines run, masked with MaskText; recorded
	// only when security.auditing.record-command is set.
	Commands []string `json:"commands,omitempty"`
	// Status is the run's status: ok, failed, timeout, oom, denied, error.
	Status   string        `json:"status"`
	ExitCode int           `json:"exit_code"`
	Egress   []AuditEgress `json:"egress,omitempty"`
	// Output is the captured output; recorded only when
	// security.auditing.record-output is set, and masked with MaskText.
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
	// Warnings are the run's warnings (Result.Warnings).
	Warnings []string `json:"warnings,omitempty"`
	// Changes are what the run changed under its write grants.
	Changes *AuditChanges `json:"changes,omitempty"`
}

// AuditChanges are a run's changes under its write grants, as the audit
// log keeps them.
type AuditChanges struct {
	Created  int `json:"created"`
	Modified int `json:"modified"`
	Deleted  int `json:"deleted"`
	// Applied is false for a reviewed change that was not applied.
	Applied bool `json:"applied"`
	// Undo says whether `sandboxed undo RUN_ID` can put them back.
	Undo bool `json:"undo"`
	// Paths are "op path", deletions first (capped, as in the result).
	Paths []string `json:"paths,omitempty"`
}

// AuditDecision is one Item of a Decision, as the audit log keeps it.
type AuditDecision struct {
	Subject    string  `json:"subject"`
	Verdict    Verdict `json:"verdict"`
	Rule       string  `json:"rule"`
	ApprovedBy string  `json:"approved_by,omitempty"`
}

// AuditEgress summarises the connections to one host and port.
type AuditEgress struct {
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Verdict string `json:"verdict"` // allow, deny or refused-credential
	// Credentials name the credentials whose real values were sent.
	Credentials []string `json:"credentials,omitempty"`
	Connections int      `json:"connections"`
	BytesUp     int64    `json:"bytes_up"`
	BytesDown   int64    `json:"bytes_down"`
}

// NewAuditRecord fills the fields of a record that come from the request
// and the decision. The caller sets Time (or leaves it for AppendAudit),
// User, Host, DefinitionSHA256, Parameters, Commands, Status, ExitCode,
// Egress, Output and Error.
func NewAuditRecord(runID string, req Request, d Decision) AuditRecord {
	rec := AuditRecord{
		RunID: runID, Tool: req.Tool, Version: req.Version, DefinitionPath: req.DefinitionPath,
		Approvals: append([]string(nil), req.Approvals...),
		Verdict:   d.Verdict, Tier: string(d.Isolation), SecurityTier: d.Tier,
	}
	for _, it := range d.Items {
		rec.Decisions = append(rec.Decisions, AuditDecision{Subject: it.Subject, Verdict: it.Verdict, Rule: it.Rule, ApprovedBy: it.ApprovedBy})
	}
	return rec
}

// Masked replaces a sensitive value in the audit log.
const Masked = "***"

// IsSensitive reports whether a parameter is masked: it is named in
// sensitive (security.logging.sensitive-parameters, case-insensitive), or
// its name contains token, secret, password, passwd, key or credential.
func IsSensitive(name string, sensitive []string) bool {
	for _, s := range sensitive {
		if strings.EqualFold(s, name) {
			return true
		}
	}
	return permissions.LooksSecret(name)
}

// Mask returns a copy of params with the values of sensitive parameters
// (IsSensitive) replaced by Masked.
func Mask(params map[string]string, sensitive []string) map[string]string {
	if params == nil {
		return nil
	}
	out := make(map[string]string, len(params))
	for k, v := range params {
		if IsSensitive(k, sensitive) {
			v = Masked
		}
		out[k] = v
	}
	return out
}

// SensitiveValues returns the non-empty values of the sensitive
// parameters, for MaskText.
func SensitiveValues(params map[string]string, sensitive []string) []string {
	var out []string
	for k, v := range params {
		if v != "" && IsSensitive(k, sensitive) {
			out = append(out, v)
		}
	}
	return out
}

// MaskText replaces every occurrence of each non-empty value in s by
// Masked, longest value first (so a value containing another is masked
// whole).
func MaskText(s string, values []string) string {
	vs := append([]string(nil), values...)
	sort.Slice(vs, func(i, j int) bool { return len(vs[i]) > len(vs[j]) })
	for _, v := range vs {
		if v != "" {
			s = strings.ReplaceAll(s, v, Masked)
		}
	}
	return s
}

// AppendAudit appends rec as one line to the audit log at path, creating
// the file (0600) and its directory (0700) when missing, and returns once
// the line is on disk. A zero rec.Time is set to now (UTC).
//
// Lines appended at the same time by the goroutines of one process are
// group-committed (see auditCommitter): one locked write and one fsync for
// the lot, and each caller returns only after the fsync that covers its line
// has returned; when it fails, every caller whose line it covered gets the
// error. Each group is written with one write under an exclusive flock, after
// a newline if a crashed writer left a torn line, so lines of other
// processes interleave whole. It is safe across processes, and against a
// concurrent PruneAudit.
func AppendAudit(path string, rec AuditRecord) error {
	if rec.Time.IsZero() {
		rec.Time = time.Now().UTC()
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode audit record: %w", err)
	}
	return committerFor(path).append(append(line, '\n'))
}

// openLocked opens (creating when missing) the file at path and takes an
// exclusive lock on it. When the file at path was replaced while waiting
// for the lock (PruneAudit renames a new file over it), it opens again.
func openLocked(path string, flag int) (f *os.File, created bool, err error) {
	for attempt := 0; attempt < 10; attempt++ {
		created = false
		// The log is there but for the first line ever: open it, and
		// create it only when missing.
		f, err = os.OpenFile(path, flag, 0o600)
		if errors.Is(err, os.ErrNotExist) {
			f, err = os.OpenFile(path, flag|os.O_CREATE|os.O_EXCL, 0o600)
			if err == nil {
				created = true
			} else if errors.Is(err, os.ErrExist) {
				f, err = os.OpenFile(path, flag, 0o600)
			}
		}
		if err != nil {
			return nil, false, fmt.Errorf("open audit log %s: %w", path, err)
		}
		if err := lockFile(f); err != nil {
			f.Close()
			return nil, false, fmt.Errorf("lock audit log %s: %w", path, err)
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return f, created, nil
		}
		closeLocked(f)
	}
	return nil, false, fmt.Errorf("open audit log %s: the file keeps being replaced", path)
}

func closeLocked(f *os.File) {
	_ = unlockFile(f)
	_ = f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open audit directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync audit directory %s: %w", dir, err)
	}
	return nil
}

// PruneAudit removes the records older than olderThan (by their time) from
// the audit log, for security.auditing.retention-period. It rewrites the
// log to a new file and renames it into place under the lock, so a crash
// leaves either the old or the new log. Lines it cannot parse are kept. It
// returns how many records it removed; a missing log is not an error.
func PruneAudit(path string, olderThan time.Duration) (int, error) {
	return pruneBefore(path, time.Now().Add(-olderThan))
}

func pruneBefore(path string, cutoff time.Time) (int, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	f, _, err := openLocked(path, os.O_RDWR)
	if err != nil {
		return 0, err
	}
	defer closeLocked(f)
	data, err := io.ReadAll(f)
	if err != nil {
		return 0, fmt.Errorf("read audit log %s: %w", path, err)
	}
	var kept bytes.Buffer
	removed := 0
	for _, line := range bytes.SplitAfter(data, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec struct {
			Time time.Time `json:"time"`
		}
		if json.Unmarshal(line, &rec) == nil && !rec.Time.IsZero() && rec.Time.Before(cutoff) {
			removed++
			continue
		}
		kept.Write(line)
		if !bytes.HasSuffix(line, []byte{'\n'}) {
			kept.WriteByte('\n')
		}
	}
	if removed == 0 {
		return 0, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".audit-prune-*")
	if err != nil {
		return 0, fmt.Errorf("prune audit log %s: %w", path, err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(kept.Bytes()); err != nil {
		return 0, fmt.Errorf("prune audit log %s: %w", path, err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		return 0, fmt.Errorf("prune audit log %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return 0, fmt.Errorf("prune audit log %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("prune audit log %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return 0, fmt.Errorf("prune audit log %s: %w", path, err)
	}
	ok = true
	return removed, syncDir(filepath.Dir(path))
}

// AuditFilter selects records in ReadAudit; zero fields select all.
type AuditFilter struct {
	Since time.Time // records at or after Since
	Tool  string    // records of this tool
}

// CorruptAuditError lists the lines of the audit log that could not be
// parsed (a torn last line is not counted). errors.Is(err,
// ErrAuditCorrupt) holds.
type CorruptAuditError struct {
	Path  string
	Lines []int
}

func (e *CorruptAuditError) Error() string {
	return fmt.Sprintf("read audit log %s: lines %v cannot be parsed", e.Path, e.Lines)
}

// Unwrap makes errors.Is(err, ErrAuditCorrupt) hold.
func (e *CorruptAuditError) Unwrap() error { return ErrAuditCorrupt }

// ReadAudit reads the records of the audit log that match filter, in file
// order. A missing log has no records. A last line that does not parse (a
// write torn by a crash, or in progress) is skipped. Other lines that do
// not parse are skipped too, and reported with a *CorruptAuditError
// returned along with the records read.
func ReadAudit(path string, filter AuditFilter) ([]AuditRecord, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var out []AuditRecord
	var bad []int
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var rec AuditRecord
			if jerr := json.Unmarshal(line, &rec); jerr != nil {
				if err == nil { // a complete line: not a torn tail
					bad = append(bad, n)
				}
			} else if (filter.Since.IsZero() || !rec.Time.Before(filter.Since)) && (filter.Tool == "" || rec.Tool == filter.Tool) {
				out = append(out, rec)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("read audit log %s: %w", path, err)
		}
	}
	if len(bad) > 0 {
		return out, &CorruptAuditError{Path: path, Lines: bad}
	}
	return out, nil
}
