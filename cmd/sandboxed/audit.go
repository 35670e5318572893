package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/internal/units"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

var auditCommand = &cli.Command{
	Name:  "audit",
	Usage: "show the audit log: one record per run",
	Description: `Reads STATE/audit.jsonl, where STATE is $SANDBOXED_STATE_DIR, else
$XDG_STATE_HOME/sandboxed, else ~/.local/state/sandboxed. The table shows
TIME, TOOL, STATUS, EXIT, TIER, USER, CHANGES (paths created, modified and
deleted under write grants: +C ~M -D, "not applied" for a review declined)
and RUN ID; --paths lists each changed path below its run; --format json
prints the records as they are stored (docs/operations.md: the audit log).`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "since", Usage: "only records of the last `DURATION` (30m, 24h, 7d)"},
		&cli.StringFlag{Name: "tool", Usage: "only records of the tool `NAME`"},
		&cli.BoolFlag{Name: "paths", Usage: "list the paths each run changed under its write grants"},
		formatFlag("table", "table", "json"),
	},
	Action: auditAction,
}

func auditAction(c *cli.Context) error {
	format, err := checkFormat(c, "table", "json")
	if err != nil {
		return err
	}
	if c.NArg() > 0 {
		return usageError(fmt.Errorf("audit: unexpected argument %q (use --tool NAME)", c.Args().First()))
	}
	filter := policy.AuditFilter{Tool: c.String("tool")}
	if s := c.String("since"); s != "" {
		d, err := units.ParseDuration(s)
		if err != nil || d <= 0 {
			return usageError(fmt.Errorf("audit: --since %q: want a duration above zero: %s", s, units.DurationGrammar))
		}
		filter.Since = time.Now().Add(-d)
	}
	path := sandbox.AuditPath(sandbox.StateDir())
	recs, err := policy.ReadAudit(path, filter)
	var corrupt *policy.CorruptAuditError
	if errors.As(err, &corrupt) {
		// The records read are still worth showing; say what was skipped.
		fmt.Fprintf(c.App.ErrWriter, "sandboxed: warning: %v (skipped)\n", err)
		err = nil
	}
	if err != nil {
		return err
	}
	if format == "json" {
		if recs == nil {
			recs = []policy.AuditRecord{}
		}
		return writeJSON(c.App.Writer, recs)
	}
	if len(recs) == 0 {
		fmt.Fprintf(c.App.ErrWriter, "sandboxed: no audit records in %s\n", path)
		return nil
	}
	w := tabwriter.NewWriter(terminalSafe(c.App.Writer), 0, 4, 2, ' ', 0) // paths a tool chose
	fmt.Fprintln(w, "TIME\tTOOL\tSTATUS\tEXIT\tTIER\tUSER\tCHANGES\tRUN ID")
	for _, r := range recs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.Time.Local().Format("2006-01-02 15:04:05"),
			dash(r.Tool), dash(r.Status), r.ExitCode, dash(r.Tier), dash(r.User), changesCell(r.Changes), dash(r.RunID))
		if c.Bool("paths") && r.Changes != nil {
			for _, p := range r.Changes.Paths {
				fmt.Fprintf(w, "\t  %s\t\t\t\t\t\t\n", p)
			}
		}
	}
	return w.Flush()
}

// changesCell is a run's changes under its write grants in the audit
// table: +created ~modified -deleted.
func changesCell(ch *policy.AuditChanges) string {
	if ch == nil {
		return "-"
	}
	s := fmt.Sprintf("+%d ~%d -%d", ch.Created, ch.Modified, ch.Deleted)
	if !ch.Applied && ch.Created+ch.Modified+ch.Deleted > 0 {
		s += " not applied"
	}
	return s
}
