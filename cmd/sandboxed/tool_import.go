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
is replaced only with --overwrite.`,
	Flags: []cli.Flag{
		writeScopeFlag,
		&cli.BoolFlag{Name: "overwrite", Usage: "replace the tool if the scope already has it"},
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
