package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/internal/doccheck"
)

// repoRoot is the repository, from this package's directory.
const repoRoot = "../.."

// topicPages are the pages the README links to as the documentation; each
// must exist. The README stays a front page.
var topicPages = []string{
	"docs/tools.md", "docs/permissions.md", "docs/tiers.md", "docs/mcp.md", "docs/ci.md",
	"docs/security.md", "docs/operations.md", "docs/benchmarks.md", "docs/development.md",
}

const readmeMaxLines = 300

// TestDocsCommandsParse checks every command the documentation shows
// against the CLI's own commands and flags: each `sandboxed …` line of a
// shell block is parsed by the real app (every action replaced by a
// recorder), and must reach a command that runs; each synopsis (a usage
// line, or inline code) must name commands that exist and only their
// flags; each example file it names must exist. The runnable blocks are run
// for real by the e2e suite (e2e/docs_test.go).
func TestDocsCommandsParse(t *testing.T) {
	pages, err := doccheck.Pages(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	var invocations, synopses, runnable int
	perPage := map[string]int{}
	for _, p := range pages {
		for _, b := range doccheck.Blocks(p) {
			if b.Runnable {
				runnable++
			}
			if b.Lang != "sh" {
				continue
			}
			invs, err := doccheck.Invocations(b)
			if err != nil {
				t.Error(err)
				continue
			}
			for _, inv := range invs {
				invocations++
				perPage[p.Path]++
				if err := checkInvocation(inv.Args); err != nil {
					t.Errorf("%s: %s %s: %v", inv.Where, inv.Prog, strings.Join(inv.Args, " "), err)
				}
			}
		}
		for _, s := range doccheck.Synopses(p) {
			synopses++
			perPage[p.Path]++
			if err := checkSynopsis(s.Text); err != nil {
				t.Errorf("%s: sandboxed %s: %v", s.Where, s.Text, err)
			}
		}
	}
	// The check must not pass by finding nothing: the pages hold about a
	// hundred command lines and synopses, and the README and the pages
	// that are about commands hold some each.
	if invocations < 15 || synopses < 80 || runnable < 3 {
		t.Errorf("found %d command lines, %d synopses and %d runnable blocks; the documentation has more: is the parser broken?", invocations, synopses, runnable)
	}
	for _, p := range []string{"README.md", "docs/tools.md", "docs/permissions.md", "docs/tiers.md", "docs/mcp.md", "docs/ci.md", "docs/operations.md"} {
		if perPage[p] == 0 {
			t.Errorf("%s: no command checked", p)
		}
	}
	t.Logf("checked %d command lines and %d synopses; %d runnable blocks", invocations, synopses, runnable)
}

// TestDocsPagesAndLinks checks the layout the README promises: a front
// page of at most 300 lines, the topic pages, and relative links (with
// their #anchors) that lead somewhere.
func TestDocsPagesAndLinks(t *testing.T) {
	pages, err := doccheck.Pages(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]doccheck.Page{}
	for _, p := range pages {
		byPath[p.Path] = p
	}
	if n := strings.Count(byPath["README.md"].Text, "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines; keep it at most %d and put the rest in a page of docs/", n, readmeMaxLines)
	}
	for _, tp := range topicPages {
		if _, ok := byPath[tp]; !ok {
			t.Errorf("%s is missing", tp)
		}
		if !strings.Contains(byPath["README.md"].Text, "("+tp+")") {
			t.Errorf("README.md does not link to %s", tp)
		}
	}
	links := 0
	for _, p := range pages {
		for _, l := range doccheck.Links(p) {
			links++
			if err := checkLink(p, l); err != nil {
				t.Errorf("%s: %v", l.Where, err)
			}
		}
	}
	if links < 40 {
		t.Errorf("found %d relative links; the pages have more: is the parser broken?", links)
	}
}

// TestDocsCheckerCatchesDrift is the checkers' own test: what drifts must
// be reported, what is right must pass.
func TestDocsCheckerCatchesDrift(t *testing.T) {
	for _, tc := range []struct {
		args []string
		bad  bool
	}{
		{[]string{"run", "--json", "examples/tools/hello.yaml", "NAME=Ada"}, false},
		{[]string{"tool", "get", "hello", "--format", "json"}, false},
		{[]string{"tool", "list", "--scope", "any", "-q"}, false},
		{[]string{"permissions", "explain", "--policy", "p.yaml", "x.yaml"}, false},
		{[]string{"version"}, false},
		{[]string{"--help"}, false},
		{[]string{"run", "--jsn", "x.yaml"}, true},                      // a flag that does not exist
		{[]string{"run", "x.yaml", "--json"}, true},                     // run reads no flag after the tool
		{[]string{"tool", "get", "hello", "--frmat", "json"}, true},     // the tool commands do, and check them
		{[]string{"tool", "list", "[--scope", "any]"}, true},            // a synopsis pasted as a command
		{[]string{"frobnicate"}, true},                                  // a command that does not exist
		{[]string{"tool", "lst"}, true},                                 // a subcommand that does not exist
		{[]string{"tool"}, true},                                        // a group alone runs nothing
		{[]string{"run", "examples/tools/no-such-tool.yaml"}, true},     // an example that is gone
		{[]string{"tool", "list", "--scope"}, true},                     // a flag without its value
		{[]string{"permissions", "explain", "--write", "x.yaml"}, true}, // learn's flag on explain
	} {
		err := checkInvocation(tc.args)
		if (err != nil) != tc.bad {
			t.Errorf("checkInvocation(%q) = %v, want error: %v", tc.args, err, tc.bad)
		}
	}
	for _, tc := range []struct {
		synopsis string
		bad      bool
	}{
		{"run [--json] [--policy FILE] TOOL [NAME=VALUE ...]", false},
		{"tool list|get|validate ...", false},
		{"setup --user NAME [--undo] [--json]", false},
		{"doctor [--format table|json]", false},
		{"run [--jsn] TOOL", true},
		{"tool list|fetch", true},
		{"tools list", true},
		{"gc --all", true},
	} {
		err := checkSynopsis(tc.synopsis)
		if (err != nil) != tc.bad {
			t.Errorf("checkSynopsis(%q) = %v, want error: %v", tc.synopsis, err, tc.bad)
		}
	}
	page := doccheck.Page{Path: "docs/x.md", Text: "# Title\n"}
	for _, tc := range []struct {
		link doccheck.Link
		bad  bool
	}{
		{doccheck.Link{Target: "tools.md", Anchor: "the-tool-format"}, false},
		{doccheck.Link{Target: "", Anchor: "title"}, false},
		{doccheck.Link{Target: "../policy/POLICY.md"}, false},
		{doccheck.Link{Target: "tools.md", Anchor: "no-such-section"}, true},
		{doccheck.Link{Target: "nowhere.md"}, true},
		{doccheck.Link{Target: "", Anchor: "other"}, true},
	} {
		err := checkLink(page, tc.link)
		if (err != nil) != tc.bad {
			t.Errorf("checkLink(%+v) = %v, want error: %v", tc.link, err, tc.bad)
		}
	}
}

// checkInvocation parses args as the CLI would, with every action
// replaced by a recorder, and says what is wrong: an unknown command,
// subcommand or flag, a flag without its value, a group named without a
// command, or an example file that does not exist.
func checkInvocation(args []string) error {
	for _, a := range args {
		if strings.HasPrefix(a, "[") {
			return fmt.Errorf("%q is usage syntax: a shell block holds commands as typed; put a usage line in a block without a language", a)
		}
	}
	app := newApp()
	var reached *cli.Command
	var reachedRuns bool
	var notFoundErr error
	app.Commands = recordingCommands(app.Commands, "", func(c *cli.Command, runs bool) {
		reached, reachedRuns = c, runs
	})
	app.Writer, app.ErrWriter = io.Discard, io.Discard
	app.CommandNotFound = func(_ *cli.Context, name string) {
		notFoundErr = fmt.Errorf("no command %q", name)
	}
	app.Action = nil
	helpOrVersion := false
	for _, a := range args {
		if a == "--help" || a == "-h" || a == "--version" {
			helpOrVersion = true
		}
	}
	if err := app.Run(append([]string{"sandboxed"}, args...)); err != nil {
		return err
	}
	if notFoundErr != nil {
		return notFoundErr
	}
	if helpOrVersion {
		return nil
	}
	if reached == nil {
		return errors.New("names no command")
	}
	if !reachedRuns {
		return fmt.Errorf("%q is a group: name one of its commands", reached.Name)
	}
	for _, a := range args {
		if strings.HasPrefix(a, "examples/") || strings.HasPrefix(a, "docs/") {
			if _, err := os.Stat(filepath.Join(repoRoot, a)); err != nil {
				return fmt.Errorf("names %s, which does not exist", a)
			}
		}
	}
	return nil
}

// recordingCommands copies a command tree with each action replaced by
// record, which is told whether the command runs something of its own (a
// group with no action only prints its help). Flags written after the
// arguments are checked as each command reads them: the tool commands
// parse them (toolArgs), the others would take them for arguments.
func recordingCommands(cmds []*cli.Command, parent string, record func(*cli.Command, bool)) []*cli.Command {
	out := make([]*cli.Command, 0, len(cmds))
	for _, orig := range cmds {
		c := *orig
		runs := orig.Action != nil
		c.Subcommands = recordingCommands(orig.Subcommands, orig.Name, record)
		c.Before, c.After = nil, nil
		cp := &c
		c.Action = func(ctx *cli.Context) error {
			record(cp, runs)
			if cp.SkipFlagParsing {
				return nil
			}
			if parent == "tool" {
				if _, err := toolArgs(ctx); err != nil && err != errHelpShown {
					return err
				}
				return nil
			}
			for _, a := range ctx.Args().Slice() {
				if a == "--" {
					break
				}
				if len(a) > 1 && a[0] == '-' {
					return fmt.Errorf("%s is written after the arguments, where sandboxed %s does not read flags: put it before them", a, cp.Name)
				}
			}
			return nil
		}
		out = append(out, cp)
	}
	return out
}

// synopsisFlag is a flag as a usage line writes it, inside brackets or
// alternatives or not.
var synopsisFlag = regexp.MustCompile(`^--?[A-Za-z][A-Za-z0-9-]*$`)

// checkSynopsis checks a usage line (after "sandboxed "): its leading
// lowercase words are commands (a|b: alternatives), and every flag it
// writes is one of the named command's (or one of every alternative's).
func checkSynopsis(text string) error {
	app := newApp()
	level := app.Commands
	var named []*cli.Command
	words := strings.Fields(text)
	i := 0
	for ; i < len(words); i++ {
		w := words[i]
		if !regexp.MustCompile(`^[a-z][a-z0-9-]*(\|[a-z][a-z0-9-]*)*$`).MatchString(w) {
			break
		}
		if len(named) > 0 && len(level) == 0 {
			break // a positional value of a command without subcommands
		}
		var next []*cli.Command
		for _, alt := range strings.Split(w, "|") {
			c := findCommand(level, alt)
			if c == nil {
				return fmt.Errorf("no command %q here", alt)
			}
			next = append(next, c)
		}
		named = next
		level = nil
		if len(next) == 1 {
			level = subcommands(next[0])
		}
	}
	if len(named) == 0 {
		return errors.New("names no command")
	}
	for _, w := range words[i:] {
		for _, part := range strings.Split(strings.Trim(w, "[](),.;:"), "|") {
			part = strings.Trim(part, "[]")
			name, _, _ := strings.Cut(part, "=")
			if !synopsisFlag.MatchString(name) {
				continue
			}
			for _, c := range named {
				if !hasFlag(c, strings.TrimLeft(name, "-")) {
					return fmt.Errorf("%s has no flag %s", c.Name, name)
				}
			}
		}
	}
	return nil
}

// subcommands are c's own, without the help command urfave/cli adds to
// a command once it has run.
func subcommands(c *cli.Command) []*cli.Command {
	var out []*cli.Command
	for _, s := range c.Subcommands {
		if s.Name != "help" {
			out = append(out, s)
		}
	}
	return out
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func hasFlag(c *cli.Command, name string) bool {
	if name == "help" || name == "h" {
		return true
	}
	for _, f := range c.Flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}

// checkLink says whether a relative link of page leads to a file, and to a
// heading of it when it names an anchor.
func checkLink(page doccheck.Page, l doccheck.Link) error {
	target := page
	if l.Target != "" {
		rel := filepath.Join(filepath.Dir(page.Path), l.Target)
		p := filepath.Join(repoRoot, rel)
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("link to %s: %v", l.Target, err)
		}
		if l.Anchor == "" {
			return nil
		}
		if !strings.HasSuffix(p, ".md") {
			return fmt.Errorf("link to %s#%s: an anchor in a file that is not Markdown", l.Target, l.Anchor)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		target = doccheck.Page{Path: filepath.ToSlash(rel), Text: string(b)}
	}
	if l.Anchor != "" && !doccheck.Anchors(target)[l.Anchor] {
		return fmt.Errorf("link to %s#%s: %s has no such heading", l.Target, l.Anchor, target.Path)
	}
	return nil
}
