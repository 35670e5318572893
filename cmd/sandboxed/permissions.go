package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/sandbox/explain"
	"github.com/sandboxed-dev/sandboxed/tool"
)

var permissionsCommand = &cli.Command{
	Name:  "permissions",
	Usage: "explain what a tool may do and what the policy decides; learn what it needs",
	Subcommands: []*cli.Command{
		{
			Name:      "explain",
			Usage:     "review a tool: what each permission and security field means, what enforces it, and the policy's verdict",
			ArgsUsage: "TOOL [NAME=VALUE ...]",
			Description: `For each requested permission and each security field (isolation, execution
privilege, environment, resources, seccomp, network) it says what it means,
the mechanism that enforces it, the policy's verdict with the rule behind it
(and the exact --approve flag when approval is needed), and risk notes.

Arguments are optional: permissions whose paths come from parameters that
were not given are explained from their templates. Nothing runs and nothing
on the host changes. The exit status is 0 whatever the verdict.

With --diff OLD, TOOL is the new version: it prints what TOOL gains or loses
against OLD (permissions, tier, privilege, limits, network, risks).`,
			Flags: append([]cli.Flag{
				&cli.BoolFlag{Name: "json", Usage: "print the explanation as JSON (docs/explain.schema.json)"},
				policyFlag,
				scopeFlag,
				&cli.StringFlag{Name: "diff", Usage: "compare TOOL with the `OLD` version of it: --diff OLD NEW"},
				&cli.StringSliceFlag{Name: "approve", Usage: "review as if `WHAT` were approved (the values of run --approve)"},
				&cli.StringFlag{Name: "isolation", Usage: "review the run in this tier, as run --isolation would make it: process, container, landlock or none"},
			}, clusterFlags()...),
			Action: explainAction,
		},
		learnCommand,
	},
}

func explainAction(c *cli.Context) error {
	if c.NArg() < 1 {
		return usageError(errors.New("permissions explain: which tool? usage: sandboxed permissions explain [--json] [--policy FILE] [--isolation TIER] TOOL [NAME=VALUE ...]"))
	}
	input, err := tool.ParseArgs(c.Args().Tail())
	if err != nil {
		return usageError(err)
	}
	approvals := c.StringSlice("approve")
	if err := policy.ValidateApprovals(approvals); err != nil {
		return usageError(err)
	}
	if err := checkIsolationFlag(c); err != nil {
		return err
	}
	pol, polPath, err := loadPolicy(c)
	if err != nil {
		return err
	}
	// The run explained is the one run would make: on the backend the
	// flags or SANDBOXED_BACKEND choose.
	cl, err := clusterChoice()
	if err != nil {
		return err
	}
	explainOne := func(arg string) (explain.Explanation, error) {
		def, note, err := loadForExplain(c, arg)
		if err != nil {
			return explain.Explanation{}, err
		}
		ex := explain.Tool(def, input, approvals, c.String("isolation"), pol, polPath, cl, process.HostIdentity)
		if note != "" {
			ex.Notes = append([]string{note}, ex.Notes...)
		}
		return ex, nil
	}
	ex, err := explainOne(c.Args().First())
	if err != nil {
		return err
	}
	if old := c.String("diff"); old != "" {
		oldEx, err := explainOne(old)
		if err != nil {
			return err
		}
		d := explain.Diff(oldEx, ex)
		if c.Bool("json") {
			return writeJSON(c.App.Writer, d)
		}
		renderDiff(terminalSafe(c.App.Writer), d)
		return nil
	}
	if c.Bool("json") {
		return writeJSON(c.App.Writer, ex)
	}
	renderExplanation(terminalSafe(c.App.Writer), ex)
	return nil
}

// loadForExplain is loadTool, except that an alias given as a file whose
// base tool is in none of the scopes is merged with the base tool's file
// next to it: a reviewer often has a directory of tools, not installed ones.
func loadForExplain(c *cli.Context, arg string) (*tool.Definition, string, error) {
	def, err := loadTool(c, arg)
	if err == nil {
		return def, "", nil
	}
	fi, serr := os.Stat(arg)
	if serr != nil || fi.IsDir() {
		return nil, "", err
	}
	alias, lerr := tool.Load(arg, tool.ScopePath)
	if lerr != nil || alias.Type != "alias" {
		return nil, "", err
	}
	for _, ext := range []string{".yaml", ".yml"} {
		p := filepath.Join(filepath.Dir(alias.Source.Path), alias.BaseTool+ext)
		base, berr := tool.Load(p, tool.ScopePath)
		if berr == nil && base.Name == alias.BaseTool {
			return tool.MergeAlias(alias, base), fmt.Sprintf("alias %s: base tool %s read from %s (not found in the tool scopes)", alias.Name, base.Name, p), nil
		}
	}
	return nil, "", err
}
