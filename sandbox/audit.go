package sandbox

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"time"

	"github.com/sandboxed-dev/sandboxed/policy"
)

// AuditPath is the audit log under stateDir.
func AuditPath(stateDir string) string { return filepath.Join(stateDir, "audit.jsonl") }

// audit appends the run's line to the audit log (fsync'd) and prunes lines
// older than the tool's retention period.
func (c *Controller) audit(req *Request, p *Prepared, d *policy.Decision, res *Result) error {
	if c.StateDir == "" {
		return nil
	}
	def := req.Def
	var rec policy.AuditRecord
	preq := policy.Request{Tool: def.Name, Version: def.Version, DefinitionPath: def.Source.Path, Approvals: req.Approvals}
	if d != nil {
		rec = policy.NewAuditRecord(res.RunID, preq, *d)
	} else {
		rec = policy.AuditRecord{RunID: res.RunID, Tool: def.Name, Version: def.Version,
			DefinitionPath: def.Source.Path, Approvals: req.Approvals}
	}
	rec.Time = res.StartedAt
	if rec.Time.IsZero() {
		rec.Time = time.Now().UTC()
	}
	if u, err := user.Current(); err == nil {
		rec.User = u.Username
	}
	if sudo := os.Getenv("SUDO_USER"); sudo != "" && os.Geteuid() == 0 {
		rec.User += " (sudo by " + sudo + ")" // believed from root alone, as invokingUser does
	}
	rec.Host, _ = os.Hostname()
	rec.DefinitionSHA256 = def.Source.SHA256
	rec.Tier = res.Isolation
	rec.Status = string(res.Status)
	rec.ExitCode = res.ProcessExitCode()
	if res.Error != nil {
		rec.Error = res.Error.Message
	}
	rec.Warnings = res.Warnings
	if ch := res.Changes; ch != nil {
		rec.Changes = &policy.AuditChanges{Created: ch.Created, Modified: ch.Modified, Deleted: ch.Deleted, Applied: ch.Applied, Undo: ch.Undo}
		for _, cp := range ch.Paths {
			rec.Changes.Paths = append(rec.Changes.Paths, cp.Op+" "+cp.Path)
		}
	}

	var sensitive []string
	if def.Security.Logging != nil {
		sensitive = def.Security.Logging.SensitiveParameters
	}
	params := map[string]string{}
	if p != nil {
		for _, bp := range p.Bound.Params {
			if bp.Source != "" {
				params[bp.Name] = bp.Text
			}
		}
	} else {
		// Under the parameters' own names, which the sensitive list uses.
		for k, v := range req.Input {
			params[def.OwnParam(k)] = fmt.Sprint(v)
		}
	}
	secrets := policy.SensitiveValues(params, sensitive)
	rec.Parameters = policy.Mask(params, sensitive)
	aud := def.Security.Auditing
	recordCmd := aud == nil || aud.RecordCommand
	if p != nil && recordCmd {
		for _, st := range p.Bound.Steps {
			rec.Commands = append(rec.Commands, policy.MaskText(st.Command, secrets))
		}
	}
	if aud != nil && aud.RecordOutput {
		rec.Output = policy.MaskText(res.Stdout, secrets)
	}
	if rec.Error != "" {
		rec.Error = policy.MaskText(rec.Error, secrets)
	}
	for _, e := range res.Egress {
		rec.Egress = append(rec.Egress, policy.AuditEgress{Host: e.Host, Port: e.Port, Verdict: e.Verdict, Credentials: e.Credentials, Connections: 1, BytesUp: e.BytesUp, BytesDown: e.BytesDown})
	}
	path := AuditPath(c.StateDir)
	if err := os.MkdirAll(c.StateDir, 0o700); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	if err := policy.AppendAudit(path, rec); err != nil {
		return err
	}
	if aud != nil && aud.RetentionPeriod > 0 {
		if _, err := policy.PruneAudit(path, aud.RetentionPeriod); err != nil {
			return err
		}
	}
	return nil
}
