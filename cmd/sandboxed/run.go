package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/sandbox"
	"github.com/sandboxed-dev/sandboxed/tool"
)

var runCommand = newRunCommand(true)

// newRunCommand makes the run command with flags of its own (a server
// runs calls concurrently, each with its own). withCluster adds the
// cluster flags (--backend, ...), whose values are the process's: a
// server's run command goes without them, as a run for a cluster is never
// sent to a server.
func newRunCommand(withCluster bool) *cli.Command {
	policy, scope := *policyFlag, *scopeFlag
	var more []cli.Flag
	if withCluster {
		more = clusterFlags()
	}
	return &cli.Command{
		Name:      "run",
		Usage:     "run a tool in its sandbox",
		ArgsUsage: "TOOL [NAME=VALUE ...]",
		Description: `TOOL is a path to a definition file or a tool name found in the scopes
(local ./.sandboxed/tools, user ~/.sandboxed/tools, global /etc/sandboxed/tools).

The tool gets exactly what its security.required-permissions declare, as far as
the policy allows. Exit status: the tool's own; 124 timeout; 125 sandbox failure;
126 denied by policy; 137 out of memory; 2 usage error or invalid definition.`,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON object instead of the tool's output"},
			&policy,
			&scope,
			&cli.StringFlag{Name: "isolation", Usage: "override the tier for this run: process, container, landlock or none (a weaker tier needs approval)"},
			&cli.StringSliceFlag{Name: "approve", Usage: "approve `WHAT` the policy asks approval for (elevated, isolation-none, isolation-landlock, env-inherit, a permission, all)"},
			&cli.StringSliceFlag{Name: "param", Aliases: []string{"p"}, Usage: "a parameter `NAME=VALUE` (same as a trailing NAME=VALUE)"},
			&cli.StringFlag{Name: "params-json", Usage: "parameters as a JSON object, or - to read it from stdin"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print each step's command, directory, environment and isolation; run nothing"},
			&cli.BoolFlag{Name: "dump-plan", Usage: "print the plan (OCI runtime spec, limits, egress) as JSON; run nothing"},
			&cli.BoolFlag{Name: "review", Usage: "let the tool write into working copies of its write grants, show the change (deletions first) and a diff, and apply it on approval (a prompt, or --approve writes); unapproved, nothing reaches the host"},
			&cli.BoolFlag{Name: "no-server", Usage: "run here even when `sandboxed serve` answers on its socket (also SANDBOXED_NO_SERVER=1)"},
		}, more...),
		Action: runAction,
	}
}

// runAction runs a tool: it builds the request from the command line
// (runRequest), prepares the run, asking for approval where the policy
// wants it and someone can answer (prepareRun), runs it and reports the
// result (reportRun). A server's run (served) declines what only the
// caller's own process can do; the caller then runs it cold.
func runAction(c *cli.Context) error {
	inv := invocationOf(c)
	if !inv.served {
		tuneGC()
	}
	if c.NArg() < 1 {
		return usageError(errors.New("run: which tool? usage: sandboxed run [flags] TOOL [NAME=VALUE ...]"))
	}
	if !inv.served && !c.Bool("review") { // a review asks here, where its terminal is
		if done, err := runServed(c, inv); done {
			return err
		}
	}
	req, err := runRequest(c, inv)
	if err != nil {
		return err
	}
	if req.DryRun {
		return printPlan(c, req)
	}
	ctx := c.Context
	if !inv.served {
		var stop func()
		ctx, stop = signalContext(c.Context)
		defer stop()
		c.Context = ctx // a review's prompt gives up when the run is interrupted
	}
	ctl := inv.ctl
	if ctl == nil {
		ctl = newController()
		ctl.Behind = sandbox.NewBehind(c.App.ErrWriter)
		// The output first, then the teardown, then the exit.
		defer func() {
			ctl.Behind.Wait()
			req.Trace.Mark("output, teardown behind it")
		}()
	}
	if inv.getenv("SANDBOXED_TRACE") == "1" {
		// From the process's start, or the server's accepting the call.
		start := processStart
		if inv.served {
			start = inv.start
		}
		req.Trace = sandbox.NewTracer(c.App.ErrWriter, start)
		req.Trace.Mark("load tool and policy")
	}
	p, err := prepareRun(c, inv, ctl, req)
	var pe *sandbox.PrepareError
	if inv.taken != nil && (err == nil || errors.As(err, &pe)) {
		inv.taken()
	}
	var res *sandbox.Result
	switch {
	case errors.As(err, &pe):
		res, err = ctl.Refused(req, pe)
	case err != nil:
		return err
	default:
		res, err = ctl.RunPrepared(ctx, req, p)
	}
	return reportRun(c, res, err)
}

// runRequest is the run the command line asks for: the tool, its input,
// the policy, the tier and approvals, where the output goes. A served run
// reads the caller's paths from the caller's working directory.
func runRequest(c *cli.Context, inv *invocation) (*sandbox.Request, error) {
	toolArg := c.Args().First()
	if inv.served {
		// The caller's paths, as the caller meant them.
		toolArg = absToolArg(inv.cwd, toolArg)
		if p := c.String("policy"); p != "" {
			if err := c.Set("policy", absFrom(inv.cwd, p)); err != nil {
				return nil, err
			}
		}
	}
	def, err := loadTool(c, toolArg)
	if err != nil {
		return nil, err
	}
	if inv.served && def.Interactive && inv.stdinTerminal {
		return nil, errDecline("an interactive tool talks to the caller's terminal")
	}
	pol, polPath, err := loadPolicy(c)
	if err != nil {
		return nil, err
	}
	input, err := runInput(c, inv.in)
	if err != nil {
		return nil, err
	}
	if err := checkIsolationFlag(c); err != nil {
		return nil, err
	}
	where, err := clusterChoice()
	if err != nil {
		return nil, err
	}
	req := &sandbox.Request{
		Cluster: where,
		Def:     def, Input: input, Policy: pol, PolicyFile: polPath,
		Isolation: c.String("isolation"), Approvals: c.StringSlice("approve"),
		DryRun: c.Bool("dry-run") || c.Bool("dump-plan"),
		Egress: newEgressStarter(),
		Cwd:    inv.cwd, Env: inv.env,
		Review: c.Bool("review"),
	}
	if !c.Bool("json") {
		req.Stdout, req.Stderr = c.App.Writer, c.App.ErrWriter
	}
	if req.Review && !c.Bool("json") {
		// What the tool prints comes right before the review and its
		// prompt: escaped, so that it cannot conceal them (SGR 8, the
		// alternate screen) or print a forged one in their place.
		req.Stdout, req.Stderr = terminalSafe(req.Stdout), terminalSafe(req.Stderr)
		canAsk := inv.canAsk && c.String("params-json") != "-" && !inv.served
		req.ReviewWrites = func(ch *sandbox.ChangesInfo) (bool, error) {
			return reviewPrompt(c.Context, c.App.ErrWriter, os.Stdin, ch, canAsk)
		}
	}
	if def.Interactive && inv.stdinTerminal && !inv.served {
		req.Stdin = os.Stdin // an interactive tool talks to the user
	}
	return req, nil
}

// prepareRun prepares req's run. When the policy asks for approval and
// the user can be asked (a terminal, and stdin not the parameters), it
// asks and prepares again with the answer; a server declines such a run,
// and one with credentials, which the caller's own process reads.
func prepareRun(c *cli.Context, inv *invocation, ctl *sandbox.Controller, req *sandbox.Request) (*sandbox.Prepared, error) {
	canAsk := inv.canAsk && c.String("params-json") != "-"
	p, err := ctl.Prepare(req)
	var pe *sandbox.PrepareError
	if errors.As(err, &pe) && len(pe.Approvals) > 0 && canAsk {
		if inv.served {
			return nil, errDecline("the run needs approval and the caller can be asked")
		}
		// The policy asks for approval and there is someone to ask.
		ok, aerr := promptApproval(c.App.ErrWriter, os.Stdin, req.Def, pe.Decision)
		switch {
		case aerr != nil:
			err = pe.AskFailed(aerr)
		case ok:
			req.Answered = pe.Approvals
			p, err = ctl.Prepare(req)
		default:
			err = pe.Declined()
		}
	}
	if err == nil && inv.served && p.Plan.Egress != nil && len(p.Plan.Egress.Credentials) > 0 {
		// Their values are read from the host as the caller's process
		// would read them (its environment, its commands).
		return nil, errDecline("the run has credentials, read from the caller's own process")
	}
	return p, err
}

// reportRun writes the run's result: the JSON object with --json, else
// its warnings and error on stderr (the tool's output went out as it
// ran). err, a failure after the result was made, is a warning. The exit
// status is the result's.
func reportRun(c *cli.Context, res *sandbox.Result, err error) error {
	if err != nil {
		fmt.Fprintln(c.App.ErrWriter, "sandboxed: warning:", err)
	}
	if c.Bool("json") {
		if werr := writeJSON(c.App.Writer, res); werr != nil {
			return werr
		}
	} else {
		for _, w := range res.Warnings {
			fmt.Fprintln(c.App.ErrWriter, "sandboxed: warning:", w)
		}
		if res.Error != nil {
			fmt.Fprintf(c.App.ErrWriter, "sandboxed: %s: %s\n", res.Status, res.Error.Message)
			if newHint(res.Error.Message, res.Error.Hint) {
				fmt.Fprintf(c.App.ErrWriter, "%s\n", indent(res.Error.Hint))
			}
		}
	}
	if code := res.ProcessExitCode(); code != 0 {
		return exitWith(code)
	}
	return nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// runInput gathers NAME=VALUE arguments, --param and --params-json.
func runInput(c *cli.Context, stdin io.Reader) (tool.Input, error) {
	pairs := append(c.Args().Tail(), c.StringSlice("param")...)
	in, err := tool.ParseArgs(pairs)
	if err != nil {
		return nil, usageError(err)
	}
	if pj := c.String("params-json"); pj != "" {
		var data []byte
		if pj == "-" {
			data, err = io.ReadAll(io.LimitReader(stdin, 16<<20))
		} else {
			data = []byte(pj)
		}
		if err != nil {
			return nil, fmt.Errorf("read --params-json: %w", err)
		}
		js, err := tool.ParseParamsJSON(data)
		if err != nil {
			return nil, usageError(err)
		}
		if in, err = in.Merge(js); err != nil {
			return nil, usageError(err)
		}
	}
	return in, nil
}

// signalContext is cancelled with sandbox.ErrInterrupted on SIGINT or
// SIGTERM, so the run tears its sandbox down and reports.
func signalContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		select {
		case <-ch:
			cancel(sandbox.ErrInterrupted)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel(nil) }
}

// promptApproval shows what the run asks for and why, and reads y/N.
func promptApproval(w io.Writer, r io.Reader, def *tool.Definition, d *policy.Decision) (bool, error) {
	w = terminalSafe(w) // subjects hold paths an agent chose
	describeApproval(w, def, d)
	fmt.Fprintf(w, "Approve for this run? [y/N] ")
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	ans := strings.ToLower(strings.TrimSpace(line))
	return ans == "y" || ans == "yes", nil
}

// reviewPrompt shows a reviewed run's change (its diff has control
// characters escaped already; the writer escapes again what is not) and,
// when there is someone to ask, asks whether to apply it. Interrupted
// (Ctrl-C, ctx done) while it waits, it applies nothing, whatever is
// typed after.
func reviewPrompt(ctx context.Context, w io.Writer, r io.Reader, ch *sandbox.ChangesInfo, ask bool) (bool, error) {
	w = terminalSafe(w)
	fmt.Fprintf(w, "The run changed %d path(s) in working copies of its write grants: %d deleted, %d modified, %d created.\n",
		ch.Created+ch.Modified+ch.Deleted, ch.Deleted, ch.Modified, ch.Created)
	fmt.Fprint(w, ch.Diff)
	if !ask {
		fmt.Fprintln(w, "Not applied: nothing reached the host (apply it with --approve writes).")
		return false, nil
	}
	fmt.Fprintf(w, "Apply this change to the host? [y/N] ")
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() { // left blocked on r when interrupted: the run ends
		line, err := bufio.NewReader(r).ReadString('\n')
		got <- answer{line, err}
	}()
	select {
	case <-ctx.Done():
		fmt.Fprintln(w)
		return false, fmt.Errorf("interrupted at the prompt: %w", context.Cause(ctx))
	case a := <-got:
		if a.err != nil && !errors.Is(a.err, io.EOF) {
			return false, a.err
		}
		if ctx.Err() != nil {
			return false, fmt.Errorf("interrupted at the prompt: %w", context.Cause(ctx))
		}
		ans := strings.ToLower(strings.TrimSpace(a.line))
		apply := ans == "y" || ans == "yes"
		if apply && ch.RunID != "" {
			// Killed while it applies, nothing more is said: the way
			// back is said now.
			fmt.Fprintf(w, "Applying. If this is interrupted, sandboxed undo %s puts back what was applied.\n", ch.RunID)
		}
		return apply, nil
	}
}

// newHint reports whether hint says more than msg: an error that carries
// its fix (isolation.UnsupportedError) ends with it already, and the same
// line twice helps no one. --json keeps both fields.
func newHint(msg, hint string) bool {
	return hint != "" && !strings.HasSuffix(msg, hint)
}
