package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/sandbox"
	"github.com/sandboxed-dev/sandboxed/tool"
)

var scopeFlag = &cli.StringFlag{
	Name:  "scope",
	Usage: "where to look for tools by name: local, user, global or any",
	Value: "any",
}

var policyFlag = &cli.StringFlag{
	Name:  "policy",
	Usage: "operator policy `FILE` (default: $XDG_CONFIG_HOME/sandboxed/policy.yaml, /etc/sandboxed/policy.yaml, built-in)",
}

func formatFlag(def string, allowed ...string) *cli.StringFlag {
	return &cli.StringFlag{Name: "format", Usage: fmt.Sprintf("output format: %v", allowed), Value: def}
}

// checkFormat refuses a --format value the command does not know.
func checkFormat(c *cli.Context, allowed ...string) (string, error) {
	f := c.String("format")
	for _, a := range allowed {
		if f == a {
			return f, nil
		}
	}
	return "", usageError(fmt.Errorf("--format %q: use one of %v", f, allowed))
}

// scopes is the standard layout of tool scopes for this process.
func scopes() tool.Scopes {
	cwd, _ := os.Getwd()
	return sandbox.ToolScopes(cwd, sandbox.InvokingHome())
}

// loadTool resolves TOOL (a path or a name) and, for an alias, merges it
// with its base tool.
func loadTool(c *cli.Context, arg string) (*tool.Definition, error) {
	scope, err := tool.ParseScope(c.String("scope"))
	if err != nil {
		return nil, usageError(err)
	}
	s := sandbox.ToolScopes(invocationOf(c).workDir(), sandbox.InvokingHome())
	def, err := s.Resolve(arg, scope)
	if err != nil {
		return nil, err
	}
	return s.WithBase(def)
}

// checkIsolationFlag refuses an --isolation that names no tier.
func checkIsolationFlag(c *cli.Context) error {
	if iso := c.String("isolation"); iso != "" && iso != "process" && iso != "container" && iso != "none" && iso != "landlock" {
		return usageError(fmt.Errorf("--isolation %q: use process, container, landlock or none", iso))
	}
	return nil
}

// loadPolicy finds and loads the policy in force.
func loadPolicy(c *cli.Context) (*policy.Policy, string, error) {
	home := sandbox.InvokingHome()
	path, _ := policy.Locate(c.String("policy"), os.Getenv("XDG_CONFIG_HOME"), home)
	p, err := policy.LoadLocated(path)
	if err != nil {
		return nil, "", err
	}
	return p, path, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func writeYAML(w io.Writer, v any) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	defer enc.Close()
	return enc.Encode(v)
}
