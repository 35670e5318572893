package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/tool"
)

var toolCommand = &cli.Command{
	Name:  "tool",
	Usage: "list, inspect, validate, add, import, export and remove tool definitions",
	Description: `Tools live in scopes: local (./.sandboxed/tools, then ./.cycod/tools), user
(~/.sandboxed/tools, ~/.cycod/tools) and global (/etc/sandboxed/tools,
/etc/cycod/tools; $SANDBOXED_GLOBAL_DIR replaces /etc). A name is looked up
local first, then user, then global. Flags may come before or after the
positional arguments.`,
	Subcommands: []*cli.Command{
		toolListCommand,
		toolGetCommand,
		toolValidateCommand,
		toolSchemaCommand,
		toolExportCommand,
		toolImportCommand,
		toolAddCommand,
		toolRemoveCommand,
	},
}

func init() {
	// Name the command in flag errors as the user typed it ("tool get"),
	// which urfave's FullName does not for subcommands.
	for _, sub := range toolCommand.Subcommands {
		sub.OnUsageError = func(c *cli.Context, err error, _ bool) error {
			return usageError(fmt.Errorf("%s: %w (see 'sandboxed %s --help')", toolCmdName(c), err, toolCmdName(c)))
		}
	}
}

func toolCmdName(c *cli.Context) string { return "tool " + c.Command.Name }

// errHelpShown ends a command that printed its help because -h or --help
// came after its arguments.
var errHelpShown = &codeError{code: exitOK, silent: true}

// toolArgs returns the positional arguments of c and applies the flags
// found among them. urfave/cli stops parsing flags at the first argument,
// while the tool commands are written NAME --flag (as the spec shows
// them), so flags after the arguments are parsed here. "--" ends flags.
func toolArgs(c *cli.Context) ([]string, error) {
	var pos []string
	args := c.Args().Slice()
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "help" || name == "h" {
			showCommandHelp(c)
			return nil, errHelpShown
		}
		f := lookupFlag(c.Command.Flags, name)
		if f == nil {
			return nil, usageError(fmt.Errorf("%s: unknown flag %s (see 'sandboxed %s --help')", toolCmdName(c), a, toolCmdName(c)))
		}
		primary := f.Names()[0]
		if _, isBool := f.(*cli.BoolFlag); isBool {
			if !hasVal {
				val = "true"
			}
		} else if !hasVal {
			if i+1 >= len(args) {
				return nil, usageError(fmt.Errorf("%s: flag %s needs a value", toolCmdName(c), a))
			}
			i++
			val = args[i]
		}
		if err := c.Set(primary, val); err != nil {
			return nil, usageError(fmt.Errorf("%s: flag %s: %w", toolCmdName(c), a, err))
		}
	}
	return pos, nil
}

func lookupFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// showCommandHelp prints the help of the command c runs.
func showCommandHelp(c *cli.Context) {
	cli.HelpPrinter(c.App.Writer, cli.CommandHelpTemplate, c.Command)
}

// readScope parses --scope for a command that reads (any is allowed).
func readScope(c *cli.Context) (tool.Scope, error) {
	sc, err := tool.ParseScope(c.String("scope"))
	if err != nil {
		return "", usageError(err)
	}
	return sc, nil
}

// writeScope parses --scope for a command that writes into one scope.
func writeScope(c *cli.Context) (tool.Scope, error) {
	sc, err := tool.ParseScope(c.String("scope"))
	if err != nil {
		return "", usageError(err)
	}
	if sc == tool.ScopeAny {
		return "", usageError(fmt.Errorf("--scope any: %s writes to one scope; use local, user or global", toolCmdName(c)))
	}
	return sc, nil
}

// writeScopeFlag is --scope for commands that write (add, import).
var writeScopeFlag = &cli.StringFlag{
	Name:  "scope",
	Usage: "scope to write to: local, user or global",
	Value: "local",
}

// exists turns tool.ErrExists into a usage error: the user asked for
// something that needs --overwrite.
func exists(err error) error {
	if errors.Is(err, tool.ErrExists) {
		return usageError(err)
	}
	return err
}

// checkNameFree refuses to write NAME.yaml into dir when another file of
// that scope already defines NAME: both would then claim the name.
func checkNameFree(s tool.Scopes, scope tool.Scope, name, dst string) error {
	entries, err := s.List(scope)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name != name || e.Scope != scope {
			continue
		}
		if samePath(e.Path, dst) || samePath(e.Path, strings.TrimSuffix(dst, ".yaml")+".yml") {
			continue
		}
		return fmt.Errorf("write tool %s: %w: %s already defines it in the %s scope (hint: remove it with 'sandboxed tool remove %s --scope %s', or rename the tool)",
			name, tool.ErrConflict, e.Path, scope, name, scope)
	}
	return nil
}

func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// firstError is a one-line summary of a load error for tables: the first
// diagnostic (LINE:COL: message) and how many more there are.
func firstError(err error) string {
	var le *tool.LoadError
	if errors.As(err, &le) && len(le.Diags) > 0 {
		d := le.Diags[0]
		s := fmt.Sprintf("%d:%d: %s", d.Pos.Line, d.Pos.Col, d.Msg)
		if n := len(le.Diags) - 1; n > 0 {
			s += fmt.Sprintf(" (+%d more)", n)
		}
		return s
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// truncate shortens s to n runes for a table cell.
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// stdinIsTerminal and confirmInput are variables so tests can stand in
// for a terminal.
var (
	stdinIsTerminal = stdinTerminal
	confirmInput    = func() io.Reader { return os.Stdin }
)

// noteOtherScopes tells the user, on stderr, where else a tool called
// name is defined, and which definition a run by name now uses.
func noteOtherScopes(c *cli.Context, s tool.Scopes, name, path string) {
	entries, err := s.List(tool.ScopeAny)
	if err != nil {
		return
	}
	var winner string
	for _, e := range entries {
		if e.Name != name {
			continue
		}
		if winner == "" {
			winner = e.Path
		}
		if samePath(e.Path, path) {
			continue
		}
		fmt.Fprintf(c.App.ErrWriter, "note: the %s scope also defines %s, at %s\n", e.Scope, name, e.Path)
	}
	if winner != "" && !samePath(winner, path) {
		fmt.Fprintf(c.App.ErrWriter, "note: running %s by name uses %s\n", name, winner)
	}
}
