package tool

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sandboxed-dev/sandboxed/internal/units"
)

// `tool add` builds a definition from command-line flags. The spec's
// syntax has flags that take two values (--step NAME "COMMAND"), flags
// that modify the previous one (--retry-attempts after a --step) and
// KEY=VALUE options after --parameter, so ParseAddArgs reads the arguments
// itself; AddFlags describes the same flags for help output.

// ErrAddHelp is returned by ParseAddArgs when the arguments ask for help.
var ErrAddHelp = errors.New("tool add: help requested")

// AddRequest is what the arguments of `tool add` ask for: the definition
// they build and where to write it.
type AddRequest struct {
	// Def is the definition built from the flags, not yet validated: the
	// caller marshals it and loads the result, as a file is checked.
	Def       *Definition
	Scope     string // local, user or global (default local)
	Overwrite bool
	DryRun    bool
}

// AddFlagInfo describes one flag of `tool add` for help output. An empty
// Arg marks a boolean flag that takes an optional true|false.
type AddFlagInfo struct {
	Name, Arg, Category, Usage string
}

// AddFlags lists the flags of `tool add` in help order.
func AddFlags() []AddFlagInfo {
	out := make([]AddFlagInfo, len(addFlags))
	for i, f := range addFlags {
		out[i] = AddFlagInfo{Name: f.name, Arg: f.arg, Category: f.category, Usage: f.usage}
	}
	return out
}

// ParseAddArgs reads the arguments of `tool add` (NAME first, then flags
// in any order; see AddFlags) into a request. Malformed arguments are
// errors wrapping ErrBadArgs that say what to write instead.
func ParseAddArgs(args []string) (*AddRequest, error) {
	p, err := parseAddArgs(args)
	if err != nil {
		return nil, err
	}
	return &AddRequest{Def: p.def, Scope: p.scope, Overwrite: p.overwrite, DryRun: p.dryRun}, nil
}

// addUsageError is a malformed `tool add` argument: its message is the
// whole story, and it matches ErrBadArgs.
type addUsageError struct{ err error }

func (e *addUsageError) Error() string   { return e.err.Error() }
func (e *addUsageError) Unwrap() []error { return []error{e.err, ErrBadArgs} }

func usageErr(err error) error { return &addUsageError{err: err} }

// ParseBoolFlag reads v as true or false for the flag named what; an
// error wraps ErrBadArgs.
func ParseBoolFlag(what, v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, usageErr(fmt.Errorf("%s %q: use true or false", what, v))
	}
	return b, nil
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
		{"bash", "COMMAND", catExec, "bash command to run", execSetter(ExecBash)},
		{"cmd", "COMMAND", catExec, "Windows CMD command to run", execSetter(ExecCmd)},
		{"pwsh", "COMMAND", catExec, "PowerShell command to run", execSetter(ExecPwsh)},
		{"run", "COMMAND", catExec, "command to run directly, without a shell", execSetter(ExecRun)},
		{"script", "SCRIPT", catExec, "script content (with --shell)", execSetter(ExecScript)},
		{"python", "SCRIPT", catExec, "Python program to run (python3 -c), as the python: key", func(p *addParser, v string) error {
			if err := execSetter(ExecScript)(p, v); err != nil {
				return err
			}
			return p.setShell("python3")
		}},
		{"commands", "PLATFORM=COMMAND", catExec, "a command per platform (default, linux, macos, unix, windows; repeatable), as the commands: key", (*addParser).addPlatformCommand},
		{"shell", "SHELL", catExec, "shell that runs --script", (*addParser).setShell},
		{"platform", "PLATFORM", catExec, "supported platform: windows, linux, macos (repeatable)", func(p *addParser, v string) error {
			p.def.Platforms = append(p.def.Platforms, v)
			return nil
		}},
		{"timeout", "MS", catExec, "time limit of the tool", func(p *addParser, v string) error { return p.duration("--timeout", v, &p.def.Timeout) }},
		{"working-directory", "DIR", catExec, "working directory", func(p *addParser, v string) error { p.def.WorkingDirectory = v; return nil }},
		{"input", "INPUT", catExec, "data passed on stdin", func(p *addParser, v string) error { p.def.Input = v; return nil }},

		{"step", "NAME", catStep, `a step: --step NAME "COMMAND" or --step NAME=COMMAND (repeatable)`, (*addParser).addStep},
		{"continue-on-error", "", catStep, "go on with the next step if this one fails", stepBool(func(s *Step, b bool) { s.ContinueOnError = b })},
		{"run-condition", "CONDITION", catStep, "run the step only if CONDITION holds", stepStr(func(s *Step, v string) { s.RunCondition = v })},
		{"parallel", "", catStep, "run the step in parallel with the previous ones", stepBool(func(s *Step, b bool) { s.Parallel = b })},
		{"wait-for", "STEP1,STEP2", catStep, "steps to wait for", stepStr(func(s *Step, v string) {
			for _, w := range strings.Split(v, ",") {
				if w = strings.TrimSpace(w); w != "" {
					s.WaitFor = append(s.WaitFor, w)
				}
			}
		})},
		{"retry-attempts", "N", catStep, "number of attempts", (*addParser).retryAttempts},
		{"retry-delay", "MS", catStep, "delay between attempts", (*addParser).retryDelay},
		{"fallback", "COMMAND", catStep, "command to run if the step fails", stepStr(func(s *Step, v string) { errorHandling(s).Fallback = v })},
		{"output-mode", "MODE", catStep, "buffer or stream", stepStr(func(s *Step, v string) { stepOutput(s).Mode = OutputMode(v) })},
		{"buffer-limit", "SIZE", catStep, "most output kept", (*addParser).bufferLimit},
		{"use-tool", "TOOL", catStep, "run another tool as this step", stepStr(func(s *Step, v string) { s.UseTool = v })},
		{"with", "KEY=VALUE", catStep, "a parameter for --use-tool (repeatable)", (*addParser).with},

		{"parameter", "NAME", catParam, `a parameter: --parameter NAME "DESC" [KEY=VALUE...] (repeatable)`, (*addParser).addParameter},

		{"env", "NAME=VALUE", catEnv, "an environment variable (repeatable)", (*addParser).env},
		{"inherit-env", "", catEnv, "inherit the caller's environment", func(p *addParser, v string) error {
			return p.boolean("--inherit-env", v, func(b bool) { environment(p.def).Inherit = b })
		}},

		{"security-privilege", "LEVEL", catSecurity, "same-as-user, reduced or elevated", func(p *addParser, v string) error {
			p.def.Security.ExecutionPrivilege = Privilege(v)
			return nil
		}},
		{"security-isolation", "MODE", catSecurity, "none, process or container", func(p *addParser, v string) error {
			p.def.Security.Isolation = Isolation(v)
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
					fp.CrossPlatform = &CrossPlatform{}
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
				r.Cleanup = &Cleanup{}
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
			p.def.Changelog = append(p.def.Changelog, Change{Version: v})
			return nil
		}},
		{"changelog-changes", "TEXT", catVersion, "the changes of the last --changelog-version", (*addParser).changelogChanges},

		{"test", "NAME", catTests, `a test: --test NAME "DESC" (repeatable)`, (*addParser).addTest},
		{"test-param", "NAME=VALUE", catTests, "a test parameter (repeatable)", (*addParser).testParam},
		{"test-expect-exit-code", "CODE", catTests, "expected exit code", (*addParser).testExitCode},
		{"test-expect-contains", "TEXT", catTests, "text the output must contain (repeatable)", testSetter(func(tc *TestCase, v string) {
			tc.Expected.OutputContains = append(tc.Expected.OutputContains, v)
		})},
		{"test-expect-file-exists", "PATH", catTests, "a file that must exist afterwards (repeatable)", testSetter(func(tc *TestCase, v string) {
			tc.Expected.FileExists = append(tc.Expected.FileExists, v)
		})},
		{"test-cleanup", "COMMAND", catTests, "a cleanup command (repeatable)", testSetter(func(tc *TestCase, v string) {
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
			return usageErr(errors.New("tool add: --editor is not supported (hint: write the YAML in your editor and run 'sandboxed tool import FILE')"))
		}},
	}
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
	def               *Definition
	step, test        int // index of the last --step, --test; -1 if none
	topExec           bool
	scope             string
	cur               string // the flag being applied
	overwrite, dryRun bool
	fromFile          string
}

var stepNameRe = lazyRegexp(`^[A-Za-z0-9_-]+$`)

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
		return "", "", false, usageErr(fmt.Errorf("tool add: %q is not a KEY=VALUE option (the tool NAME goes first: sandboxed tool add NAME ...)", tok))
	}
	p.i++
	return k, v, true, nil
}

func parseAddArgs(args []string) (*addParser, error) {
	p := &addParser{args: args, step: -1, test: -1, scope: "local", def: &Definition{}}
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
		def, err := Load(p.fromFile, ScopePath)
		if err != nil {
			return nil, err
		}
		d := *def
		d.Source, d.Pos = Source{}, DefPositions{}
		p.def = &d
		p.name = d.Name
		p.step = len(d.Steps) - 1
	}
	nameGiven := false
	for p.i < len(p.args) {
		tok := p.args[p.i]
		p.i++
		if tok == "-h" || tok == "--help" {
			return nil, ErrAddHelp
		}
		if !strings.HasPrefix(tok, "--") {
			if nameGiven {
				return nil, usageErr(fmt.Errorf("tool add: unexpected argument %q (the tool NAME was %q; quote values with spaces)", tok, p.name))
			}
			p.name, nameGiven = tok, true
			continue
		}
		flagName, val, hasVal := strings.Cut(tok[2:], "=")
		f := findAddFlag(flagName)
		if f == nil {
			return nil, usageErr(fmt.Errorf("tool add: unknown flag --%s (see 'sandboxed tool add --help')", flagName))
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
				return nil, usageErr(fmt.Errorf("tool add: --%s needs a value (%s)", flagName, f.arg))
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
		return nil, usageErr(errors.New("tool add: which name? usage: sandboxed tool add NAME --description DESC [options]"))
	}
	if p.fromFile == "" && p.def.Description == "" {
		return nil, usageErr(fmt.Errorf("tool add %s: --description is required (what the tool does; agents read it)", p.name))
	}
	p.def.Name = p.name
	return p, nil
}

// execSetter gives the last --step its command when it has none yet,
// and the tool its command otherwise.
func execSetter(kind ExecKind) func(p *addParser, v string) error {
	return func(p *addParser, v string) error {
		ex := &Exec{Kind: kind, Command: v}
		if p.step >= 0 && p.def.Steps[p.step].Exec == nil && p.def.Steps[p.step].UseTool == "" {
			p.def.Steps[p.step].Exec = ex
			return nil
		}
		if p.topExec {
			return usageErr(fmt.Errorf("tool add: --%s: the tool already has a command; give one of --bash, --cmd, --pwsh, --run, --script, --python or --commands (or use --step for several)", kind))
		}
		p.def.Exec, p.def.Commands, p.topExec = ex, nil, true
		return nil
	}
}

// addPlatformCommand reads --commands PLATFORM=COMMAND.
func (p *addParser) addPlatformCommand(v string) error {
	plat, cmd, ok := strings.Cut(v, "=")
	known := []string{"default", "linux", "macos", "unix", "windows"}
	if !ok || !inStrings(known, plat) {
		return usageErr(fmt.Errorf("tool add: --commands %q: write PLATFORM=COMMAND, PLATFORM one of %s", v, strings.Join(known, ", ")))
	}
	if p.topExec && p.def.Commands == nil {
		return usageErr(errors.New("tool add: --commands: the tool already has a command; give one of --bash, --cmd, --pwsh, --run, --script, --python or --commands (or use --step for several)"))
	}
	if p.def.Commands == nil {
		p.def.Commands, p.def.Exec, p.topExec = &PlatformCommands{}, nil, true
	}
	c := p.def.Commands
	if plat == "default" {
		if c.Default != "" {
			return usageErr(errors.New("tool add: --commands default=… given twice"))
		}
		c.Default = cmd
		return nil
	}
	if c.Platforms == nil {
		c.Platforms = map[string]string{}
	}
	if _, dup := c.Platforms[plat]; dup {
		return usageErr(fmt.Errorf("tool add: --commands %s=… given twice", plat))
	}
	c.Platforms[plat] = cmd
	return nil
}

func (p *addParser) setShell(v string) error {
	if p.step >= 0 {
		if ex := p.def.Steps[p.step].Exec; ex != nil && ex.Kind == ExecScript {
			ex.Shell = v
			return nil
		}
	}
	if p.def.Exec != nil && p.def.Exec.Kind == ExecScript {
		p.def.Exec.Shell = v
		return nil
	}
	return usageErr(errors.New("tool add: --shell goes with --script; give --script first"))
}

func (p *addParser) addStep(v string) error {
	name, cmd, hasCmd := v, "", false
	if k, c, ok := strings.Cut(v, "="); ok && stepNameRe().MatchString(k) {
		name, cmd, hasCmd = k, c, true
	} else if c, ok := p.next(); ok {
		cmd, hasCmd = c, true
	}
	st := Step{Name: name}
	if hasCmd {
		st.Exec = &Exec{Kind: ExecBash, Command: cmd}
	}
	p.def.Steps = append(p.def.Steps, st)
	p.step = len(p.def.Steps) - 1
	return nil
}

func (p *addParser) lastStep(flag string) (*Step, error) {
	if p.step < 0 {
		return nil, usageErr(fmt.Errorf("tool add: --%s applies to the last --step; give a --step first", flag))
	}
	return &p.def.Steps[p.step], nil
}

func stepStr(set func(*Step, string)) func(*addParser, string) error {
	return func(p *addParser, v string) error {
		s, err := p.lastStep(p.flagName())
		if err != nil {
			return err
		}
		set(s, v)
		return nil
	}
}

func stepBool(set func(*Step, bool)) func(*addParser, string) error {
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

func errorHandling(s *Step) *ErrorHandling { return ensure(&s.ErrorHandling) }

func retry(s *Step) *Retry {
	eh := errorHandling(s)
	if eh.Retry == nil {
		eh.Retry = &Retry{Attempts: 1}
	}
	return eh.Retry
}

func stepOutput(s *Step) *Output { return ensure(&s.Output) }

func (p *addParser) retryAttempts(v string) error {
	s, err := p.lastStep("retry-attempts")
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return usageErr(fmt.Errorf("tool add: --retry-attempts %q: give a whole number of attempts, 1 or more", v))
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
		return usageErr(fmt.Errorf("tool add: %s %q: write %s", flag, v, form))
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
	if !split || !stepNameRe().MatchString(name) {
		name = v
		d, ok := p.next()
		if k, _, opt := strings.Cut(d, "="); ok && opt && inStrings(paramOptions, k) {
			// An option where the description goes: say so, with the
			// options where they belong.
			p.i--
			ok = false
		}
		if !ok {
			rest := ""
			for j := p.i; j < len(p.args) && !strings.HasPrefix(p.args[j], "--"); j++ {
				rest += " " + p.args[j]
			}
			return usageErr(fmt.Errorf(`tool add: --parameter %s needs a description before its options: --parameter %s "what the value means"%s`, v, v, rest))
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
			return usageErr(fmt.Errorf("tool add: --parameter %s: unknown option %q (options: %s)", name, k, strings.Join(paramOptions, ", ")))
		}
		if k == "example" {
			examples = append(examples, val)
			continue
		}
		opts[k] = val
	}
	prm := Parameter{Name: name, Description: desc, Type: TypeString}
	if t, ok := opts["type"]; ok {
		prm.Type = ParamType(t)
	}
	what := "--parameter " + name
	if s, ok := opts["required"]; ok {
		b, err := ParseBoolFlag(what+" required", s)
		if err != nil {
			return err
		}
		prm.Required = b
	}
	if s, ok := opts["default"]; ok {
		d, err := typedValue(prm.Type, s)
		if err != nil {
			return usageErr(fmt.Errorf("tool add: %s default %q: %w", name, s, err))
		}
		prm.Default, prm.HasDefault = d, true
	}
	for _, k := range []string{"validation-min", "validation-max"} {
		if s, ok := opts[k]; ok {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return usageErr(fmt.Errorf("tool add: %s %s %q: give a number", what, k, s))
			}
			if prm.Validation == nil {
				prm.Validation = &Validation{}
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
			prm.Validation = &Validation{}
		}
		prm.Validation.Pattern = s
	}
	prm.Transform, prm.Format, prm.DetailedHelp = opts["transform"], opts["format"], opts["detailed-help"]
	for _, e := range examples {
		x, err := typedValue(prm.Type, e)
		if err != nil {
			return usageErr(fmt.Errorf("tool add: %s example %q: %w", name, e, err))
		}
		prm.Examples = append(prm.Examples, x)
	}
	if s, ok := opts["escape-shell"]; ok {
		b, err := ParseBoolFlag(what+" escape-shell", s)
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
var refOnly = lazyRegexp(`^\{[A-Za-z_][A-Za-z0-9_.-]*\}$`)

// typedValue reads a default or example written on the command line as a
// value of type t. A value that does not read as t but holds a {REF}
// stays text: the loader accepts it and binding checks it after
// substitution.
func typedValue(t ParamType, s string) (any, error) {
	hasRef := strings.Contains(s, "{")
	switch t {
	case TypeNumber:
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f, nil
		}
		if hasRef {
			return s, nil
		}
		return nil, errors.New("not a number")
	case TypeBoolean:
		if b, err := strconv.ParseBool(s); err == nil {
			return b, nil
		}
		if hasRef {
			return s, nil
		}
		return nil, errors.New("not true or false")
	case TypeArray, TypeObject:
		if refOnly().MatchString(s) {
			return s, nil
		}
		var v any
		err := yaml.Unmarshal([]byte(s), &v)
		_, isList := v.([]any)
		_, isMap := v.(map[string]any)
		if err == nil && (t == TypeArray && isList || t == TypeObject && isMap) {
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
	dep := Dependency{Tool: v, Required: true}
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
			b, err := ParseBoolFlag("--dependency "+v+" required", val)
			if err != nil {
				return err
			}
			dep.Required = b
		default:
			return usageErr(fmt.Errorf("tool add: --dependency %s: unknown option %q (options: %s)", v, k, strings.Join(depOptions, ", ")))
		}
	}
	p.def.Dependencies = append(p.def.Dependencies, dep)
	return nil
}

func (p *addParser) changelogChanges(v string) error {
	if len(p.def.Changelog) == 0 {
		return usageErr(errors.New("tool add: --changelog-changes goes with --changelog-version; give that first"))
	}
	p.def.Changelog[len(p.def.Changelog)-1].Changes = v
	return nil
}

func (p *addParser) addTest(v string) error {
	tc := TestCase{Name: v}
	if d, ok := p.next(); ok {
		tc.Description = d
	}
	ts := p.def.Tests
	if ts == nil {
		ts = &TestSuite{}
		p.def.Tests = ts
	}
	ts.Cases = append(ts.Cases, tc)
	p.test = len(ts.Cases) - 1
	return nil
}

func (p *addParser) lastTest(flag string) (*TestCase, error) {
	if p.test < 0 {
		return nil, usageErr(fmt.Errorf("tool add: --%s applies to the last --test; give a --test first", flag))
	}
	return &p.def.Tests.Cases[p.test], nil
}

func testSetter(set func(*TestCase, string)) func(*addParser, string) error {
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
		return usageErr(fmt.Errorf("tool add: --test-expect-exit-code %q: give a whole number", v))
	}
	tc.Expected.ExitCode = &n
	return nil
}

func (p *addParser) boolean(flag, v string, set func(bool)) error {
	b, err := ParseBoolFlag("tool add: "+flag, v)
	if err != nil {
		return err
	}
	set(b)
	return nil
}

func (p *addParser) duration(flag, v string, dst *time.Duration) error {
	d, err := units.ParseDuration(v)
	if err != nil {
		return usageErr(fmt.Errorf("tool add: %s: %w (write %s)", flag, err, units.DurationGrammar))
	}
	*dst = d
	return nil
}

func (p *addParser) size(flag, v string, dst *int64) error {
	n, err := units.ParseSize(v)
	if err != nil {
		return usageErr(fmt.Errorf("tool add: %s: %w (write %s)", flag, err, units.SizeGrammar))
	}
	*dst = n
	return nil
}

func environment(d *Definition) *Environment { return ensure(&d.Environment) }

func logging(d *Definition) *Logging { return ensure(&d.Security.Logging) }

func auditing(d *Definition) *Auditing { return ensure(&d.Security.Auditing) }

func schemaGen(d *Definition) *SchemaGeneration {
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

func filePaths(d *Definition) *FilePaths { return ensure(&d.FilePaths) }

func metadata(d *Definition) *Metadata { return ensure(&d.Metadata) }

func resources(d *Definition) *Resources { return ensure(&d.Resources) }

func debugging(d *Definition) *Debugging { return ensure(&d.Debugging) }

func interactive(d *Definition) *InteractiveOptions { return ensure(&d.InteractiveOptions) }
