package main

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/tool"
)

var toolGetCommand = &cli.Command{
	Name:      "get",
	Usage:     "print a tool's definition",
	ArgsUsage: "NAME|PATH",
	Description: `Prints the definition as it is stored (an alias is not merged with its base
tool), normalised: every default the loader fills in is written out.`,
	Flags: []cli.Flag{
		scopeFlag,
		formatFlag("yaml", "yaml", "json"),
	},
	Action: func(c *cli.Context) error {
		def, format, err := oneDefinition(c, "get")
		if err != nil {
			return err
		}
		data, err := tool.Marshal(def, format)
		if err != nil {
			return err
		}
		_, err = c.App.Writer.Write(data)
		return err
	},
}

var toolExportCommand = &cli.Command{
	Name:      "export",
	Usage:     "write a tool's definition to stdout or a file",
	ArgsUsage: "NAME|PATH",
	Description: `Writes the normalised definition (as 'tool get' prints it) to stdout, or with
--output atomically to FILE, which must not exist unless --overwrite is given.`,
	Flags: []cli.Flag{
		scopeFlag,
		formatFlag("yaml", "yaml", "json"),
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` instead of stdout"},
		&cli.BoolFlag{Name: "overwrite", Usage: "replace --output FILE if it exists"},
	},
	Action: func(c *cli.Context) error {
		def, format, err := oneDefinition(c, "export")
		if err != nil {
			return err
		}
		data, err := tool.Marshal(def, format)
		if err != nil {
			return err
		}
		out := c.String("output")
		if out == "" || out == "-" {
			_, err = c.App.Writer.Write(data)
			return err
		}
		if err := tool.WriteAtomic(out, data, c.Bool("overwrite")); err != nil {
			return exists(fmt.Errorf("export tool %s: %w", def.Name, err))
		}
		fmt.Fprintf(c.App.ErrWriter, "exported %s to %s\n", def.Name, out)
		return nil
	},
}

// oneDefinition parses the arguments of get and export: one NAME or PATH,
// resolved in --scope, and --format.
func oneDefinition(c *cli.Context, verb string) (*tool.Definition, string, error) {
	args, err := toolArgs(c)
	if err != nil {
		return nil, "", err
	}
	if len(args) != 1 {
		return nil, "", usageError(fmt.Errorf("tool %s: give one tool name or path (usage: sandboxed tool %s NAME|PATH [--scope S] [--format yaml|json])", verb, verb))
	}
	format, err := checkFormat(c, "yaml", "json")
	if err != nil {
		return nil, "", err
	}
	scope, err := readScope(c)
	if err != nil {
		return nil, "", err
	}
	def, err := scopes().Resolve(args[0], scope)
	if err != nil {
		return nil, "", err
	}
	return def, format, nil
}

var toolSchemaCommand = &cli.Command{
	Name:      "schema",
	Usage:     "print the function-calling schema of tools (OpenAI, Anthropic or MCP)",
	ArgsUsage: "TOOL...",
	Description: `Prints one JSON object for one tool, a JSON array for several. An alias is
merged with its base tool first. The schema follows the tool's
function-calling.schema-generation settings.`,
	Flags: []cli.Flag{
		scopeFlag,
		formatFlag(tool.SchemaOpenAI, tool.SchemaFormats...),
	},
	Action: func(c *cli.Context) error {
		args, err := toolArgs(c)
		if err != nil {
			return err
		}
		if len(args) == 0 {
			return usageError(errors.New("tool schema: which tools? usage: sandboxed tool schema [--format openai|anthropic|mcp] TOOL [TOOL ...]"))
		}
		format, err := checkFormat(c, tool.SchemaFormats...)
		if err != nil {
			return err
		}
		var out []any
		for _, a := range args {
			def, err := loadTool(c, a)
			if err != nil {
				return err
			}
			s, err := tool.FunctionSchema(def, format)
			if err != nil {
				return err
			}
			out = append(out, s)
		}
		var v any = out
		if len(out) == 1 {
			v = out[0]
		}
		var buf bytes.Buffer
		if err := writeJSON(&buf, v); err != nil {
			return err
		}
		_, err = c.App.Writer.Write(unescapeHTML(buf.Bytes()))
		return err
	},
}

// unescapeHTML undoes the \u003c, \u003e and \u0026 escapes that
// json.Marshal writes inside values whose MarshalJSON calls it (the
// schema's ordered objects), whatever the outer encoder's SetEscapeHTML
// says: schemas are read by people and models, not embedded in HTML.
// Every backslash in JSON text starts an escape sequence, so walking
// them left to right never mistakes an escaped backslash for one.
func unescapeHTML(js []byte) []byte {
	out := make([]byte, 0, len(js))
	for i := 0; i < len(js); i++ {
		if js[i] != '\\' || i+1 >= len(js) {
			out = append(out, js[i])
			continue
		}
		if js[i+1] == 'u' && i+6 <= len(js) {
			switch string(js[i+2 : i+6]) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out, i = append(out, js[i], js[i+1]), i+1
	}
	return out
}
