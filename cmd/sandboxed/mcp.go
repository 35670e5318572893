package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/internal/units"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/sandbox"
	"github.com/sandboxed-dev/sandboxed/tool"
)

var mcpCommand = &cli.Command{
	Name:  "mcp",
	Usage: "serve the tools in scope to an MCP client over stdio",
	Description: `Lists every tool of the scope with its JSON Schema and runs each call
through the policy and the sandbox, exactly as 'sandboxed run' would. The
project's tools are those in DIR/.sandboxed/tools of --project DIR, else of
each root the client gives (MCP roots), else of the working directory;
the user's (~/.sandboxed/tools) and the global ones are listed too.
Definitions added, changed or removed while serving are listed (and the
client told) within a second; one that fails to load is skipped with a
line on stderr. A server with no tools says why in its instructions.

A call that needs an approval is asked of the client's user when the
client can ask (elicitation: this call, this session, or no; declined or
unanswered is a refusal); otherwise it is refused with the reason
(restart with --approve WHAT, or allow it in the policy). A call that
asks for what the policy denies is refused without asking.

A result gives the model the tool's stdout, then the status, what the
sandbox blocked (with the permission that would allow it), the error and
stderr, within --output-budget bytes of output; the whole captured output
stays in the run record, linked from the result (resource_link) and read
piece by piece with resources/read
sandboxed://runs/RUN/stdout?offset=N&length=M. The structured content is
the run result (its outputSchema); each tool's annotations say whether its
sandbox lets it write (readOnlyHint, destructiveHint) or reach the network
(openWorldHint). Calls with a progress token get progress notifications;
log lines go to the client at the level it sets (logging/setLevel).

Calls claim sandboxes started ahead of time (a warm pool, as 'sandboxed
serve' keeps; --pool-size 0 turns it off): each serves one call and is
destroyed after it, its teardown running behind the call's result. When
the client goes away (stdin closes), the calls in flight are cancelled
and their sandboxes torn down before the server exits.

Nothing but the protocol is ever written to stdout.

Register it with a client (see docs/mcp.md for more):
  Claude Code:     claude mcp add sandboxed -- sandboxed mcp --project "$PWD"
  Claude Desktop:  claude_desktop_config.json:
                   {"mcpServers": {"sandboxed": {"command": "sandboxed",
                     "args": ["mcp", "--project", "/path/to/project"]}}}
  Cursor:          .cursor/mcp.json:
                   {"mcpServers": {"sandboxed": {"command": "sandboxed",
                     "args": ["mcp", "--project", "${workspaceFolder}"]}}}
  VS Code:         .vscode/mcp.json:
                   {"servers": {"sandboxed": {"type": "stdio", "command": "sandboxed",
                     "args": ["mcp", "--project", "${workspaceFolder}"]}}}
Check that it serves your tools:
  sandboxed mcp --project DIR --list`,
	Flags: append([]cli.Flag{
		scopeFlag,
		policyFlag,
		&cli.StringSliceFlag{Name: "approve", Usage: "approve `WHAT` for every call (elevated, isolation-none, env-inherit, tier:TIER, a permission, all)"},
		&cli.StringFlag{Name: "project", Usage: "serve the tools of `DIR`/.sandboxed/tools, and run calls in DIR (default: the client's roots, else the working directory)"},
		&cli.StringFlag{Name: "output-budget", Value: "64KiB", EnvVars: []string{"SANDBOXED_MCP_OUTPUT_BUDGET"},
			Usage: "at most `SIZE` of a call's output in its result; the rest is read from the run record"},
		&cli.BoolFlag{Name: "list", Usage: "print the tools the server would serve (name, hints, definition) and its instructions, then exit"},
		&cli.BoolFlag{Name: "review", Usage: "calls of tools with write grants write into working copies; the change is shown to the client's user (elicitation) and applied only when they accept (or with --approve writes); otherwise nothing reaches the host"},
	}, append(clusterFlags(), poolFlags()...)...),
	Action: mcpAction,
}

func mcpAction(c *cli.Context) error {
	if c.NArg() != 0 {
		return usageError(fmt.Errorf("mcp takes no arguments; usage: sandboxed mcp [--project DIR] [--scope SCOPE] [--policy FILE] [--approve WHAT]"))
	}
	// A client that goes away closes our stdin, stdout and stderr: the
	// server must outlive its pipes to tear its sandboxes down.
	catchBrokenPipes()
	log := &mcpLog{w: dropOnError(c.App.ErrWriter)}
	pol, polPath, err := loadPolicy(c)
	if err != nil {
		return err
	}
	scope, err := tool.ParseScope(c.String("scope"))
	if err != nil {
		return usageError(err)
	}
	if err := policy.ValidateApprovals(c.StringSlice("approve")); err != nil {
		return usageError(err)
	}
	budget, err := units.ParseSize(c.String("output-budget"))
	if err != nil || budget < minOutputBudget || budget > 1<<30 {
		return usageError(fmt.Errorf("--output-budget %q: use a size from 1KiB to 1GiB, such as 64KiB", c.String("output-budget")))
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("mcp: working directory: %w", err)
	}
	project := ""
	if p := c.String("project"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			return usageError(fmt.Errorf("--project %s: %w", p, err))
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return usageError(fmt.Errorf("--project %s: not a directory", p))
		}
		project = abs
	}
	settings, err := poolSettings(c, pol)
	if err != nil {
		return err
	}
	where, err := clusterChoice()
	if err != nil {
		return err
	}
	h := &mcpHandler{log: log, pol: pol, polPath: polPath, approvals: c.StringSlice("approve"), cluster: where, review: c.Bool("review"),
		trace: os.Getenv("SANDBOXED_TRACE") == "1", budget: int(budget)}
	tools := &mcpTools{h: h, scope: scope, project: project, cwd: cwd, home: sandbox.InvokingHome(), log: log,
		served: map[string]servedTool{}, skipped: map[string]bool{}}
	sig := dirsSignature(tools.scopes(tools.projects()), scope) // before the scan: a change during it is seen next time
	want, scopes, projects := tools.scan()
	instr := instructions(len(want), scopes, scope, projects, int(budget))
	if c.Bool("list") {
		return printMCPTools(c.App.Writer, want, instr)
	}

	// The protocol owns stdout: everything else that would write to fd 1
	// (a library, a child that inherited it) goes to stderr instead.
	out, err := protocolStdout()
	if err != nil {
		return err
	}
	ctl := residentController(settings, log.w)
	h.ctl = ctl
	h.out = &outputStore{stateDir: ctl.StateDir, uid: os.Geteuid(), piece: int(budget)}
	defer func() {
		ctl.Behind.Wait()
		ctl.Pool.Close()
	}()
	srv := mcp.NewServer(&mcp.Implementation{Name: "sandboxed", Title: "sandboxed: tools in sandboxes", Version: version}, &mcp.ServerOptions{
		Logger:       slog.New(slog.NewTextHandler(log.w, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Instructions: instr,
		Capabilities: &mcp.ServerCapabilities{
			Logging:   &mcp.LoggingCapabilities{},
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{},
		},
		InitializedHandler: func(ctx context.Context, req *mcp.InitializedRequest) {
			go tools.askRoots(context.WithoutCancel(ctx), req.Session)
		},
		RootsListChangedHandler: func(ctx context.Context, req *mcp.RootsListChangedRequest) {
			go tools.askRoots(context.WithoutCancel(ctx), req.Session)
		},
	})
	srv.AddReceivingMiddleware(onlyAdvertised)
	srv.AddResourceTemplate(h.out.template(), h.out.read)
	tools.srv = srv
	tools.mu.Lock()
	n := tools.apply(want)
	tools.sig = sig
	tools.mu.Unlock()
	log.srv.Store(srv)
	log.logf("info", "serving %d tool(s) from scope %s (project %s), policy %s", n, scope, projects[0], policyName(polPath))

	ctx, stop := signalContext(c.Context)
	defer stop()
	// SIGINT, SIGTERM or SIGHUP (a host quitting) interrupt the calls in
	// flight, whose sandboxes are torn down before the server exits.
	h.stopping = ctx
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go tools.watch(watchCtx)
	err = srv.Run(ctx, cancelAware{inner: &mcp.IOTransport{Reader: os.Stdin, Writer: out}, onInitialize: tools.initializeParams})
	if err != nil && ctx.Err() == nil && !strings.Contains(err.Error(), "EOF") {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

// printMCPTools prints what a server would list (mcp --list).
func printMCPTools(w io.Writer, tools map[string]scanned, instr string) error {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	slices.Sort(names)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tHINTS\tDEFINITION")
	for _, n := range names {
		t := tools[n]
		var hints []string
		if a := t.tool.Annotations; a != nil {
			if a.ReadOnlyHint {
				hints = append(hints, "read-only")
			}
			if a.DestructiveHint != nil && *a.DestructiveHint {
				hints = append(hints, "destructive")
			}
			if a.OpenWorldHint != nil && *a.OpenWorldHint {
				hints = append(hints, "open-world")
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n, strings.Join(hints, ","), t.path)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\ninstructions: %s\n", instr)
	return err
}

func policyName(p string) string {
	if p == "" {
		return "built-in"
	}
	return p
}
