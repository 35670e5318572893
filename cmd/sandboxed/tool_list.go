package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/tool"
)

var toolListCommand = &cli.Command{
	Name:      "list",
	Usage:     "list the tools of a scope, with the ones that fail to load",
	ArgsUsage: " ",
	Description: `Every definition file of the scope is listed. A file that fails to load is
listed with status "invalid" and its first error (run 'sandboxed tool validate
PATH' for all of them); the command still exits 0 and says so on stderr.
A tool whose name a scope searched earlier also defines has status "shadowed":
running it by name runs the other one. Filters (--tag, --category, --platform)
apply to tools that load; invalid files are always listed. -q prints the
names of the tools that load, one a line.

JSON and YAML fields: name, scope, path, status (ok, shadowed, invalid),
version, isolation, tags, category, platforms, description, error.`,
	Flags: []cli.Flag{
		scopeFlag,
		&cli.StringSliceFlag{Name: "tag", Usage: "only tools with `TAG` (tags or metadata.tags); repeat to require several"},
		&cli.StringFlag{Name: "category", Usage: "only tools of metadata.category `CATEGORY`"},
		&cli.StringFlag{Name: "platform", Usage: "only tools that run on `PLATFORM` (windows, linux, macos); tools that name no platform run on all"},
		formatFlag("table", "table", "json", "yaml"),
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print tool names only"},
	},
	Action: toolListAction,
}

// toolListItem is one row of `tool list`. Field names are stable.
type toolListItem struct {
	Name        string   `json:"name" yaml:"name"`
	Scope       string   `json:"scope" yaml:"scope"`
	Path        string   `json:"path" yaml:"path"`
	Status      string   `json:"status" yaml:"status"`
	Version     string   `json:"version,omitempty" yaml:"version,omitempty"`
	Isolation   string   `json:"isolation,omitempty" yaml:"isolation,omitempty"`
	Tags        []string `json:"tags,omitempty" yaml:"tags,omitempty"`
	Category    string   `json:"category,omitempty" yaml:"category,omitempty"`
	Platforms   []string `json:"platforms,omitempty" yaml:"platforms,omitempty"`
	Description string   `json:"description,omitempty" yaml:"description,omitempty"`
	Error       string   `json:"error,omitempty" yaml:"error,omitempty"`
}

const (
	statusOK       = "ok"
	statusShadowed = "shadowed"
	statusInvalid  = "invalid"
)

func toolListAction(c *cli.Context) error {
	args, err := toolArgs(c)
	if err != nil {
		return err
	}
	if len(args) > 0 {
		return usageError(fmt.Errorf("tool list: unexpected argument %q (filters are flags: --tag, --category, --platform)", args[0]))
	}
	format, err := checkFormat(c, "table", "json", "yaml")
	if err != nil {
		return err
	}
	scope, err := readScope(c)
	if err != nil {
		return err
	}
	entries, err := scopes().List(scope)
	if err != nil {
		return err
	}
	items := []toolListItem{}
	var broken []toolListItem
	for _, e := range entries {
		it := toolListItem{Name: e.Name, Scope: string(e.Scope), Path: e.Path}
		if e.Err != nil {
			it.Status, it.Error = statusInvalid, e.Err.Error()
			items = append(items, it)
			broken = append(broken, it)
			continue
		}
		d := e.Def
		if !matchesFilters(c, d) {
			continue
		}
		it.Status = statusOK
		if e.Shadowed {
			it.Status = statusShadowed
		}
		it.Version, it.Isolation, it.Description = d.Version, string(d.Security.Isolation), d.Description
		it.Tags, it.Platforms = allTags(d), d.Platforms
		if d.Metadata != nil {
			it.Category = d.Metadata.Category
		}
		if d.Type == "alias" {
			it.Description = fmt.Sprintf("alias of %s: %s", d.BaseTool, d.Description)
		}
		items = append(items, it)
	}

	switch {
	case c.Bool("quiet"):
		for _, it := range items {
			if it.Status != statusInvalid {
				fmt.Fprintln(c.App.Writer, it.Name)
			}
		}
	case format == "json":
		err = writeJSON(c.App.Writer, items)
	case format == "yaml":
		err = writeYAML(c.App.Writer, items)
	default:
		w := tabwriter.NewWriter(terminalSafe(c.App.Writer), 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tSCOPE\tSTATUS\tVERSION\tISOLATION\tTAGS\tDESCRIPTION")
		for _, it := range items {
			desc := truncate(it.Description, 60)
			if it.Status == statusInvalid {
				desc = truncate(firstError(errorOf(entries, it.Path)), 80)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", it.Name, it.Scope, it.Status,
				dash(it.Version), dash(it.Isolation), dash(strings.Join(it.Tags, ",")), desc)
		}
		err = w.Flush()
	}
	if err != nil {
		return err
	}
	if len(entries) == 0 && !c.Bool("quiet") {
		var dirs []string
		s := scopes()
		for _, sc := range []tool.Scope{tool.ScopeLocal, tool.ScopeUser, tool.ScopeGlobal} {
			if scope == tool.ScopeAny || scope == sc {
				dirs = append(dirs, s.Dirs[sc]...)
			}
		}
		fmt.Fprintf(c.App.ErrWriter, "sandboxed: no tool definitions in %s (hint: add one with 'sandboxed tool add' or 'sandboxed tool import FILE')\n", strings.Join(dirs, ", "))
	}
	if len(broken) > 0 {
		fmt.Fprintf(c.App.ErrWriter, "sandboxed: warning: %d tool definition(s) failed to load:\n", len(broken))
		for _, b := range broken {
			fmt.Fprintf(c.App.ErrWriter, "  %s (hint: run 'sandboxed tool validate %s')\n", b.Path, b.Path)
		}
	}
	return nil
}

func errorOf(entries []tool.Entry, path string) error {
	for _, e := range entries {
		if e.Path == path && e.Err != nil {
			return e.Err
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// allTags is a definition's tags and metadata.tags, without repeats.
func allTags(d *tool.Definition) []string {
	var out []string
	seen := map[string]bool{}
	add := func(ts []string) {
		for _, t := range ts {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	add(d.Tags)
	if d.Metadata != nil {
		add(d.Metadata.Tags)
	}
	return out
}

// matchesFilters applies --tag, --category and --platform.
func matchesFilters(c *cli.Context, d *tool.Definition) bool {
	tags := allTags(d)
	for _, want := range c.StringSlice("tag") {
		found := false
		for _, t := range tags {
			if strings.EqualFold(t, want) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if want := c.String("category"); want != "" {
		if d.Metadata == nil || !strings.EqualFold(d.Metadata.Category, want) {
			return false
		}
	}
	if want := c.String("platform"); want != "" && len(d.Platforms) > 0 {
		found := false
		for _, p := range d.Platforms {
			if strings.EqualFold(p, want) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
