package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/isolation/changeset"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

var undoCommand = &cli.Command{
	Name:      "undo",
	Usage:     "put a run's write grants back as they were before it",
	ArgsUsage: "RUN_ID | --list",
	Description: `Every run with a write grant records what it changed there (the policy's undo
section bounds the record). undo removes what the run created and writes back what it
modified or deleted, byte for byte, with their modes (never setuid or setgid bits).
It first checks every path and reads every pre-image: one changed since the run (by you,
or another run) refuses the whole undo and lists them, changing nothing. It never
follows a link the tool left: every path is opened beneath the grant without following
links. An undo stopped midway (killed, or a write that failed) is finished by running
it again, as is a reviewed change whose apply stopped midway; two undos of one run do
not run at once, and an undo waits for the runs that hold a grant handed to their tool.
RUN_ID is the run_id of the result, or the RUN ID column of 'sandboxed audit' or of
'sandboxed undo --list', which lists the records kept and what undo would do with each:
an apply or an undo that stopped midway is listed as such.`,
	Flags: []cli.Flag{
		&cli.BoolFlag{Name: "json", Usage: "print what was put back (or the list) as JSON"},
		&cli.BoolFlag{Name: "list", Usage: "list the change records kept, with their state, instead of undoing"},
	},
	Action: undoAction,
}

func undoAction(c *cli.Context) error {
	if c.Bool("list") {
		if c.NArg() != 0 {
			return usageError(errors.New("undo: --list takes no run id"))
		}
		return listChanges(c)
	}
	if c.NArg() != 1 {
		return usageError(errors.New("undo: which run? usage: sandboxed undo RUN_ID (sandboxed undo --list lists the runs it can undo)"))
	}
	runID := c.Args().First()
	if !changeset.ValidRunID(runID) {
		return usageError(fmt.Errorf("undo: %q is not a run id: write the run_id of a result, such as 20260102T150405-0123456789ab (sandboxed undo --list lists the runs it can undo)", runID))
	}
	rep, err := sandbox.UndoRun(sandbox.StateDir(), sandbox.RuntimeDir(), runID, func(grant string) {
		fmt.Fprintf(terminalSafe(c.App.ErrWriter), "sandboxed: waiting for the runs using %s to end\n", grant)
	})
	var ce *changeset.ConflictError
	switch {
	case errors.As(err, &ce):
		w := terminalSafe(c.App.ErrWriter) // paths a tool chose
		fmt.Fprintf(w, "sandboxed: undo refused: %d path(s) under %s changed since the run; nothing was put back:\n", len(ce.Paths), ce.Root)
		for _, p := range ce.Paths {
			fmt.Fprintf(w, "  %s\n", p)
		}
		return exitWith(1)
	case errors.Is(err, changeset.ErrNotFound):
		return fmt.Errorf("undo: %w (a run with no write grant, no change, a record gc removed, or records off in the policy's undo section); sandboxed undo --list lists the runs it can undo", err)
	case err != nil:
		return fmt.Errorf("undo: %w", err)
	}
	if c.Bool("json") {
		return writeJSON(c.App.Writer, rep)
	}
	w := terminalSafe(c.App.Writer)
	if rep.Resumed {
		fmt.Fprintf(w, "finished an undo or an apply of run %s that had stopped midway\n", rep.RunID)
	}
	for _, g := range rep.Grants {
		fmt.Fprintf(w, "restored %s: %d change(s) of run %s undone\n", g.Root, g.Restored, rep.RunID)
		for _, s := range g.Skipped {
			fmt.Fprintf(w, "  not restored: %s\n", s)
		}
	}
	return nil
}

// listChanges prints the change records kept, oldest first.
func listChanges(c *cli.Context) error {
	recs, err := sandbox.ListChanges(sandbox.StateDir())
	if err != nil {
		return fmt.Errorf("undo --list: %w", err)
	}
	if c.Bool("json") {
		if recs == nil {
			recs = []sandbox.ChangeRecord{}
		}
		return writeJSON(c.App.Writer, recs)
	}
	w := tabwriter.NewWriter(terminalSafe(c.App.Writer), 0, 4, 2, ' ', 0) // paths a tool chose
	fmt.Fprintln(w, "RUN ID\tTOOL\tCREATED\tCHANGES\tSTATE\tGRANTS")
	for _, r := range recs {
		created := ""
		if !r.CreatedAt.IsZero() {
			created = r.CreatedAt.Local().Format(time.DateTime)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t+%d ~%d -%d\t%s\t%s\n", r.RunID, r.Tool, created,
			r.Counts.Created, r.Counts.Modified, r.Counts.Deleted, r.State, strings.Join(r.Grants, ","))
	}
	return w.Flush()
}
