package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/tool"
)

var toolImportCommand = &cli.Command{
	Name:      "import",
	Usage:     "validate a definition file and copy it into a scope",
	ArgsUsage: "FILE",
	Description: `The file is validated first and copied as it is (comments kept) to the
scope's directory as NAME.yaml, where NAME is the tool's name. Nothing is
written when it does not validate. An existing tool of that name in the scope
is replaced only with --overwrite.

FILE may also be a function declaration: an OpenAI function ({"type":
"function", "function": {...}} or {name, description, parameters}), an
Anthropic tool ({name, description, input_schema}), or an MCP tools/list
answer ({"tools": [...]}, or the JSON-RPC response holding it). Those say what
a tool takes but not what it runs: give the command with --bash (or --run,
without a shell), placing each parameter as {NAME}, and --tool NAME when the
file declares several. The definition gets the declaration's name,
description and parameters (each with its own JSON Schema, so values keep
their JSON types), the tags run and imported (the command is yours: the
execute tier) and CYCOD's defaults (process tier, same-as-user).`,
	Flags: []cli.Flag{
		writeScopeFlag,
		&cli.BoolFlag{Name: "overwrite", Usage: "replace the tool if the scope already has it"},
		&cli.StringFlag{Name: "bash", Usage: "for a function declaration: the bash `COMMAND` that runs it"},
		&cli.StringFlag{Name: "run", Usage: "for a function declaration: the `COMMAND` that runs it, without a shell"},
		&cli.StringFlag{Name: "tool", Usage: "for a file of several declarations: the `NAME` to import"},
		&cli.BoolFlag{Name: "dry-run", Usage: "print the definition made of a function declaration; write nothing"},
	},
	Action: func(c *cli.Context) error {
		args, err := toolArgs(c)
		if err != nil {
			return err
		}
		if len(args) != 1 {
			return usageError(errors.New("tool import: give one FILE (usage: sandboxed tool import FILE [--scope local|user|global] [--overwrite])"))
		}
		scope, err := writeScope(c)
		if err != nil {
			return err
		}
		if done, err := importFunction(c, args[0], scope); done {
			return err
		}
		s := scopes()
		dir, err := s.WriteDir(scope)
		if err != nil {
			return err
		}
		// Validate first, so the name check below reads a valid name.
		def, err := tool.Load(args[0], tool.ScopePath)
		if err != nil {
			return err
		}
		dst := dir + string(os.PathSeparator) + def.Name + ".yaml"
		if err := checkNameFree(s, scope, def.Name, dst); err != nil {
			return err
		}
		path, err := tool.ImportFile(args[0], dir, c.Bool("overwrite"))
		if err != nil {
			return exists(err)
		}
		fmt.Fprintf(c.App.Writer, "imported %s into the %s scope: %s\n", def.Name, scope, path)
		noteOtherScopes(c, s, def.Name, path)
		return nil
	},
}

// importFunction imports FILE when it is a function declaration; done is
// false when it is not (and no declaration flag was given).
func importFunction(c *cli.Context, file string, scope tool.Scope) (done bool, err error) {
	cmd := tool.ImportCommand{Tool: c.String("tool")}
	switch {
	case c.String("bash") != "" && c.String("run") != "":
		return true, usageError(errors.New("tool import: give one of --bash and --run"))
	case c.String("bash") != "":
		cmd.Kind, cmd.Command = tool.ExecBash, c.String("bash")
	case c.String("run") != "":
		cmd.Kind, cmd.Command = tool.ExecRun, c.String("run")
	}
	f, ok, err := tool.ReadFunctionFile(file)
	if err != nil {
		return true, fmt.Errorf("tool import: %w", err)
	}
	if !ok {
		if cmd.Command != "" || cmd.Tool != "" || c.Bool("dry-run") {
			return true, usageError(fmt.Errorf("tool import: %s is not a function declaration (OpenAI, Anthropic or MCP JSON); --bash, --run, --tool and --dry-run go with those, and a definition file is imported as it is", file))
		}
		return false, nil
	}
	def, err := tool.DefinitionFromFunction(f, file, cmd)
	if err != nil {
		return true, usageError(err)
	}
	return true, writeDefinition(c, def, scope, c.Bool("overwrite"), c.Bool("dry-run"), "import", file)
}

var toolRemoveCommand = &cli.Command{
	Name:      "remove",
	Usage:     "delete a tool's definition file",
	ArgsUsage: "NAME",
	Description: `Removes the file that defines NAME in --scope (with any: the one a run by name
would use). A file that fails to load can be removed by the name it claims
(its name: line, or else its file name). Asks for confirmation on a terminal; elsewhere --force is
required.`,
	Flags: []cli.Flag{
		scopeFlag,
		&cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "remove without asking"},
	},
	Action: toolRemoveAction,
}

func toolRemoveAction(c *cli.Context) error {
	args, err := toolArgs(c)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return usageError(errors.New("tool remove: give one tool NAME (usage: sandboxed tool remove NAME [--scope S] [--force])"))
	}
	name := args[0]
	scope, err := readScope(c)
	if err != nil {
		return err
	}
	s := scopes()
	entries, err := s.List(scope)
	if err != nil {
		return err
	}
	var match []tool.Entry
	for _, e := range entries {
		if e.Name == name && (len(match) == 0 || match[0].Scope == e.Scope) {
			match = append(match, e)
		}
	}
	if len(match) == 0 {
		_, err := s.Find(name, scope) // the standard not-found error, with the directories searched
		if err == nil {
			err = fmt.Errorf("remove tool %s: %w", name, tool.ErrNotFound)
		}
		return err
	}
	if len(match) > 1 {
		var paths []string
		for _, m := range match {
			paths = append(paths, m.Path)
		}
		return fmt.Errorf("remove tool %s: %w: %s all define it in the %s scope (hint: delete the file you mean by hand)",
			name, tool.ErrConflict, strings.Join(paths, " and "), match[0].Scope)
	}
	e := match[0]
	if !c.Bool("force") {
		if !stdinIsTerminal() {
			return usageError(fmt.Errorf("remove tool %s: not removing %s without confirmation, and stdin is not a terminal (hint: pass --force)", name, e.Path))
		}
		ok, err := confirm(c.App.ErrWriter, confirmInput(), fmt.Sprintf("Remove tool %s (%s scope) at %s? [y/N] ", name, e.Scope, e.Path))
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(c.App.ErrWriter, "not removed")
			return exitWith(exitFailure)
		}
	}
	if err := os.Remove(e.Path); err != nil {
		return fmt.Errorf("remove tool %s: %w", name, err)
	}
	fmt.Fprintf(c.App.Writer, "removed %s from the %s scope: %s\n", name, e.Scope, e.Path)
	noteOtherScopes(c, s, name, e.Path)
	return nil
}

// confirm asks question on w and reads y/N from r.
func confirm(w io.Writer, r io.Reader, question string) (bool, error) {
	fmt.Fprint(w, question)
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("read answer: %w", err)
	}
	ans := strings.ToLower(strings.TrimSpace(line))
	return ans == "y" || ans == "yes", nil
}
