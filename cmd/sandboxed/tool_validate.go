package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/sandbox"
	"github.com/sandboxed-dev/sandboxed/tool"
)

var toolValidateCommand = &cli.Command{
	Name:      "validate",
	Usage:     "check tool definitions and report every problem with its position",
	ArgsUsage: "FILE|DIR|NAME...",
	Description: `Loads each definition (a file, every .yaml/.yml file of a directory, or a tool
name looked up in --scope) and prints "FILE: ok" or every problem as
FILE:LINE:COL: message (hint: ...). Beyond the format, a definition must be
able to run here: its platforms include linux, its commands: has an entry for
linux, unix or default, it uses no cmd: (Windows CMD), and its shell or
interpreter is in this host's system directories, the only ones a sandbox sees. An alias whose base tool is not found in
any scope gets a warning, not an error. Exit status 0 when every definition
is valid, 2 when any is not.

JSON: an array of {file, name, valid, diagnostics: [{file, line, col,
message, hint}], warnings, error}.`,
	Flags: []cli.Flag{
		scopeFlag,
		formatFlag("text", "text", "json"),
	},
	Action: toolValidateAction,
}

// validateResult is one definition checked by `tool validate`.
type validateResult struct {
	File        string           `json:"file"`
	Name        string           `json:"name,omitempty"`
	Valid       bool             `json:"valid"`
	Diagnostics []diagnosticJSON `json:"diagnostics,omitempty"`
	Warnings    []string         `json:"warnings,omitempty"`
	Error       string           `json:"error,omitempty"` // a failure that is not a diagnostic (no such tool, unreadable file)
}

// diagnosticJSON is tool.Diagnostic with stable field names.
type diagnosticJSON struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

func toolValidateAction(c *cli.Context) error {
	args, err := toolArgs(c)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return usageError(errors.New("tool validate: what to validate? usage: sandboxed tool validate [--format text|json] FILE|DIR|NAME [...]"))
	}
	format, err := checkFormat(c, "text", "json")
	if err != nil {
		return err
	}
	scope, err := readScope(c)
	if err != nil {
		return err
	}
	s := scopes()
	var results []validateResult
	for _, a := range args {
		results = append(results, validateArg(s, scope, a)...)
	}
	invalid := 0
	for _, r := range results {
		if !r.Valid {
			invalid++
		}
	}
	if format == "json" {
		if err := writeJSON(c.App.Writer, results); err != nil {
			return err
		}
	} else {
		for _, r := range results {
			switch {
			case r.Valid:
				fmt.Fprintf(c.App.Writer, "%s: ok\n", r.File)
			case r.Error != "":
				fmt.Fprintf(c.App.Writer, "%s: %s\n", r.File, r.Error)
			default:
				for _, d := range r.Diagnostics {
					fmt.Fprintln(c.App.Writer, tool.Diagnostic{Pos: tool.Pos{File: d.File, Line: d.Line, Col: d.Col}, Msg: d.Message, Hint: d.Hint}.String())
				}
			}
			for _, w := range r.Warnings {
				fmt.Fprintf(c.App.Writer, "%s: warning: %s\n", r.File, w)
			}
		}
	}
	if invalid > 0 {
		fmt.Fprintf(c.App.ErrWriter, "sandboxed: %d of %d definition(s) invalid\n", invalid, len(results))
		return exitWith(exitUsage)
	}
	return nil
}

// sandboxLookPath finds a program where a sandbox's PATH does: in the
// host's system directories, which are all a sandbox sees of the host.
func sandboxLookPath(prog string) error {
	if filepath.IsAbs(prog) {
		if fi, err := os.Stat(prog); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not an executable file", prog)
		}
		return nil
	}
	if findIn(sandbox.DefaultPath, prog) != "" {
		return nil
	}
	return fmt.Errorf("%s is not in %s", prog, sandbox.DefaultPath)
}

// validateArg checks one argument: a directory (each definition file in
// it), a file, or a tool name.
func validateArg(s tool.Scopes, scope tool.Scope, arg string) []validateResult {
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		des, err := os.ReadDir(arg)
		if err != nil {
			return []validateResult{{File: arg, Error: err.Error()}}
		}
		var files []string
		for _, de := range des {
			lower := strings.ToLower(de.Name())
			if !de.IsDir() && !strings.HasPrefix(de.Name(), ".") && (strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml")) {
				files = append(files, filepath.Join(arg, de.Name()))
			}
		}
		sort.Strings(files)
		if len(files) == 0 {
			return []validateResult{{File: arg, Error: "no .yaml or .yml files in this directory"}}
		}
		var out []validateResult
		for _, f := range files {
			out = append(out, validateDef(s, f, func() (*tool.Definition, error) { return tool.Load(f, tool.ScopePath) }))
		}
		return out
	}
	return []validateResult{validateDef(s, arg, func() (*tool.Definition, error) { return s.Resolve(arg, scope) })}
}

func validateDef(s tool.Scopes, label string, load func() (*tool.Definition, error)) validateResult {
	r := validateResult{File: label}
	def, err := load()
	if err != nil {
		var le *tool.LoadError
		if errors.As(err, &le) {
			if le.File != "" {
				r.File = le.File
			}
			for _, d := range le.Diags {
				r.Diagnostics = append(r.Diagnostics, diagnosticJSON{File: d.Pos.File, Line: d.Pos.Line, Col: d.Pos.Col, Message: d.Msg, Hint: d.Hint})
			}
			return r
		}
		r.Error = err.Error()
		return r
	}
	r.Valid, r.Name = true, def.Name
	if def.Source.Scope != tool.ScopePath && def.Source.Path != "" {
		r.File = def.Source.Path // a name was given: say which file it is
	}
	if diags := tool.CheckRunnable(def, sandboxLookPath); len(diags) > 0 {
		r.Valid = false
		for _, d := range diags {
			r.Diagnostics = append(r.Diagnostics, diagnosticJSON{File: d.Pos.File, Line: d.Pos.Line, Col: d.Pos.Col, Message: d.Msg, Hint: d.Hint})
		}
		return r
	}
	if def.Type == "alias" {
		_, err := s.Find(def.BaseTool, tool.ScopeAny)
		if errors.Is(err, tool.ErrNotFound) && def.Source.Path != "" {
			// A file given by path may sit next to its base tool.
			sib := tool.Scopes{Dirs: map[tool.Scope][]string{tool.ScopeLocal: {filepath.Dir(def.Source.Path)}}}
			_, err = sib.Find(def.BaseTool, tool.ScopeLocal)
		}
		if err != nil {
			if errors.Is(err, tool.ErrNotFound) {
				r.Warnings = append(r.Warnings, fmt.Sprintf("alias %s: base tool %s is not found in any scope nor next to the file (hint: add or import %s before running %s)", def.Name, def.BaseTool, def.BaseTool, def.Name))
			} else {
				r.Warnings = append(r.Warnings, fmt.Sprintf("alias %s: base tool %s: %s", def.Name, def.BaseTool, firstError(err)))
			}
		}
	}
	return r
}
