package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/sandbox"
	"github.com/sandboxed-dev/sandboxed/tool"
)

var mcpCommand = &cli.Command{
	Name:  "mcp",
	Usage: "serve the tools in scope to an MCP client over stdio",
	Description: `Lists every tool of the scope with its JSON Schema and runs each call
through the policy and the sandbox, exactly as 'sandboxed run' would, with
no terminal to ask: a call that needs approval is refused with the reason
(restart with --approve WHAT, or allow it in the policy). A call's result
carries the tool's stdout as text and the whole run result as structured
content; isError is set unless the run's status is ok.

Calls claim sandboxes started ahead of time (a warm pool, as 'sandboxed
serve' keeps; --pool-size 0 turns it off): each serves one call and is
destroyed after it, its teardown running behind the call's result.

Definitions that fail to load are skipped with a line on stderr. Nothing
but the protocol is ever written to stdout.`,
	Flags: append([]cli.Flag{
		scopeFlag,
		policyFlag,
		&cli.StringSliceFlag{Name: "approve", Usage: "approve `WHAT` for every call (elevated, isolation-none, env-inherit, tier:TIER, a permission, all)"},
	}, append(clusterFlags(), poolFlags()...)...),
	Action: mcpAction,
}

func mcpAction(c *cli.Context) error {
	if c.NArg() != 0 {
		return usageError(fmt.Errorf("mcp takes no arguments; usage: sandboxed mcp [--scope SCOPE] [--policy FILE] [--approve WHAT]"))
	}
	pol, polPath, err := loadPolicy(c)
	if err != nil {
		return err
	}
	// The protocol owns stdout: everything else that would write to fd 1
	// (a library, a child that inherited it) goes to stderr instead.
	out, err := protocolStdout()
	if err != nil {
		return err
	}
	logw := c.App.ErrWriter
	scope, err := tool.ParseScope(c.String("scope"))
	if err != nil {
		return usageError(err)
	}
	if err := policy.ValidateApprovals(c.StringSlice("approve")); err != nil {
		return usageError(err)
	}
	settings, err := poolSettings(c, pol)
	if err != nil {
		return err
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "sandboxed", Version: version}, &mcp.ServerOptions{
		Logger: slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	where, err := clusterChoice()
	if err != nil {
		return err
	}
	ctl := residentController(settings, logw)
	defer func() {
		ctl.Behind.Wait()
		ctl.Pool.Close()
	}()
	h := &mcpHandler{log: logw, ctl: ctl, pol: pol, polPath: polPath, approvals: c.StringSlice("approve"), cluster: where,
		trace: os.Getenv("SANDBOXED_TRACE") == "1"}
	n, err := addMCPTools(srv, h, scope, logw)
	if err != nil {
		return err
	}
	fmt.Fprintf(logw, "sandboxed: mcp: serving %d tool(s) from scope %s, policy %s\n", n, scope, policyName(polPath))

	ctx, stop := signalContext(c.Context)
	defer stop()
	err = srv.Run(ctx, &mcp.IOTransport{Reader: os.Stdin, Writer: out})
	if err != nil && ctx.Err() == nil && !strings.Contains(err.Error(), "EOF") {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

func policyName(p string) string {
	if p == "" {
		return "built-in"
	}
	return p
}

// addMCPTools registers every loadable tool of scope and returns how many.
func addMCPTools(srv *mcp.Server, h *mcpHandler, scope tool.Scope, logw io.Writer) (int, error) {
	s := scopes()
	entries, err := s.List(scope)
	if err != nil {
		return 0, err
	}
	seen := map[string]string{}
	n := 0
	for _, e := range entries {
		skip := func(format string, args ...any) {
			fmt.Fprintf(logw, "sandboxed: mcp: skip %s: %s\n", e.Path, fmt.Sprintf(format, args...))
		}
		switch {
		case e.Err != nil:
			skip("%v", e.Err)
			continue
		case e.Shadowed:
			continue
		}
		def, err := s.WithBase(e.Def)
		if err != nil {
			skip("%v", err)
			continue
		}
		t, err := mcpTool(def)
		if err != nil {
			skip("%v", err)
			continue
		}
		if other, dup := seen[t.Name]; dup {
			skip("function name %s is already served for %s", t.Name, other)
			continue
		}
		seen[t.Name] = e.Path
		srv.AddTool(t, h.handler(def))
		n++
	}
	return n, nil
}

// mcpTool is the MCP declaration of def, from its function schema.
func mcpTool(def *tool.Definition) (*mcp.Tool, error) {
	fs, err := tool.FunctionSchema(def, tool.SchemaMCP)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(fs)
	if err != nil {
		return nil, fmt.Errorf("export schema of %s: %w", def.Name, err)
	}
	var decl struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal(data, &decl); err != nil {
		return nil, fmt.Errorf("export schema of %s: %w", def.Name, err)
	}
	return &mcp.Tool{Name: decl.Name, Description: decl.Description, InputSchema: decl.InputSchema}, nil
}

type mcpHandler struct {
	log       io.Writer // stderr: never the protocol stream
	ctl       *sandbox.Controller
	cluster   sandbox.Cluster // --backend and --runtime-class
	pol       *policy.Policy
	polPath   string
	approvals []string
	trace     bool // SANDBOXED_TRACE=1: each call's trace on log
}

func (h *mcpHandler) handler(def *tool.Definition) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var trace *sandbox.Tracer
		if h.trace {
			// From the handler's start, to the server's stderr.
			trace = sandbox.NewTracer(h.log, time.Now())
		}
		args := []byte(req.Params.Arguments)
		if len(strings.TrimSpace(string(args))) == 0 || string(args) == "null" {
			args = []byte("{}")
		}
		in, err := tool.ParseParamsJSON(args)
		if err != nil {
			return errorResult(err.Error(), nil), nil
		}
		res, _, err := h.ctl.Run(ctx, &sandbox.Request{
			Def: def, Input: in, Policy: h.pol, PolicyFile: h.polPath,
			Approvals: h.approvals, Egress: newEgressStarter(), Cluster: h.cluster,
			Trace: trace,
		})
		if res == nil {
			return errorResult("run "+def.Name+": "+err.Error(), nil), nil
		}
		if err != nil {
			fmt.Fprintf(h.log, "sandboxed: mcp: %s: warning: %v\n", def.Name, err)
		}
		fmt.Fprintf(h.log, "sandboxed: mcp: call %s: %s, exit %d (run %s)\n", def.Name, res.Status, res.ExitCode, res.RunID)
		// Warnings are for the operator as much as for the agent.
		for _, w := range res.Warnings {
			fmt.Fprintf(h.log, "sandboxed: mcp: %s: warning: %s\n", def.Name, w)
		}
		return callResult(res), nil
	}
}

// callResult renders a run: stdout as text, the Result as structured
// content; a run that did not end ok also says why in a second text.
func callResult(res *sandbox.Result) *mcp.CallToolResult {
	r := &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: res.Stdout}},
		StructuredContent: res,
		IsError:           res.Status != sandbox.StatusOK,
	}
	if r.IsError {
		var why strings.Builder
		fmt.Fprintf(&why, "status %s, exit code %d", res.Status, res.ExitCode)
		if res.Error != nil {
			fmt.Fprintf(&why, ": %s", res.Error.Message)
			if res.Error.Hint != "" {
				fmt.Fprintf(&why, "\nhint: %s", mcpHint(res.Error.Hint))
			}
		}
		if s := strings.TrimSpace(res.Stderr); s != "" {
			fmt.Fprintf(&why, "\nstderr:\n%s", s)
		}
		r.Content = append(r.Content, &mcp.TextContent{Text: why.String()})
	}
	return r
}

// mcpHint says where --approve goes when sandboxed serves MCP: on the
// server's command line, since a call cannot carry it.
func mcpHint(h string) string {
	if strings.Contains(h, "--approve") {
		return h + "\n(restart `sandboxed mcp` with that --approve flag, or allow it in the policy)"
	}
	return h
}

func errorResult(msg string, structured any) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: msg}},
		StructuredContent: structured,
		IsError:           true,
	}
}
