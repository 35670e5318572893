package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// toolTestCommand is `sandboxed tool test`: it runs the tests: section of a
// definition, each case in its own sandbox and scratch directory.
var toolTestCommand = &cli.Command{
	Name:      "test",
	Usage:     "run a tool's tests (its tests: section), each case in its own sandbox",
	ArgsUsage: "TOOL",
	Description: `Each case runs in a fresh scratch directory, which is its working directory:
the suite's setup commands run there first (in a sandbox that may write only
that directory), then the tool with the case's parameters, then the
assertions (output and files, relative to the scratch directory), then the
case's and the suite's cleanup commands, whatever happened.

Exit status: 0 when every case passed, 1 when one failed, 2 on usage errors.`,
	Flags: append([]cli.Flag{
		&cli.StringFlag{Name: "test", Usage: "run only the test `NAME`"},
		&cli.StringFlag{Name: "junit", Usage: "also write a JUnit XML report to `FILE`"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "show every case's output"},
		&cli.BoolFlag{Name: "json", Usage: "print the suite result as JSON"},
		scopeFlag,
		policyFlag,
		&cli.StringFlag{Name: "isolation", Usage: "override the tier for the tool's runs: process, container or none"},
		&cli.StringSliceFlag{Name: "approve", Usage: "approve `WHAT` the policy asks approval for"},
	}, clusterFlags()...),
	Action: toolTestAction,
}

// init registers `tool test` under the tool command group, unless the
// group lists it already.
func init() {
	for _, sub := range toolCommand.Subcommands {
		if sub == toolTestCommand {
			return
		}
	}
	toolCommand.Subcommands = append(toolCommand.Subcommands, toolTestCommand)
}

func toolTestAction(c *cli.Context) error {
	// Flags may follow TOOL, as the spec writes them.
	args, err := toolArgs(c)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return usageError(errors.New("tool test: give one TOOL; usage: sandboxed tool test TOOL [--test NAME] [--junit FILE] [--verbose]"))
	}
	def, err := loadTool(c, args[0])
	if err != nil {
		return err
	}
	pol, polPath, err := loadPolicy(c)
	if err != nil {
		return err
	}
	if err := checkIsolationFlag(c); err != nil {
		return err
	}
	where, err := clusterChoice()
	if err != nil {
		return err
	}
	w, ew := c.App.Writer, c.App.ErrWriter
	req := &sandbox.SuiteRequest{
		Cluster: where,
		Def:     def, Only: c.String("test"), Policy: pol, PolicyFile: polPath,
		Isolation: c.String("isolation"), Approvals: c.StringSlice("approve"), Egress: newEgressStarter(),
	}
	if isTerminal(os.Stderr) && !c.Bool("json") {
		req.Progress = func(cr *sandbox.CaseResult, done bool) {
			if !done {
				fmt.Fprintf(ew, "RUN   %s ...\r", cr.Name)
			} else {
				fmt.Fprintf(ew, "\r\033[K")
			}
		}
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	res, err := newController().RunSuite(ctx, req)
	if err != nil {
		if errors.Is(err, sandbox.ErrNoTests) && c.String("test") != "" {
			return usageError(err)
		}
		return err
	}
	if c.Bool("json") {
		if err := writeJSON(w, res); err != nil {
			return err
		}
	} else {
		writeTestReport(w, res, c.Bool("verbose"))
	}
	if path := c.String("junit"); path != "" {
		if err := writeJUnitFile(path, res); err != nil {
			return fmt.Errorf("write JUnit report %s: %w", path, err)
		}
	}
	if res.Failed > 0 {
		return exitWith(exitFailure)
	}
	return nil
}

// writeTestReport prints PASS/FAIL per case, the failing assertions with a
// snippet of the output, and a summary line.
func writeTestReport(w io.Writer, res *sandbox.SuiteResult, verbose bool) {
	for i := range res.Cases {
		cr := &res.Cases[i]
		verdict := "PASS"
		if !cr.Passed {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "%s  %s (%.2fs)\n", verdict, cr.Name, float64(cr.DurationMS)/1000)
		for _, f := range cr.Failures {
			fmt.Fprintf(w, "      %s\n", f)
		}
		if cr.Run != nil {
			for _, warn := range cr.Run.Warnings {
				fmt.Fprintf(w, "      warning: %s\n", warn)
			}
		}
		if !cr.Passed && cr.Run != nil {
			fmt.Fprintf(w, "      output: %s\n", sandbox.Snippet(cr.Output()))
		}
		if verbose && cr.Run != nil {
			fmt.Fprintf(w, "      status %s, exit %d\n", cr.Run.Status, cr.Run.ProcessExitCode())
			if out := strings.TrimRight(cr.Output(), "\n"); out != "" {
				fmt.Fprintf(w, "      | %s\n", strings.ReplaceAll(out, "\n", "\n      | "))
			}
		}
	}
	fmt.Fprintf(w, "%s: %d passed, %d failed (%.2fs)\n", res.Tool, res.Passed, res.Failed, float64(res.DurationMS)/1000)
}

// JUnit XML, the shape CI systems read.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func junitReport(res *sandbox.SuiteResult) *junitSuites {
	s := junitSuite{Name: res.Tool, Tests: len(res.Cases), Failures: res.Failed, Time: secs(res.DurationMS)}
	for i := range res.Cases {
		cr := &res.Cases[i]
		jc := junitCase{Name: cr.Name, Classname: res.Tool, Time: secs(cr.DurationMS), SystemOut: xmlSafe(cr.Output())}
		if !cr.Passed {
			msg := "failed"
			if len(cr.Failures) > 0 {
				msg = cr.Failures[0]
			}
			jc.Failure = &junitFailure{Message: xmlSafe(msg), Type: "assertion", Text: xmlSafe(strings.Join(cr.Failures, "\n"))}
		}
		s.Cases = append(s.Cases, jc)
	}
	return &junitSuites{Suites: []junitSuite{s}}
}

func writeJUnitFile(path string, res *sandbox.SuiteResult) error {
	data, err := xml.MarshalIndent(junitReport(res), "", "  ")
	if err != nil {
		return err
	}
	data = append([]byte(xml.Header), append(data, '\n')...)
	return os.WriteFile(path, data, 0o644)
}

func secs(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }

// xmlSafe drops characters XML 1.0 cannot carry (tool output may hold any
// byte), so the report always parses.
func xmlSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r == 0xFFFE, r == 0xFFFF:
			return -1
		case r >= 0xD800 && r <= 0xDFFF:
			return -1
		}
		return r
	}, s)
}
