package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/sandbox"
	"github.com/sandboxed-dev/sandboxed/sandbox/learn"
	"github.com/sandboxed-dev/sandboxed/tool"
)

var learnCommand = &cli.Command{
	Name:      "learn",
	Usage:     "run a tool once in a learning sandbox and draft the least required-permissions that cover what it did",
	ArgsUsage: "TOOL [NAME=VALUE ...]",
	Description: `The tool runs once, untrusted, in a process-tier sandbox that changes nothing on
the host: the paths its parameters name and the working directory are visible
read-only, under a writable layer thrown away with the sandbox, and any public
host is reachable through a recording proxy. What it read, wrote and executed is seen
by a seccomp user-notification filter; the hosts it reached by the proxy.

It prints the drafted required-permissions: paths folded to their directory
when the run read two or more files of it or listed it, written with the
parameter whose value holds them ({OUT}), a directory for files created in it,
hosts without a port for 80 and 443. Paths the tool looked for that the
learning sandbox did not show are listed apart. Environment variables are not
observed.

Learning needs --approve learn (or a yes on a terminal): while learning the tool
sees more than its permissions will give it later. With --write the draft is
added to the definition's file in place (comments and layout kept, atomically).`,
	Flags: []cli.Flag{
		&cli.BoolFlag{Name: "json", Usage: "print what the run touched and the draft as one JSON object"},
		&cli.BoolFlag{Name: "write", Usage: "add the drafted permissions to the definition's file in place"},
		policyFlag,
		scopeFlag,
		&cli.StringSliceFlag{Name: "approve", Usage: "approve `WHAT`: learn (required), and what the policy asks for besides"},
		&cli.StringSliceFlag{Name: "param", Aliases: []string{"p"}, Usage: "a parameter `NAME=VALUE` (same as a trailing NAME=VALUE)"},
		&cli.StringFlag{Name: "params-json", Usage: "parameters as a JSON object, or - to read it from stdin"},
	},
	Action: learnAction,
}

func learnAction(c *cli.Context) error {
	if c.NArg() < 1 {
		return usageError(errors.New("permissions learn: which tool? usage: sandboxed permissions learn [--json] [--write] [--approve learn] TOOL [NAME=VALUE ...]"))
	}
	def, err := loadTool(c, c.Args().First())
	if err != nil {
		return err
	}
	input, err := runInput(c, os.Stdin)
	if err != nil {
		return err
	}
	approvals := c.StringSlice("approve")
	if err := policy.ValidateApprovals(slices.DeleteFunc(slices.Clone(approvals), func(a string) bool { return a == learn.ApproveLearn })); err != nil {
		return usageError(err)
	}
	pol, polPath, err := loadPolicy(c)
	if err != nil {
		return err
	}
	if c.Bool("write") && def.Source.Path == "" {
		return usageError(fmt.Errorf("permissions learn --write: %s has no file of its own: %w", def.Name, learn.ErrNoFile))
	}
	req := &learn.Request{Def: def, Input: input, Policy: pol, PolicyFile: polPath, Approvals: approvals, Egress: newEgressStarter()}
	if !c.Bool("json") {
		// The tool's own output goes to stderr: stdout is the draft.
		req.Stdout, req.Stderr = c.App.ErrWriter, c.App.ErrWriter
	}
	s, err := learn.New(req)
	if err != nil {
		return usageError(err)
	}
	errw := terminalSafe(c.App.ErrWriter)
	approved := slices.Contains(approvals, learn.ApproveLearn) || slices.Contains(approvals, policy.ApproveAll)
	if !approved {
		if !isTerminal(os.Stdin) || !isTerminal(os.Stderr) || c.String("params-json") == "-" {
			if c.Bool("json") {
				// As run --json reports a refusal: on stdout, status denied.
				if err := writeJSON(c.App.Writer, s.Unapproved()); err != nil {
					return err
				}
			}
			fmt.Fprintf(errw, "sandboxed: %s.\n", s.Describe())
			fmt.Fprintln(errw, "  run it again with --approve learn to let it")
			return exitWith(exitDenied)
		}
		ok, err := askLearn(errw, os.Stdin, s)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(errw, "sandboxed: you declined the learning run")
			return exitWith(exitDenied)
		}
		req.Approvals = append(req.Approvals, learn.ApproveLearn)
	} else if !c.Bool("json") {
		fmt.Fprintf(errw, "sandboxed: %s.\n", s.Describe())
	}

	ctx, stop := signalContext(c.Context)
	defer stop()
	rep, err := s.Run(ctx, newController())
	if rep == nil {
		return err
	}
	if err == nil && c.Bool("write") {
		err = rep.Write(def)
	}
	if c.Bool("json") {
		if werr := writeJSON(c.App.Writer, rep); werr != nil {
			return werr
		}
	} else {
		renderLearned(terminalSafe(c.App.Writer), errw, rep, err == nil && c.Bool("write"))
	}
	if err != nil {
		if rep.Run != nil && rep.Run.Error != nil {
			if code := rep.Run.ProcessExitCode(); code != 0 {
				fmt.Fprintf(errw, "sandboxed: %s\n", err)
				return exitWith(code)
			}
		}
		return err
	}
	return nil
}

// askLearn says what learning shows the tool and reads y/N.
func askLearn(w io.Writer, r io.Reader, s *learn.Session) (bool, error) {
	fmt.Fprintf(w, "sandboxed: %s.\nLet it run? [y/N] ", s.Describe())
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	ans := strings.ToLower(strings.TrimSpace(line))
	return ans == "y" || ans == "yes", nil
}

// renderLearned prints the draft on out (YAML, ready to paste) and what
// the run did besides on errw.
func renderLearned(out, errw io.Writer, rep *learn.Report, wrote bool) {
	if rep.Run != nil {
		fmt.Fprintf(errw, "sandboxed: learning run %s: %s, exit code %d\n", rep.Run.RunID, rep.Run.Status, rep.Run.ExitCode)
		if rep.Run.Status != sandbox.StatusOK {
			fmt.Fprintln(errw, "sandboxed: the tool did not finish well: the draft covers only what it did before it stopped")
		}
	}
	for _, a := range rep.Touched() {
		dir := ""
		if a.Dir {
			dir = " (directory)"
		}
		fmt.Fprintf(errw, "  %-5s %s%s\n", a.Op, a.Path, dir)
	}
	for _, e := range rep.Egress {
		fmt.Fprintf(errw, "  net   %s:%d %s\n", e.Host, e.Port, e.Verdict)
	}
	d := rep.Draft
	if d == nil {
		return
	}
	for _, h := range d.Hidden {
		fmt.Fprintf(errw, "sandboxed: the tool looked for %s, which the learning sandbox did not show; if it needs it, add %s:%s\n", h, tool.PermFSRead, h)
	}
	for _, r := range d.Refused {
		fmt.Fprintf(errw, "sandboxed: the proxy refused %s even while learning (a loopback, private or metadata address)\n", r)
	}
	fmt.Fprintln(out, "security:")
	if len(d.Permissions) == 0 {
		fmt.Fprintln(out, "  required-permissions: []")
	} else {
		fmt.Fprintln(out, "  required-permissions:")
		for _, p := range d.Permissions {
			fmt.Fprintf(out, "    - %s\n", p)
		}
	}
	switch {
	case len(rep.Added) > 0:
		fmt.Fprintf(errw, "sandboxed: added to %s: %s\n", rep.File, strings.Join(rep.Added, ", "))
	case wrote:
		fmt.Fprintf(errw, "sandboxed: %s already has every drafted permission; unchanged\n", rep.File)
	}
	fmt.Fprintln(errw, "sandboxed: environment variables are not observed: add env:NAME for each the tool needs")
}
