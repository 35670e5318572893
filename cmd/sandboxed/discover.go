package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/sandbox"
	"github.com/sandboxed-dev/sandboxed/tool"
)

var discoverCommand = &cli.Command{
	Name:      "discover",
	Usage:     "find self-describing executables under DIR and turn them into tool definitions",
	ArgsUsage: "DIR",
	Description: `Every executable under DIR (a file with an exec bit, or a .py/.sh file with a
#! line) that has no companion NAME.yaml is probed, in DIR and its folders down
to --depth (hidden folders such as .git and .venv, virtual environments,
node_modules and __pycache__ are not searched). The probes, in this order: the
simple JSON ping ('{"__test__": true}' as argv[1]), --fractalic-dump-multi-schema,
--fractalic-dump-schema, --help. Every probe runs inside a sandbox (reduced
privilege, no network, 5s, 256MiB) that can read, read-only, the script's own
folder (so the modules beside it import; the script alone when the folder is a
home or shared directory such as ~ or /tmp), the system directories, and the
--grant paths: discovering a script never runs it on the host. A write grant is
read-only to probes unless --approve write. Every file passed over is listed
with the reason, and each script with the interpreter that ran it.

Each tool found becomes a definition that runs the script with the simple
JSON convention (the parameters as one JSON object in argv[1], each with the
JSON type the script's schema gives it; an answer {"error": ...} fails the
call), reading what its probes read, at reduced privilege. --grant PERMISSION
(repeatable) adds a permission to every definition, for example
filesystem:read:. for a tool that reads the workspace. The tools run as
nobody, and write a write grant as you (docs/permissions.md); discover warns
of a write grant they could not write.

The sandbox sees only the system directories, so #!/usr/bin/env python3 runs
/usr/bin/python3, not a python3 of your PATH under your home. A script that
needs packages the system's interpreter lacks runs with --interpreter
VENV/bin/python: probes and definitions run it, and may read its environment.

A name CYCOD cannot spell gets one it can ("_ls" becomes the tool ls, the
property "-A" the parameter A); the script's own names are kept under
sandboxed.exposed-as and its own schema of each parameter under
sandboxed.parameter-schemas: 'tool schema' and 'sandboxed mcp' show them, and
the script receives them.

--write writes the definitions into the scope's directory as NAME.yaml, each
checked with the loader first; existing files are never replaced.`,
	Flags: []cli.Flag{
		&cli.BoolFlag{Name: "write", Usage: "write the definitions into the scope's tool directory"},
		&cli.StringFlag{Name: "scope", Usage: "where --write puts definitions: local or user", Value: "local"},
		&cli.StringSliceFlag{Name: "grant", Usage: "add `PERMISSION` to every definition and to the probes (repeatable), e.g. filesystem:read:."},
		&cli.StringSliceFlag{Name: "approve", Usage: "approve `WHAT` for the probes: write (write grants are writable to them)"},
		&cli.IntFlag{Name: "depth", Usage: "search folders down to `N` levels below DIR", Value: tool.DefaultScanDepth},
		&cli.StringFlag{Name: "interpreter", Usage: "run scripts of this interpreter's language with `PATH` (e.g. .venv/bin/python)"},
		&cli.BoolFlag{Name: "json", Usage: "print the findings (with every probe's output) as JSON"},
		&cli.IntFlag{Name: "parallel", Usage: "probe up to `N` files at a time", Value: 2},
	},
	Action: discoverAction,
}

// discoverAction probes the scripts under DIR in sandboxes (discoverOptions
// reads the flags), writes the tools found with --write (writeDiscovered)
// and reports them (printDiscovered).
func discoverAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageError(errors.New("discover: which directory? usage: sandboxed discover [--write] [--grant PERMISSION]... [--depth N] [--interpreter PATH] [--scope local|user] [--json] DIR"))
	}
	opts, scope, err := discoverOptions(c)
	if err != nil {
		return err
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	// Probes are not tool runs: no run records, no audit lines.
	ctl := &sandbox.Controller{RuntimeDir: sandbox.RuntimeDir(), Backends: backends()}
	found, err := ctl.DiscoverDir(ctx, c.Args().First(), opts)
	if err != nil {
		return err
	}
	// Discovered tools run reduced: say which write grant they could not
	// write, and how they write the others.
	for _, g := range sandbox.DiscoveredGrantAccess(opts) {
		if !g.Writable {
			fmt.Fprintln(c.App.ErrWriter, "sandboxed: warning:", g.String())
		}
	}
	for _, d := range found {
		for _, def := range d.Tools {
			if err := tool.Grant(def, opts.Grants); err != nil {
				return usageError(fmt.Errorf("discover: %w", err))
			}
		}
	}
	var failed []error
	if c.Bool("write") {
		if failed, err = writeDiscovered(found, scope); err != nil {
			return err
		}
	}
	if err := printDiscovered(c, found, scope); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("discover: %d definition(s) not written (see WHY)", len(failed))
	}
	return nil
}

// discoverOptions reads discover's flags: the probes' grants and
// approval, the search's depth and interpreter, and the scope written to.
func discoverOptions(c *cli.Context) (sandbox.DiscoverOptions, tool.Scope, error) {
	var none sandbox.DiscoverOptions
	grants := c.StringSlice("grant")
	if err := tool.CheckGrants(grants); err != nil {
		return none, "", usageError(fmt.Errorf("discover: %w", err))
	}
	scope := tool.Scope(c.String("scope"))
	if scope != tool.ScopeLocal && scope != tool.ScopeUser {
		return none, "", usageError(fmt.Errorf("--scope %q: use local or user", scope))
	}
	approveWrite := false
	for _, a := range c.StringSlice("approve") {
		if a != "write" {
			return none, "", usageError(fmt.Errorf("discover: --approve %q: probes can be approved only write (write grants writable to them)", a))
		}
		approveWrite = true
	}
	if c.Int("depth") < 0 {
		return none, "", usageError(fmt.Errorf("discover: --depth %d: give 0 (DIR alone) or more", c.Int("depth")))
	}
	interp := c.String("interpreter")
	if interp != "" {
		abs, err := filepath.Abs(interp)
		if err != nil {
			return none, "", usageError(fmt.Errorf("discover: --interpreter %s: %w", interp, err))
		}
		if fi, err := os.Stat(abs); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return none, "", usageError(fmt.Errorf("discover: --interpreter %s: not an executable file", interp))
		}
		interp = abs
	}
	cwd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	return sandbox.DiscoverOptions{
		Limits:   sandbox.DefaultProbeLimits,
		Parallel: c.Int("parallel"),
		Scan: tool.ScanOptions{
			MaxDepth:    c.Int("depth"),
			Interpreter: interp,
			SandboxPath: func(prog string) string { return findIn(sandbox.DefaultPath, prog) },
			HostPath:    func(prog string) string { return findIn(os.Getenv("PATH"), prog) },
		},
		Grants: grants, ApproveWrite: approveWrite, Cwd: cwd, Home: home,
	}, scope, nil
}

// writeDiscovered writes the tools found into scope's directory, noting
// each one written (Written) or not (Why); it returns the definitions not
// written, and an error when the scope has no directory.
func writeDiscovered(found []*tool.Discovery, scope tool.Scope) ([]error, error) {
	dir, err := scopes().WriteDir(scope)
	if err != nil {
		return nil, err
	}
	var failed []error
	for _, d := range found {
		for _, def := range d.Tools {
			path, err := tool.WriteDiscovered(dir, def)
			if errors.Is(err, tool.ErrExists) {
				path = filepath.Join(dir, def.Name+".yaml")
				err = fmt.Errorf("%s exists; remove it to rediscover %s", path, def.Name)
			}
			if err != nil {
				failed = append(failed, err)
				d.Why = joinWhy(d.Why, "not written: "+err.Error())
				continue
			}
			d.Written = append(d.Written, path)
		}
	}
	return failed, nil
}

// printDiscovered reports the findings: JSON with --json, else a table,
// the files written, and how to write them when --write was not given.
func printDiscovered(c *cli.Context, found []*tool.Discovery, scope tool.Scope) error {
	if c.Bool("json") {
		return writeJSON(c.App.Writer, found)
	}
	w := tabwriter.NewWriter(terminalSafe(c.App.Writer), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "FILE\tRESULT\tTOOLS\tINTERPRETER\tWHY")
	for _, d := range found {
		interp := d.Interpreter
		if interp == "" {
			interp = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", d.File, d.Result, toolNames(d), interp, oneLine(d.Why))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, d := range found {
		for _, p := range d.Written {
			fmt.Fprintf(c.App.Writer, "wrote %s\n", p)
		}
	}
	if !c.Bool("write") && registered(found) > 0 {
		fmt.Fprintf(c.App.ErrWriter, "sandboxed: %d tool(s) found; rerun with --write to add them to the %s scope\n", registered(found), scope)
	}
	return nil
}

// toolNames lists the tools of d for the table: the definition's name,
// and the script's own where it differs ("ls (_ls)").
func toolNames(d *tool.Discovery) string {
	var out []string
	for _, def := range d.Tools {
		n := def.Name
		if e := def.ExposedName(); e != n {
			n += " (" + e + ")"
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ",")
}

func registered(ds []*tool.Discovery) int {
	n := 0
	for _, d := range ds {
		n += len(d.Tools)
	}
	return n
}

func joinWhy(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// findIn finds prog in the directories of path ("" when it is in none).
func findIn(path, prog string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, prog)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
