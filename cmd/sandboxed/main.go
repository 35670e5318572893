package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
)

// version is set by the linker (-X main.version=...).
var version = "dev"

func newApp() *cli.App {
	app := &cli.App{
		Name:                 "sandboxed",
		Usage:                "run agent tools in a sandbox that gives them exactly what they declared",
		Version:              version,
		EnableBashCompletion: true,
		HideHelpCommand:      true,
		Commands: []*cli.Command{
			runCommand,
			toolCommand,
			permissionsCommand,
			policyCommand,
			auditCommand,
			undoCommand,
			imagesCommand,
			doctorCommand,
			setupCommand,
			gcCommand,
			discoverCommand,
			mcpCommand,
			serveCommand,
			versionCommand,
			completionCommand,
		},
		// Usage errors exit 2, through exitCode.
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageError(err)
		},
		ExitErrHandler: func(*cli.Context, error) {}, // main decides exit codes
		CommandNotFound: func(c *cli.Context, name string) {
			notFound = usageError(fmt.Errorf("unknown command %q; run 'sandboxed --help'", name))
		},
	}
	for _, cmd := range app.Commands {
		setUsageErrors(cmd)
	}
	return app
}

// notFound is set by CommandNotFound, which cannot return an error.
var notFound error

// setUsageErrors makes every flag error of cmd and its subcommands a usage
// error (exit 2) that says what was wrong without dumping the help.
func setUsageErrors(cmd *cli.Command) {
	if cmd.OnUsageError == nil {
		cmd.OnUsageError = func(c *cli.Context, err error, _ bool) error {
			return usageError(fmt.Errorf("%s: %w (see 'sandboxed %s --help')", c.Command.FullName(), err, c.Command.FullName()))
		}
	}
	for _, sub := range cmd.Subcommands {
		setUsageErrors(sub)
	}
}

// processStart is when main began, for SANDBOXED_TRACE.
var processStart = time.Now()

func main() {
	// The same binary is the sandbox's init: re-executed as PID 1 of a new
	// pid namespace (process tier) or as a container's entrypoint.
	if sbinit.IsInit() {
		sbinit.Main()
	}
	// Whatever started sandboxed may have left descriptors open; none of
	// them may reach a sandbox, a container engine or a host command.
	sbinit.MarkInheritedCloseOnExec()
	app := newApp()
	err := app.Run(os.Args)
	if err == nil && notFound != nil {
		err = notFound
	}
	code := exitCode(err)
	if err != nil && !isSilent(err) {
		fmt.Fprintln(app.ErrWriter, "sandboxed:", err)
	}
	os.Exit(code)
}

// tuneGC trades memory for time the way one run should (not the
// long-lived mcp server): a run allocates a few megabytes and lives
// milliseconds, so collecting at the default 4 MB heap is wasted work
// (~0.4 ms a run), while the soft memory limit keeps the collector from
// letting dead copies of captured output pile up. GOGC and GOMEMLIMIT
// override both.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(48 << 20)
	}
}

var versionCommand = &cli.Command{
	Name:  "version",
	Usage: "print the version",
	Action: func(c *cli.Context) error {
		fmt.Fprintf(c.App.Writer, "sandboxed %s\n", version)
		return nil
	},
}
