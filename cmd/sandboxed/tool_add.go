package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/sandboxed-dev/sandboxed/internal/units"
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
                           --bash/--cmd/--pwsh/--run/--script to give it one.
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

// addFlag is one flag of `tool add`. An empty arg marks a boolean flag
// that takes an optional true|false.
type addFlag struct {
	name, arg, category, usage string
	apply                      func(p *addParser, v string) error
}

const (
	catExec     = "Execution"
	catStep     = "Steps (apply to the last --step)"
	catParam    = "Parameters"
	catEnv      = "Environment"
	catSecurity = "Security"
	catFunc     = "Function calling"
	catPaths    = "File paths"
	catMeta     = "Metadata"
	catRes      = "Resources"
	catDeps     = "Dependencies"
	catDebug    = "Debugging"
	catInter    = "Interactive"
	catVersion  = "Versions"
	catTests    = "Tests (apply to the last --test)"
	catWrite    = "Where to write"
)

var addFlags []addFlag

func init() {
	addFlags = []addFlag{
		{"description", "DESC", catExec, "what the tool does (required)", func(p *addParser, v string) error { p.def.Description = v; return nil }},
		{"bash", "COMMAND", catExec, "bash command to run", execSetter(tool.ExecBash)},
		{"cmd", "COMMAND", catExec, "Windows CMD command to run", execSetter(tool.ExecCmd)},
		{"pwsh", "COMMAND", catExec, "PowerShell command to run", execSetter(tool.ExecPwsh)},
		{"run", "COMMAND", catExec, "command to run directly, without a shell", execSetter(tool.ExecRun)},
		{"script", "SCRIPT", catExec, "script content (with --shell)", execSetter(tool.ExecScript)},
		{"shell", "SHELL", catExec, "shell that runs --script", (*addParser).setShell},
		{"platform", "PLATFORM", catExec, "supported platform: windows, linux, macos (repeatable)", func(p *addParser, v string) error {
			p.def.Platforms = append(p.def.Platforms, v)
			return nil
		}},
		{"timeout", "MS", catExec, "time limit of the tool", func(p *addParser, v string) error { return p.duration("--timeout", v, &p.def.Timeout) }},
		{"working-directory", "DIR", catExec, "working directory", func(p *addParser, v string) error { p.def.WorkingDirectory = v; return nil }},
		{"input", "INPUT", catExec, "data passed on stdin", func(p *addParser, v string) error { p.def.Input = v; return nil }},

		{"step", "NAME", catStep, `a step: --step NAME "COMMAND" or --step NAME=COMMAND (repeatable)`, (*addParser).addStep},
		{"continue-on-error", "", catStep, "go on with the next step if this one fails", stepBool(func(s *tool.Step, b bool) { s.ContinueOnError = b })},
		{"run-condition", "CONDITION", catStep, "run the step only if CONDITION holds", stepStr(func(s *tool.Step, v string) { s.RunCondition = v })},
		{"parallel", "", catStep, "run the step in parallel with the previous ones", stepBool(func(s *tool.Step, b bool) { s.Parallel = b })},
		{"wait-for", "STEP1,STEP2", catStep, "steps to wait for", stepStr(func(s *tool.Step, v string) {
			for _, w := range strings.Split(v, ",") {
				if w = strings.TrimSpace(w); w != "" {
					s.WaitFor = append(s.WaitFor, w)
				}
			}
		})},
		{"retry-attempts", "N", catStep, "number of attempts", (*addParser).retryAttempts},
		{"retry-delay", "MS", catStep, "delay between attempts", (*addParser).retryDelay},
		{"fallback", "COMMAND", catStep, "command to run if the step fails", stepStr(func(s *tool.Step, v string) { errorHandling(s).Fallback = v })},
		{"output-mode", "MODE", catStep, "buffer or stream", stepStr(func(s *tool.Step, v string) { stepOutput(s).Mode = tool.OutputMode(v) })},
		{"buffer-limit", "SIZE", catStep, "most output kept", (*addParser).bufferLimit},
		{"use-tool", "TOOL", catStep, "run another tool as this step", stepStr(func(s *tool.Step, v string) { s.UseTool = v })},
		{"with", "KEY=VALUE", catStep, "a parameter for --use-tool (repeatable)", (*addParser).with},

		{"parameter", "NAME", catParam, `a parameter: --parameter NAME "DESC" [KEY=VALUE...] (repeatable)`, (*addParser).addParameter},

		{"env", "NAME=VALUE", catEnv, "an environment variable (repeatable)", (*addParser).env},
		{"inherit-env", "", catEnv, "inherit the caller's environment", func(p *addParser, v string) error {
			return p.boolean("--inherit-env", v, func(b bool) { environment(p.def).Inherit = b })
		}},

		{"security-privilege", "LEVEL", catSecurity, "same-as-user, reduced or elevated", func(p *addParser, v string) error {
			p.def.Security.ExecutionPrivilege = tool.Privilege(v)
			return nil
		}},
		{"security-isolation", "MODE", catSecurity, "none, process or container", func(p *addParser, v string) error {
			p.def.Security.Isolation = tool.Isolation(v)
			return nil
		}},
		{"security-permission", "PERM", catSecurity, "a required permission, e.g. filesystem:write:{DIR} (repeatable)", func(p *addParser, v string) error {
			p.def.Security.RequiredPermissions = append(p.def.Security.RequiredPermissions, v)
			return nil
		}},
		{"security-justification", "TEXT", catSecurity, "why the tool needs its permissions", func(p *addParser, v string) error {
			p.def.Security.Justification = v
			return nil
		}},
		{"security-logging-enabled", "", catSecurity, "log runs", func(p *addParser, v string) error {
			return p.boolean("--security-logging-enabled", v, func(b bool) { logging(p.def).Enabled = b })
		}},
		{"security-logging-level", "LEVEL", catSecurity, "debug, info, warning or error", func(p *addParser, v string) error { logging(p.def).Level = v; return nil }},
		{"security-logging-include-params", "", catSecurity, "log parameter values", func(p *addParser, v string) error {
			return p.boolean("--security-logging-include-params", v, func(b bool) { logging(p.def).IncludeParameters = b })
		}},
		{"security-logging-sensitive-param", "NAME", catSecurity, "a parameter masked in logs (repeatable)", func(p *addParser, v string) error {
			lg := logging(p.def)
			lg.SensitiveParameters = append(lg.SensitiveParameters, v)
			return nil
		}},
		{"security-auditing-enabled", "", catSecurity, "audit runs", func(p *addParser, v string) error {
			return p.boolean("--security-auditing-enabled", v, func(b bool) { auditing(p.def).Enabled = b })
		}},
		{"security-auditing-record-command", "", catSecurity, "record the command run", func(p *addParser, v string) error {
			return p.boolean("--security-auditing-record-command", v, func(b bool) { auditing(p.def).RecordCommand = b })
		}},
		{"security-auditing-record-output", "", catSecurity, "record the output", func(p *addParser, v string) error {
			return p.boolean("--security-auditing-record-output", v, func(b bool) { auditing(p.def).RecordOutput = b })
		}},
		{"security-auditing-retention", "PERIOD", catSecurity, "how long audit records are kept, e.g. 30d", func(p *addParser, v string) error {
			return p.duration("--security-auditing-retention", v, &auditing(p.def).RetentionPeriod)
		}},

		{"function-param-mapping", "TYPE=JSON_TYPE", catFunc, "map a parameter type to a JSON Schema type (repeatable)", (*addParser).paramMapping},
		{"function-include-descriptions", "", catFunc, "include descriptions in the schema", func(p *addParser, v string) error {
			return p.boolean("--function-include-descriptions", v, func(b bool) { schemaGen(p.def).IncludeDescriptions = &b })
		}},
		{"function-include-defaults", "", catFunc, "include defaults in the schema", func(p *addParser, v string) error {
			return p.boolean("--function-include-defaults", v, func(b bool) { schemaGen(p.def).IncludeDefaults = &b })
		}},
		{"function-example-generation", "", catFunc, "include examples in the schema", func(p *addParser, v string) error {
			return p.boolean("--function-example-generation", v, func(b bool) { schemaGen(p.def).ExampleGeneration = &b })
		}},

		{"file-paths-normalize", "", catPaths, "normalise file paths", func(p *addParser, v string) error {
			return p.boolean("--file-paths-normalize", v, func(b bool) { filePaths(p.def).Normalize = b })
		}},
		{"file-paths-working-dir", "DIR", catPaths, "working directory for file paths", func(p *addParser, v string) error {
			filePaths(p.def).WorkingDirectory = v
			return nil
		}},
		{"file-paths-temp-dir", "DIR", catPaths, "temporary directory", func(p *addParser, v string) error { filePaths(p.def).TempDirectory = v; return nil }},
		{"file-paths-auto-convert", "", catPaths, "convert path separators", func(p *addParser, v string) error {
			return p.boolean("--file-paths-auto-convert", v, func(b bool) {
				fp := filePaths(p.def)
				if fp.CrossPlatform == nil {
					fp.CrossPlatform = &tool.CrossPlatform{}
				}
				fp.CrossPlatform.AutoConvert = b
			})
		}},

		{"tag", "TAG", catMeta, "a tag (repeatable)", func(p *addParser, v string) error { p.def.Tags = append(p.def.Tags, v); return nil }},
		{"category", "CATEGORY", catMeta, "metadata.category", func(p *addParser, v string) error { metadata(p.def).Category = v; return nil }},
		{"subcategory", "SUBCATEGORY", catMeta, "metadata.subcategory", func(p *addParser, v string) error { metadata(p.def).Subcategory = v; return nil }},
		{"search-keyword", "KEYWORD", catMeta, "a search keyword (repeatable)", func(p *addParser, v string) error {
			md := metadata(p.def)
			md.SearchKeywords = append(md.SearchKeywords, v)
			return nil
		}},

		{"resource-timeout", "MS", catRes, "resources.timeout", func(p *addParser, v string) error {
			return p.duration("--resource-timeout", v, &resources(p.def).Timeout)
		}},
		{"resource-max-memory", "SIZE", catRes, "memory limit, e.g. 512MB", func(p *addParser, v string) error {
			return p.size("--resource-max-memory", v, &resources(p.def).MaxMemory)
		}},
		{"resource-cleanup", "COMMAND", catRes, "a cleanup command (repeatable)", func(p *addParser, v string) error {
			r := resources(p.def)
			if r.Cleanup == nil {
				r.Cleanup = &tool.Cleanup{}
			}
			r.Cleanup.FinalCommands = append(r.Cleanup.FinalCommands, v)
			return nil
		}},

		{"dependency", "TOOL", catDeps, "a tool this one needs: --dependency TOOL [version=V] [required=B] [scope=S] (repeatable)", (*addParser).addDependency},

		{"debugging-verbose", "", catDebug, "verbose output", func(p *addParser, v string) error {
			return p.boolean("--debugging-verbose", v, func(b bool) { debugging(p.def).Verbose = b })
		}},
		{"debugging-dry-run", "", catDebug, "show commands without running them", func(p *addParser, v string) error {
			return p.boolean("--debugging-dry-run", v, func(b bool) { debugging(p.def).DryRun = b })
		}},
		{"debugging-log-file", "PATH", catDebug, "log file", func(p *addParser, v string) error { debugging(p.def).LogFile = v; return nil }},

		{"interactive", "", catInter, "the tool reads from its user", func(p *addParser, v string) error {
			return p.boolean("--interactive", v, func(b bool) { p.def.Interactive = b })
		}},
		{"interactive-timeout", "MS", catInter, "time to wait for input", func(p *addParser, v string) error {
			return p.duration("--interactive-timeout", v, &interactive(p.def).Timeout)
		}},
		{"interactive-default", "RESPONSE", catInter, "response when no input comes", func(p *addParser, v string) error {
			interactive(p.def).DefaultResponse = v
			return nil
		}},

		{"version", "VERSION", catVersion, "tool version", func(p *addParser, v string) error { p.def.Version = v; return nil }},
		{"min-cycod-version", "VERSION", catVersion, "minimum CYCOD version", func(p *addParser, v string) error { p.def.MinCycodVersion = v; return nil }},
		{"changelog-version", "VERSION", catVersion, "start a changelog entry", func(p *addParser, v string) error {
			p.def.Changelog = append(p.def.Changelog, tool.Change{Version: v})
			return nil
		}},
		{"changelog-changes", "TEXT", catVersion, "the changes of the last --changelog-version", (*addParser).changelogChanges},

		{"test", "NAME", catTests, `a test: --test NAME "DESC" (repeatable)`, (*addParser).addTest},
		{"test-param", "NAME=VALUE", catTests, "a test parameter (repeatable)", (*addParser).testParam},
		{"test-expect-exit-code", "CODE", catTests, "expected exit code", (*addParser).testExitCode},
		{"test-expect-contains", "TEXT", catTests, "text the output must contain (repeatable)", testSetter(func(tc *tool.TestCase, v string) {
			tc.Expected.OutputContains = append(tc.Expected.OutputContains, v)
		})},
		{"test-expect-file-exists", "PATH", catTests, "a file that must exist afterwards (repeatable)", testSetter(func(tc *tool.TestCase, v string) {
			tc.Expected.FileExists = append(tc.Expected.FileExists, v)
		})},
		{"test-cleanup", "COMMAND", catTests, "a cleanup command (repeatable)", testSetter(func(tc *tool.TestCase, v string) {
			tc.Cleanup = append(tc.Cleanup, v)
		})},

		{"from-file", "PATH", catWrite, "start from the definition in PATH", func(*addParser, string) error { return nil }}, // read before the other flags
		{"scope", "SCOPE", catWrite, "local, user or global (default local)", func(p *addParser, v string) error { p.scope = v; return nil }},
		{"overwrite", "", catWrite, "replace an existing tool of that name", func(p *addParser, v string) error {
			return p.boolean("--overwrite", v, func(b bool) { p.overwrite = b })
		}},
		{"dry-run", "", catWrite, "print the definition; write nothing", func(p *addParser, v string) error {
			return p.boolean("--dry-run", v, func(b bool) { p.dryRun = b })
		}},
		{"editor", "", catWrite, "not supported: write a file and use 'sandboxed tool import'", func(*addParser, string) error {
			return usageError(errors.New("tool add: --editor is not supported (hint: write the YAML in your editor and run 'sandboxed tool import FILE')"))
		}},
	}
	toolAddCommand.Flags = addHelpFlags()
}

// addHelpFlags renders addFlags as urfave flags, for the help.
func addHelpFlags() []cli.Flag {
	var out []cli.Flag
	for _, f := range addFlags {
		if f.arg == "" {
			out = append(out, &cli.BoolFlag{Name: f.name, Category: f.category, Usage: f.usage + " [true|false]"})
			continue
		}
		usage := f.usage
		if strings.Contains(usage, f.arg) {
			usage = strings.Replace(usage, f.arg, "`"+f.arg+"`", 1)
		} else {
			usage = "`" + f.arg + "`: " + usage
		}
		out = append(out, &cli.StringFlag{Name: f.name, Category: f.category, Usage: usage})
	}
	return out
}

func findAddFlag(name string) *addFlag {
	for i := range addFlags {
		if addFlags[i].name == name {
			return &addFlags[i]
		}
	}
	return nil
}

// addParser holds the state of parsing `tool add` arguments.
type addParser struct {
	args []string
	i    int // next token

	name              string
	def               *tool.Definition
	step, test        int // index of the last --step, --test; -1 if none
	topExec           bool
	scope             string
	cur               string // the flag being applied
	overwrite, dryRun bool
	fromFile          string
}

var stepNameRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// next consumes and returns the next token when it is a value (does not
// start with "--").
func (p *addParser) next() (string, bool) {
	if p.i < len(p.args) && !strings.HasPrefix(p.args[p.i], "--") {
		p.i++
		return p.args[p.i-1], true
	}
	return "", false
}

// option consumes the next token when it is a KEY=VALUE option.
func (p *addParser) option() (key, val string, ok bool, err error) {
	if p.i >= len(p.args) || strings.HasPrefix(p.args[p.i], "-") {
		return "", "", false, nil
	}
	tok := p.args[p.i]
	k, v, found := strings.Cut(tok, "=")
	if !found {
		return "", "", false, usageError(fmt.Errorf("tool add: %q is not a KEY=VALUE option (the tool NAME goes first: sandboxed tool add NAME ...)", tok))
	}
	p.i++
	return k, v, true, nil
}

func parseAddArgs(args []string) (*addParser, error) {
	p := &addParser{args: args, step: -1, test: -1, scope: "local", def: &tool.Definition{}}
	// --from-file is read first, so every other flag applies on top.
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--from-file" && i+1 < len(args) {
			p.fromFile = args[i+1]
		} else if v, ok := strings.CutPrefix(a, "--from-file="); ok {
			p.fromFile = v
		}
	}
	if p.fromFile != "" {
		def, err := tool.Load(p.fromFile, tool.ScopePath)
		if err != nil {
			return nil, err
		}
		d := *def
		d.Source, d.Pos = tool.Source{}, tool.DefPositions{}
		p.def = &d
		p.name = d.Name
		p.step = len(d.Steps) - 1
	}
	nameGiven := false
	for p.i < len(p.args) {
		tok := p.args[p.i]
		p.i++
		if tok == "-h" || tok == "--help" {
			return nil, errHelpShown
		}
		if !strings.HasPrefix(tok, "--") {
			if nameGiven {
				return nil, usageError(fmt.Errorf("tool add: unexpected argument %q (the tool NAME was %q; quote values with spaces)", tok, p.name))
			}
			p.name, nameGiven = tok, true
			continue
		}
		flagName, val, hasVal := strings.Cut(tok[2:], "=")
		f := findAddFlag(flagName)
		if f == nil {
			return nil, usageError(fmt.Errorf("tool add: unknown flag --%s (see 'sandboxed tool add --help')", flagName))
		}
		if f.arg == "" {
			if !hasVal && p.i < len(p.args) {
				if _, err := strconv.ParseBool(p.args[p.i]); err == nil {
					val, hasVal = p.args[p.i], true
					p.i++
				}
			}
			if !hasVal {
				val = "true"
			}
		} else if !hasVal {
			if p.i >= len(p.args) {
				return nil, usageError(fmt.Errorf("tool add: --%s needs a value (%s)", flagName, f.arg))
			}
			val = p.args[p.i]
			p.i++
		}
		p.cur = flagName
		if err := f.apply(p, val); err != nil {
			return nil, err
		}
	}
	if !nameGiven && p.fromFile == "" {
		return nil, usageError(errors.New("tool add: which name? usage: sandboxed tool add NAME --description DESC [options]"))
	}
	if p.fromFile == "" && p.def.Description == "" {
		return nil, usageError(fmt.Errorf("tool add %s: --description is required (what the tool does; agents read it)", p.name))
	}
	p.def.Name = p.name
	return p, nil
}

// execSetter gives the last --step its command when it has none yet,
// and the tool its command otherwise.
func execSetter(kind tool.ExecKind) func(p *addParser, v string) error {
	return func(p *addParser, v string) error {
		ex := &tool.Exec{Kind: kind, Command: v}
		if p.step >= 0 && p.def.Steps[p.step].Exec == nil && p.def.Steps[p.step].UseTool == "" {
			p.def.Steps[p.step].Exec = ex
			return nil
		}
		if p.topExec {
			return usageError(fmt.Errorf("tool add: --%s: the tool already has a command; give one of --bash, --cmd, --pwsh, --run, --script (or use --step for several)", kind))
		}
		p.def.Exec, p.def.Commands, p.topExec = ex, nil, true
		return nil
	}
}

func (p *addParser) setShell(v string) error {
	if p.step >= 0 {
		if ex := p.def.Steps[p.step].Exec; ex != nil && ex.Kind == tool.ExecScript {
			ex.Shell = v
			return nil
		}
	}
	if p.def.Exec != nil && p.def.Exec.Kind == tool.ExecScript {
		p.def.Exec.Shell = v
		return nil
	}
	return usageError(errors.New("tool add: --shell goes with --script; give --script first"))
}

func (p *addParser) addStep(v string) error {
	name, cmd, hasCmd := v, "", false
	if k, c, ok := strings.Cut(v, "="); ok && stepNameRe.MatchString(k) {
		name, cmd, hasCmd = k, c, true
	} else if c, ok := p.next(); ok {
		cmd, hasCmd = c, true
	}
	st := tool.Step{Name: name}
	if hasCmd {
		st.Exec = &tool.Exec{Kind: tool.ExecBash, Command: cmd}
	}
	p.def.Steps = append(p.def.Steps, st)
	p.step = len(p.def.Steps) - 1
	return nil
}

func (p *addParser) lastStep(flag string) (*tool.Step, error) {
	if p.step < 0 {
		return nil, usageError(fmt.Errorf("tool add: --%s applies to the last --step; give a --step first", flag))
	}
	return &p.def.Steps[p.step], nil
}

func stepStr(set func(*tool.Step, string)) func(*addParser, string) error {
	return func(p *addParser, v string) error {
		s, err := p.lastStep(p.flagName())
		if err != nil {
			return err
		}
		set(s, v)
		return nil
	}
}

func stepBool(set func(*tool.Step, bool)) func(*addParser, string) error {
	return func(p *addParser, v string) error {
		s, err := p.lastStep(p.flagName())
		if err != nil {
			return err
		}
		return p.boolean("--"+p.flagName(), v, func(b bool) { set(s, b) })
	}
}

// flagName is the name of the flag being applied.
func (p *addParser) flagName() string { return p.cur }

func errorHandling(s *tool.Step) *tool.ErrorHandling { return ensure(&s.ErrorHandling) }

func retry(s *tool.Step) *tool.Retry {
	eh := errorHandling(s)
	if eh.Retry == nil {
		eh.Retry = &tool.Retry{Attempts: 1}
	}
	return eh.Retry
}

func stepOutput(s *tool.Step) *tool.Output { return ensure(&s.Output) }

func (p *addParser) retryAttempts(v string) error {
	s, err := p.lastStep("retry-attempts")
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return usageError(fmt.Errorf("tool add: --retry-attempts %q: give a whole number of attempts, 1 or more", v))
	}
	retry(s).Attempts = n
	return nil
}

func (p *addParser) retryDelay(v string) error {
	s, err := p.lastStep("retry-delay")
	if err != nil {
		return err
	}
	return p.duration("--retry-delay", v, &retry(s).Delay)
}

func (p *addParser) bufferLimit(v string) error {
	s, err := p.lastStep("buffer-limit")
	if err != nil {
		return err
	}
	return p.size("--buffer-limit", v, &stepOutput(s).BufferLimit)
}

func (p *addParser) with(v string) error {
	s, err := p.lastStep("with")
	if err != nil {
		return err
	}
	return setPair(&s.With, v, "--with", "KEY=VALUE", false)
}

// setPair stores the KEY=VALUE of flag into *m (made when nil); form is
// how the flag's help writes it. needValue refuses an empty VALUE.
func setPair(m *map[string]string, v, flag, form string, needValue bool) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" || (needValue && val == "") {
		return usageError(fmt.Errorf("tool add: %s %q: write %s", flag, v, form))
	}
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[k] = val
	return nil
}

// paramOptions are the KEY=VALUE options of --parameter.
var paramOptions = []string{"type", "required", "default", "validation-min", "validation-max", "validation-pattern",
	"transform", "format", "example", "escape-shell", "detailed-help"}

func (p *addParser) addParameter(v string) error {
	name, desc, split := strings.Cut(v, "=")
	if !split || !stepNameRe.MatchString(name) {
		name = v
		d, ok := p.next()
		if !ok {
			return usageError(fmt.Errorf(`tool add: --parameter %s needs a description: --parameter %s "DESC" [KEY=VALUE...]`, v, v))
		}
		desc = d
	}
	opts := map[string]string{}
	var examples []string
	for {
		k, val, ok, err := p.option()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if !inStrings(paramOptions, k) {
			return usageError(fmt.Errorf("tool add: --parameter %s: unknown option %q (options: %s)", name, k, strings.Join(paramOptions, ", ")))
		}
		if k == "example" {
			examples = append(examples, val)
			continue
		}
		opts[k] = val
	}
	prm := tool.Parameter{Name: name, Description: desc, Type: tool.TypeString}
	if t, ok := opts["type"]; ok {
		prm.Type = tool.ParamType(t)
	}
	what := "--parameter " + name
	if s, ok := opts["required"]; ok {
		b, err := parseBoolValue(what+" required", s)
		if err != nil {
			return err
		}
		prm.Required = b
	}
	if s, ok := opts["default"]; ok {
		d, err := typedValue(prm.Type, s)
		if err != nil {
			return usageError(fmt.Errorf("tool add: %s default %q: %w", name, s, err))
		}
		prm.Default, prm.HasDefault = d, true
	}
	for _, k := range []string{"validation-min", "validation-max"} {
		if s, ok := opts[k]; ok {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return usageError(fmt.Errorf("tool add: %s %s %q: give a number", what, k, s))
			}
			if prm.Validation == nil {
				prm.Validation = &tool.Validation{}
			}
			if k == "validation-min" {
				prm.Validation.Minimum = &f
			} else {
				prm.Validation.Maximum = &f
			}
		}
	}
	if s, ok := opts["validation-pattern"]; ok {
		if prm.Validation == nil {
			prm.Validation = &tool.Validation{}
		}
		prm.Validation.Pattern = s
	}
	prm.Transform, prm.Format, prm.DetailedHelp = opts["transform"], opts["format"], opts["detailed-help"]
	for _, e := range examples {
		x, err := typedValue(prm.Type, e)
		if err != nil {
			return usageError(fmt.Errorf("tool add: %s example %q: %w", name, e, err))
		}
		prm.Examples = append(prm.Examples, x)
	}
	if s, ok := opts["escape-shell"]; ok {
		b, err := parseBoolValue(what+" escape-shell", s)
		if err != nil {
			return err
		}
		prm.EscapeShell = &b
	}
	for i := range p.def.Parameters {
		if p.def.Parameters[i].Name == name {
			p.def.Parameters[i] = prm // --from-file: replace
			return nil
		}
	}
	p.def.Parameters = append(p.def.Parameters, prm)
	return nil
}

// refOnly is a value that is one {REF} and nothing else.
var refOnly = regexp.MustCompile(`^\{[A-Za-z_][A-Za-z0-9_.-]*\}$`)

// typedValue reads a default or example written on the command line as a
// value of type t. A value that does not read as t but holds a {REF}
// stays text: the loader accepts it and binding checks it after
// substitution.
func typedValue(t tool.ParamType, s string) (any, error) {
	hasRef := strings.Contains(s, "{")
	switch t {
	case tool.TypeNumber:
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f, nil
		}
		if hasRef {
			return s, nil
		}
		return nil, errors.New("not a number")
	case tool.TypeBoolean:
		if b, err := strconv.ParseBool(s); err == nil {
			return b, nil
		}
		if hasRef {
			return s, nil
		}
		return nil, errors.New("not true or false")
	case tool.TypeArray, tool.TypeObject:
		if refOnly.MatchString(s) {
			return s, nil
		}
		var v any
		err := yaml.Unmarshal([]byte(s), &v)
		_, isList := v.([]any)
		_, isMap := v.(map[string]any)
		if err == nil && (t == tool.TypeArray && isList || t == tool.TypeObject && isMap) {
			return v, nil
		}
		if hasRef {
			return s, nil
		}
		return nil, fmt.Errorf("not a JSON or YAML %s", t)
	}
	return s, nil // a string, or an unknown type the loader reports
}

func inStrings(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *addParser) env(v string) error {
	return setPair(&environment(p.def).Variables, v, "--env", "NAME=VALUE", false)
}

func (p *addParser) paramMapping(v string) error {
	return setPair(&schemaGen(p.def).ParameterMapping, v, "--function-param-mapping", "TYPE=JSON_TYPE", true)
}

var depOptions = []string{"version", "required", "scope"}

func (p *addParser) addDependency(v string) error {
	dep := tool.Dependency{Tool: v, Required: true}
	for {
		k, val, ok, err := p.option()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch k {
		case "version":
			dep.Version = val
		case "scope":
			dep.Scope = val
		case "required":
			b, err := parseBoolValue("--dependency "+v+" required", val)
			if err != nil {
				return err
			}
			dep.Required = b
		default:
			return usageError(fmt.Errorf("tool add: --dependency %s: unknown option %q (options: %s)", v, k, strings.Join(depOptions, ", ")))
		}
	}
	p.def.Dependencies = append(p.def.Dependencies, dep)
	return nil
}

func (p *addParser) changelogChanges(v string) error {
	if len(p.def.Changelog) == 0 {
		return usageError(errors.New("tool add: --changelog-changes goes with --changelog-version; give that first"))
	}
	p.def.Changelog[len(p.def.Changelog)-1].Changes = v
	return nil
}

func (p *addParser) addTest(v string) error {
	tc := tool.TestCase{Name: v}
	if d, ok := p.next(); ok {
		tc.Description = d
	}
	ts := p.def.Tests
	if ts == nil {
		ts = &tool.TestSuite{}
		p.def.Tests = ts
	}
	ts.Cases = append(ts.Cases, tc)
	p.test = len(ts.Cases) - 1
	return nil
}

func (p *addParser) lastTest(flag string) (*tool.TestCase, error) {
	if p.test < 0 {
		return nil, usageError(fmt.Errorf("tool add: --%s applies to the last --test; give a --test first", flag))
	}
	return &p.def.Tests.Cases[p.test], nil
}

func testSetter(set func(*tool.TestCase, string)) func(*addParser, string) error {
	return func(p *addParser, v string) error {
		tc, err := p.lastTest(p.flagName())
		if err != nil {
			return err
		}
		set(tc, v)
		return nil
	}
}

func (p *addParser) testParam(v string) error {
	tc, err := p.lastTest("test-param")
	if err != nil {
		return err
	}
	return setPair(&tc.Parameters, v, "--test-param", "NAME=VALUE", false)
}

func (p *addParser) testExitCode(v string) error {
	tc, err := p.lastTest("test-expect-exit-code")
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return usageError(fmt.Errorf("tool add: --test-expect-exit-code %q: give a whole number", v))
	}
	tc.Expected.ExitCode = &n
	return nil
}

func (p *addParser) boolean(flag, v string, set func(bool)) error {
	b, err := parseBoolValue("tool add: "+flag, v)
	if err != nil {
		return err
	}
	set(b)
	return nil
}

func (p *addParser) duration(flag, v string, dst *time.Duration) error {
	d, err := units.ParseDuration(v)
	if err != nil {
		return usageError(fmt.Errorf("tool add: %s: %w (write %s)", flag, err, units.DurationGrammar))
	}
	*dst = d
	return nil
}

func (p *addParser) size(flag, v string, dst *int64) error {
	n, err := units.ParseSize(v)
	if err != nil {
		return usageError(fmt.Errorf("tool add: %s: %w (write %s)", flag, err, units.SizeGrammar))
	}
	*dst = n
	return nil
}

func environment(d *tool.Definition) *tool.Environment { return ensure(&d.Environment) }

func logging(d *tool.Definition) *tool.Logging { return ensure(&d.Security.Logging) }

func auditing(d *tool.Definition) *tool.Auditing { return ensure(&d.Security.Auditing) }

func schemaGen(d *tool.Definition) *tool.SchemaGeneration {
	return ensure(&ensure(&d.FunctionCalling).SchemaGeneration)
}

// ensure returns *p, first setting it to a new zero T when it is nil: the
// optional sections of a definition are made as the flags that fill them
// are applied.
func ensure[T any](p **T) *T {
	if *p == nil {
		*p = new(T)
	}
	return *p
}

func filePaths(d *tool.Definition) *tool.FilePaths { return ensure(&d.FilePaths) }

func metadata(d *tool.Definition) *tool.Metadata { return ensure(&d.Metadata) }

func resources(d *tool.Definition) *tool.Resources { return ensure(&d.Resources) }

func debugging(d *tool.Definition) *tool.Debugging { return ensure(&d.Debugging) }

func interactive(d *tool.Definition) *tool.InteractiveOptions { return ensure(&d.InteractiveOptions) }

func toolAddAction(c *cli.Context) error {
	p, err := parseAddArgs(c.Args().Slice())
	if errors.Is(err, errHelpShown) {
		showCommandHelp(c)
		return nil
	}
	if err != nil {
		return err
	}
	sc, err := tool.ParseScope(p.scope)
	if err != nil {
		return usageError(err)
	}
	if sc == tool.ScopeAny {
		return usageError(errors.New("--scope any: tool add writes to one scope; use local, user or global"))
	}
	data, err := tool.Marshal(p.def, "yaml")
	if err != nil {
		return err
	}
	label := "<generated " + p.def.Name + ".yaml>"
	parsed, err := tool.Parse(data, label)
	if err != nil {
		fmt.Fprintf(c.App.ErrWriter, "sandboxed: the definition built from the flags does not validate:\n%s", numbered(data))
		return fmt.Errorf("add tool %s: nothing written:\n%w", p.def.Name, err)
	}
	// Write what the loader read back, so the defaults it fills in
	// (isolation, privilege) are written out.
	if data, err = tool.Marshal(parsed, "yaml"); err != nil {
		return err
	}
	if p.dryRun {
		_, err := c.App.Writer.Write(data)
		return err
	}
	s := scopes()
	dir, err := s.WriteDir(sc)
	if err != nil {
		return err
	}
	dst := filepath.Join(dir, p.def.Name+".yaml")
	if err := checkNameFree(s, sc, p.def.Name, dst); err != nil {
		return err
	}
	yml := filepath.Join(dir, p.def.Name+".yml")
	_, ymlErr := os.Lstat(yml)
	if ymlErr == nil && !p.overwrite {
		return usageError(fmt.Errorf("add tool %s: write %s: %w (hint: pass --overwrite to replace it)", p.def.Name, yml, tool.ErrExists))
	}
	if err := tool.WriteAtomic(dst, data, p.overwrite); err != nil {
		return exists(fmt.Errorf("add tool %s: %w", p.def.Name, err))
	}
	if ymlErr == nil {
		// --overwrite: NAME.yaml replaces NAME.yml, which would otherwise
		// claim the same name.
		if err := os.Remove(yml); err != nil {
			return fmt.Errorf("add tool %s: remove the old %s: %w", p.def.Name, yml, err)
		}
	}
	fmt.Fprintf(c.App.Writer, "added %s to the %s scope: %s\n", p.def.Name, sc, dst)
	noteOtherScopes(c, s, p.def.Name, dst)
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
