package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/tool"
)

// toolAddCommand parses its own arguments: the spec's syntax has flags
// that take two values (--step NAME "COMMAND"), flags that modify the
// previous one (--retry-attempts after a --step) and KEY=VALUE options
// after --parameter, none of which urfave/cli can express. The Flags
// listed here are for the help only.
var toolAddCommand = &cli.Command{
	Name:      "add",
	Usage:     "create a tool definition from flags",
	ArgsUsage: "NAME --description DESC [options]",
	Description: `Builds a definition from the flags, checks it exactly as a file is checked,
and writes it atomically as NAME.yaml in the scope's directory. A definition
that does not validate is refused with every problem (exit 2), and nothing is
written. An existing tool is replaced only with --overwrite. --dry-run prints
the YAML instead of writing it.

Flags may come in any order, except that:
  --step NAME "COMMAND"    (or --step NAME=COMMAND) starts a step; the step
                           flags below (--continue-on-error ... --with) apply
                           to the last --step given. Steps run with bash; a
                           --step NAME with no command may be followed by
                           --bash/--cmd/--pwsh/--run/--script/--python to
                           give it one. --commands PLATFORM=COMMAND (repeatable)
                           gives the tool a command per platform.
  --parameter NAME "DESC" [KEY=VALUE...]   (or --parameter NAME=DESC ...)
                           KEY is type, required, default, validation-min,
                           validation-max, validation-pattern, transform,
                           format, example (repeatable), escape-shell,
                           detailed-help.
  --dependency TOOL [version=V] [required=true|false] [scope=S]
  --test NAME "DESC"       starts a test; --test-* flags apply to it.
  --changelog-version V --changelog-changes TEXT   add one entry.
Flags written "true|false" may be given alone to mean true.
Durations (--timeout, --retry-delay, ...) are milliseconds or 30s, 5m, 1h.
Sizes (--buffer-limit, --resource-max-memory) are like 512MB or 1GiB.
--from-file PATH starts from an existing definition; other flags then
replace or add to its fields.

Example:
  sandboxed tool add weather-lookup \
    --description "Get weather for a location" \
    --bash "curl -s 'wttr.in/{LOCATION}?format={FORMAT}'" \
    --parameter LOCATION "City or airport code" required=true \
    --parameter FORMAT "Output format" default=3 \
    --tag weather --tag api --tag read --timeout 10000`,
	SkipFlagParsing: true,
	Action:          toolAddAction,
	// Flags: set by init from addFlags.
}

// addHelpFlags renders tool.AddFlags as urfave flags, for the help.
func addHelpFlags() []cli.Flag {
	var out []cli.Flag
	for _, f := range tool.AddFlags() {
		if f.Arg == "" {
			out = append(out, &cli.BoolFlag{Name: f.Name, Category: f.Category, Usage: f.Usage + " [true|false]"})
			continue
		}
		usage := f.Usage
		if strings.Contains(usage, f.Arg) {
			usage = strings.Replace(usage, f.Arg, "`"+f.Arg+"`", 1)
		} else {
			usage = "`" + f.Arg + "`: " + usage
		}
		out = append(out, &cli.StringFlag{Name: f.Name, Category: f.Category, Usage: usage})
	}
	return out
}

func init() { toolAddCommand.Flags = addHelpFlags() }

func toolAddAction(c *cli.Context) error {
	p, err := tool.ParseAddArgs(c.Args().Slice())
	if errors.Is(err, tool.ErrAddHelp) {
		showCommandHelp(c)
		return nil
	}
	if err != nil {
		return err
	}
	sc, err := tool.ParseScope(p.Scope)
	if err != nil {
		return usageError(err)
	}
	if sc == tool.ScopeAny {
		return usageError(errors.New("--scope any: tool add writes to one scope; use local, user or global"))
	}
	return writeDefinition(c, p.Def, sc, p.Overwrite, p.DryRun, "add", "the flags")
}

// writeDefinition checks def exactly as a file is checked and writes it
// as NAME.yaml into the scope's directory (or prints it with dryRun). verb
// and from name the command and what the definition was built from, for
// messages.
func writeDefinition(c *cli.Context, def *tool.Definition, sc tool.Scope, overwrite, dryRun bool, verb, from string) error {
	data, err := tool.Marshal(def, "yaml")
	if err != nil {
		return err
	}
	label := "<generated " + def.Name + ".yaml>"
	parsed, err := tool.Parse(data, label)
	if err != nil {
		fmt.Fprintf(c.App.ErrWriter, "sandboxed: the definition built from %s does not validate:\n%s", from, numbered(data))
		return fmt.Errorf("%s tool %s: nothing written:\n%w", verb, def.Name, err)
	}
	// Write what the loader read back, so the defaults it fills in
	// (isolation, privilege) are written out.
	if data, err = tool.Marshal(parsed, "yaml"); err != nil {
		return err
	}
	if dryRun {
		_, err := c.App.Writer.Write(data)
		return err
	}
	s := scopes()
	dir, err := s.WriteDir(sc)
	if err != nil {
		return err
	}
	dst := filepath.Join(dir, def.Name+".yaml")
	if err := checkNameFree(s, sc, def.Name, dst); err != nil {
		return err
	}
	yml := filepath.Join(dir, def.Name+".yml")
	_, ymlErr := os.Lstat(yml)
	if ymlErr == nil && !overwrite {
		return usageError(fmt.Errorf("%s tool %s: write %s: %w (hint: pass --overwrite to replace it)", verb, def.Name, yml, tool.ErrExists))
	}
	if err := tool.WriteAtomic(dst, data, overwrite); err != nil {
		return exists(fmt.Errorf("%s tool %s: %w", verb, def.Name, err))
	}
	if ymlErr == nil {
		// --overwrite: NAME.yaml replaces NAME.yml, which would otherwise
		// claim the same name.
		if err := os.Remove(yml); err != nil {
			return fmt.Errorf("%s tool %s: remove the old %s: %w", verb, def.Name, yml, err)
		}
	}
	past := map[string]string{"add": "added", "import": "imported"}[verb]
	fmt.Fprintf(c.App.Writer, "%s %s to the %s scope: %s\n", past, def.Name, sc, dst)
	noteOtherScopes(c, s, def.Name, dst)
	return nil
}

// numbered prefixes each line of data with its number, so diagnostics
// about the generated YAML can be followed.
func numbered(data []byte) string {
	var b strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		fmt.Fprintf(&b, "%4d  %s\n", n, sc.Text())
	}
	return b.String()
}
