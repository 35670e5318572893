package tool

import (
	"fmt"
	"strings"
)

// The --help fallback (specs/001, priority 4): a script that answers
// neither the ping nor a schema dump but prints argparse-style help is
// registered as a command-line tool. Each long option becomes a parameter
// (--name=VALUE when it takes a value, a boolean for a bare flag), each
// positional argument a string parameter, and the command is a `run:`
// argv: no shell, every value exactly one argument.

// ConventionCLIHelp is the convention of a tool described by its --help.
const ConventionCLIHelp = "cli-help"

// HelpArg is one argument a help text documents.
type HelpArg struct {
	// Flag is the long option ("--input-file"); "" for a positional.
	Flag string
	// Name is the parameter name: the option without dashes, '-' as '_',
	// or the positional's name.
	Name string
	// TakesValue is set for an option with a metavar or choices.
	TakesValue bool
	Choices    []string
	Help       string
	Required   bool
}

// HelpText is what ParseHelp read from a help text.
type HelpText struct {
	Usage       string
	Description string
	Args        []HelpArg
}

var (
	helpOptionRe = lazyRegexp(`^\s{1,12}(?:-[A-Za-z0-9](?:[ =]\S+)?,\s+)?(--[A-Za-z0-9][A-Za-z0-9_-]*)(?:[ =](\{[^}]*\}|[A-Za-z_][A-Za-z0-9_.-]*|<[^>]+>))?(?:\s{2,}(.*))?$`)
	helpPosRe    = lazyRegexp(`^\s{1,12}([A-Za-z_][A-Za-z0-9_-]*|\{[^}]*\})(?:\s{2,}(.*))?$`)
	helpHeaderRe = lazyRegexp(`^\S.*:\s*$`)
)

// ParseHelp reads argparse-style help: a "usage:" line, a description,
// and sections of positional arguments and options. It reports false when
// the text has no usage line (then it is not help this parser can trust).
func ParseHelp(text string) (*HelpText, bool) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	h := &HelpText{}
	i := 0
	for ; i < len(lines); i++ {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(lines[i])), "usage:") {
			break
		}
	}
	if i == len(lines) {
		return nil, false
	}
	usage := []string{strings.TrimSpace(lines[i])[len("usage:"):]}
	for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "" && (lines[i][0] == ' ' || lines[i][0] == '\t'); i++ {
		usage = append(usage, strings.TrimSpace(lines[i]))
	}
	h.Usage = strings.TrimSpace(strings.Join(usage, " "))
	required := usageRequired(h.Usage)

	section := ""
	var last *HelpArg
	for ; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		switch {
		case t == "":
			last = nil
			continue
		case helpHeaderRe().MatchString(l) && !strings.HasPrefix(l, " "):
			section = strings.ToLower(strings.TrimSuffix(t, ":"))
			last = nil
			continue
		case section == "" && h.Description == "" && !strings.HasPrefix(l, " "):
			h.Description = t
			continue
		}
		if m := helpOptionRe().FindStringSubmatch(l); m != nil {
			flag := m[1]
			a := HelpArg{Flag: flag, Name: strings.ReplaceAll(strings.TrimLeft(flag, "-"), "-", "_"), Help: strings.TrimSpace(m[3])}
			if m[2] != "" {
				a.TakesValue = true
				if strings.HasPrefix(m[2], "{") {
					a.Choices = strings.Split(strings.Trim(m[2], "{}"), ",")
				}
			}
			a.Required = required[flag]
			if flag == "--help" || flag == "--version" || strings.HasPrefix(flag, "--fractalic-") {
				last = nil
				continue
			}
			h.Args = append(h.Args, a)
			last = &h.Args[len(h.Args)-1]
			continue
		}
		if strings.Contains(section, "positional") {
			if m := helpPosRe().FindStringSubmatch(l); m != nil && !strings.HasPrefix(t, "-") {
				a := HelpArg{Name: m[1], Help: strings.TrimSpace(m[2])}
				if strings.HasPrefix(m[1], "{") {
					a.Choices = strings.Split(strings.Trim(m[1], "{}"), ",")
					a.Name = "command"
				}
				a.Required = required[m[1]]
				h.Args = append(h.Args, a)
				last = &h.Args[len(h.Args)-1]
				continue
			}
		}
		// A continuation line of the previous argument's help.
		if last != nil && strings.HasPrefix(l, " ") {
			last.Help = strings.TrimSpace(last.Help + " " + t)
		}
	}
	return h, true
}

// usageRequired returns the words of a usage line outside brackets: the
// required options and positionals.
func usageRequired(usage string) map[string]bool {
	out := map[string]bool{}
	depth := 0
	fields := strings.Fields(usage)
	for i, w := range fields {
		if i == 0 {
			continue // the program
		}
		start := depth
		depth += strings.Count(w, "[") - strings.Count(w, "]")
		if start == 0 && !strings.HasPrefix(w, "[") {
			out[strings.Trim(w, "()|")] = true
		}
	}
	return out
}

// HelpDefinition builds the definition of a script described only by its
// help text; name is the script's name for the tool (scriptName).
func HelpDefinition(s Script, h *HelpText, name string) (*Definition, error) {
	if err := checkArgv(s); err != nil {
		return nil, err
	}
	var params []Parameter
	var opts, pos []string
	seen := map[string]bool{}
	names := make([]string, len(h.Args))
	for i, a := range h.Args {
		if seen[a.Name] {
			return nil, fmt.Errorf("help of %s: argument %q is documented twice", s.File, a.Name)
		}
		seen[a.Name] = true
		names[i] = a.Name
	}
	// The script never sees these names (it gets options and positions),
	// so a mapped one is not exposed under the help's spelling.
	own := ParamNamesFor(names)
	for _, a := range h.Args {
		a.Name = own[a.Name]
		p := Parameter{Name: a.Name, Type: TypeString, Description: a.Help, Required: a.Required}
		if p.Description == "" {
			p.Description = a.Name
		}
		if len(a.Choices) > 0 {
			enum := make([]any, len(a.Choices))
			for i, c := range a.Choices {
				enum[i] = strings.TrimSpace(c)
			}
			p.Validation = &Validation{Enum: enum}
		}
		switch {
		case a.Flag == "":
			pos = append(pos, "{"+a.Name+"}")
		case a.TakesValue:
			p.Format = a.Flag + "={value}"
			opts = append(opts, "{"+a.Name+"}")
		default:
			p.Type, p.Required = TypeBoolean, false
			p.Transform = fmt.Sprintf("value ? '%s' : ''", a.Flag)
			opts = append(opts, "{"+a.Name+"}")
		}
		params = append(params, p)
	}
	words := make([]string, 0, len(s.Argv)+len(opts)+len(pos)+1)
	for _, a := range s.Argv {
		words = append(words, ShellQuote(a))
	}
	words = append(words, opts...)
	if len(pos) > 0 {
		// Positionals after "--": a value starting with '-' stays a value.
		words = append(append(words, "--"), pos...)
	}
	exec := &Exec{Kind: ExecRun, Command: strings.Join(words, " ")}
	d := discovered(s, ToolNameFor(name), h.Description, "Discovered from the --help of "+s.File, exec, params, ConventionCLIHelp)
	exposeAs(d, name, nil)
	return d, nil
}

// ConventionCLISchema is the convention of a legacy command-line script
// (specs/001, "legacy approaches"): it dumps a schema but takes its
// parameters as --option VALUE arguments, not as JSON.
const ConventionCLISchema = "cli-schema"

// looksLikeUsage reports whether a probe failed the way an argparse (or
// similar) command line refuses an argument it does not know: a non-zero
// exit and a usage line.
func looksLikeUsage(o ProbeOutput) bool {
	if o.ExitCode == 0 || o.TimedOut || o.Error != "" {
		return false
	}
	return strings.Contains(strings.ToLower(o.Stderr+o.Stdout), "usage:")
}

// CLIDefinition builds the definition of a legacy command-line script from
// its schema dump: each parameter goes as --name=VALUE ('_' in the name as
// '-', as argparse spells options; a name that starts with '-' is the
// option itself, "-A" as -AVALUE, "--all" as --all=VALUE), a boolean as
// the bare option when true. subcommand, when set, is the first argument
// (a script with several tools selects one by name). name is the script's
// name for the tool.
func CLIDefinition(s Script, fd FunctionDecl, name, subcommand string) (*Definition, error) {
	if err := checkArgv(s); err != nil {
		return nil, err
	}
	params, orig, err := schemaParams(fd, name)
	if err != nil {
		return nil, err
	}
	words := make([]string, 0, len(s.Argv)+len(params)+1)
	for _, a := range s.Argv {
		words = append(words, ShellQuote(a))
	}
	if subcommand != "" {
		words = append(words, ShellQuote(subcommand))
	}
	for i := range params {
		p := &params[i]
		flag, sep := cliFlag(orig[p.Name])
		if strings.ContainsAny(flag, "{}'\\ ") {
			return nil, fmt.Errorf("tool %s: parameter %q cannot be written as a command-line option", name, orig[p.Name])
		}
		if p.Type == TypeBoolean {
			p.Transform = fmt.Sprintf("value ? '%s' : ''", flag)
		} else {
			p.Transform, p.Format = "", flag+sep+"{value}"
		}
		words = append(words, "{"+p.Name+"}")
	}
	exec := &Exec{Kind: ExecRun, Command: strings.Join(words, " ")}
	d := discovered(s, ToolNameFor(name), fd.Description, "Discovered from "+s.File+" (command line)", exec, params, ConventionCLISchema)
	exposeAs(d, name, orig)
	return d, nil
}

// cliFlag is the option a schema property is given as, and what joins
// the option to its value.
func cliFlag(prop string) (flag, sep string) {
	switch {
	case len(prop) == 2 && prop[0] == '-' && prop[1] != '-':
		return prop, "" // a short option: -AVALUE
	case strings.HasPrefix(prop, "-"):
		return prop, "="
	}
	return "--" + strings.ReplaceAll(prop, "_", "-"), "="
}
