package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Binding turns a Definition and the caller's arguments into a Bound: every
// parameter typed, validated, defaulted, transformed and formatted, and every
// command substituted with context-aware escaping, ready to execute.
//
//	in, _ := tool.ParseArgs([]string{"LOCATION=Paris"})
//	b, err := tool.Bind(def, in, tool.BindEnv{Workspace: wd})
//	for _, s := range b.Steps { exec(s.Argv) }          // when s.StepRefs() is empty
//	argv, cmd, err := b.Steps[1].Resolve(outputsSoFar)  // otherwise, at run time
//
// Order per parameter: value (input, else alias default-parameters, else
// default, with {OTHER} references in string defaults resolved first, in
// dependency order), type coercion, validation rules, transform (only when
// a value is present), format (only when the text is not empty), then
// escaping at the place of use. The text a default references is the other
// parameter's text after its transform and before its format.

// Input holds argument values by parameter name. Values from the command
// line are Text; values from --params-json keep their JSON types. Bind
// reads Text by the parameter's type (or its schema, see paramschema.go)
// and keeps a JSON value as given where the type allows it.
type Input map[string]any

// Text is a value given as text (NAME=VALUE on the command line, a test
// case's or a with: map's value), to be read by the parameter's type: "1"
// is the number 1 for a number parameter and the string "1" for a string
// one. A plain string in an Input is a JSON string.
type Text string

// ParseArgs parses command-line arguments of the forms NAME=VALUE,
// "--param NAME=VALUE" and "--param=NAME=VALUE". VALUE may contain '='.
// A name given twice is an error.
func ParseArgs(args []string) (Input, error) {
	in := Input{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--param" || a == "-param":
			if i+1 >= len(args) {
				return nil, fmt.Errorf("parse arguments: --param needs NAME=VALUE: %w", ErrBadArgs)
			}
			i++
			a = args[i]
		case strings.HasPrefix(a, "--param="):
			a = strings.TrimPrefix(a, "--param=")
		}
		name, value, ok := strings.Cut(a, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("parse argument %q: want NAME=VALUE: %w", a, ErrBadArgs)
		}
		if _, dup := in[name]; dup {
			return nil, fmt.Errorf("parse arguments: parameter %s given twice: %w", name, ErrBadArgs)
		}
		in[name] = Text(value)
	}
	return in, nil
}

// ParseParamsJSON parses a JSON object of parameter values (the
// --params-json document, or an LLM's function-call arguments). Members
// whose value is null count as not given.
func ParseParamsJSON(data []byte) (Input, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("parse parameters JSON: %v: %w", err, ErrBadArgs)
	}
	if m == nil {
		return nil, fmt.Errorf("parse parameters JSON: want an object: %w", ErrBadArgs)
	}
	if d.More() {
		return nil, fmt.Errorf("parse parameters JSON: trailing data after the object: %w", ErrBadArgs)
	}
	in := Input{}
	for k, v := range m {
		if v == nil {
			continue
		}
		in[k] = normalizeJSON(v)
	}
	return in, nil
}

// InputFromStrings makes an Input from text values, as a test case's
// parameters or a use-tool step's with: map.
func InputFromStrings(m map[string]string) Input {
	in := make(Input, len(m))
	for k, v := range m {
		in[k] = Text(v)
	}
	return in
}

// Merge returns the union of in and other; a name present in both is an error.
func (in Input) Merge(other Input) (Input, error) {
	out := Input{}
	for k, v := range in {
		out[k] = v
	}
	for k, v := range other {
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("merge arguments: parameter %s given twice: %w", k, ErrBadArgs)
		}
		out[k] = v
	}
	return out, nil
}

// BindEnv is what binding needs from the caller besides the arguments.
type BindEnv struct {
	ToolName  string // {TOOL_NAME}; default: the definition's name
	Workspace string // {WORKSPACE}; a definition that uses it needs it set
	Temp      string // {TEMP}; default: os.TempDir()
	Platform  string // linux (default) or macos; selects commands.platforms
	Home      string // expands a leading ~ in working directories

	// Transform bounds each transform; zero fields take the defaults.
	Transform TransformLimits
}

// ValueSource says where a parameter's value came from.
type ValueSource string

const (
	SourceNone         ValueSource = ""              // no value: optional and not given
	SourceInput        ValueSource = "input"         // given by the caller
	SourceAliasDefault ValueSource = "alias-default" // default-parameters of an alias
	SourceDefault      ValueSource = "default"       // the parameter's default
)

// BoundParam is one parameter after binding.
type BoundParam struct {
	Name string
	Type ParamType
	// Value is the typed value (string, float64, bool, []any, map[string]any),
	// after defaulting and before transform; nil when not given.
	Value  any
	Source ValueSource
	// Text is what substitutes for {Name}: after transform and format,
	// before escaping. Empty text substitutes to nothing.
	Text string
	// Escape is the parameter's escape-shell setting (default true).
	Escape bool
	// Sensitive is set for names listed in security.logging.sensitive-parameters.
	Sensitive bool
}

// StepOutput is what a finished step makes available to later steps as
// {NAME.output}, {NAME.error} and {NAME.exit-code}. Trailing newlines of
// Output and Error are dropped on substitution, as $(...) does.
type StepOutput struct {
	Output   string
	Error    string
	ExitCode int
}

// BoundCommand is one command ready to execute.
//
// Argv is final when StepRefs() is empty. When the command references the
// output of earlier steps, Argv and Command show those references as
// written, and the controller calls Resolve with the outputs once the steps
// have finished: Resolve renders the original template in one pass, so a
// parameter value that happens to look like {x.output} stays literal, and
// step outputs are escaped for their quoting context like parameters are.
type BoundCommand struct {
	Kind   ExecKind // bash, pwsh, run, script; "" for commands:
	Shell  string   // script's shell, as written
	Syntax Syntax
	// Argv is the program and its arguments, e.g. ["/bin/bash","-c",script].
	Argv []string
	// Command is the substituted command text (the script, or for run: the
	// argv quoted as a shell line), for display and audit.
	Command string
	// MaskedCommand is Command with sensitive parameters shown as ***.
	MaskedCommand string

	tmpl   *Template
	prefix []string
	interp string // non-shell interpreter: escaped references are refused
	b      *Bound
}

// StepRefs returns the step references ({x.output} …) the command uses.
func (c *BoundCommand) StepRefs() []string {
	if c == nil || c.tmpl == nil {
		return nil
	}
	var out []string
	for _, r := range c.tmpl.Refs() {
		if strings.Contains(r, ".") {
			out = append(out, r)
		}
	}
	return out
}

// Resolve substitutes step outputs (and parameters) into the command and
// returns the argv and the command text. A reference to a step missing from
// outputs (skipped, or not run yet) substitutes to nothing.
func (c *BoundCommand) Resolve(outputs map[string]StepOutput) ([]string, string, error) {
	return c.render(outputs, false)
}

func (c *BoundCommand) render(outputs map[string]StepOutput, mask bool) ([]string, string, error) {
	if c.tmpl == nil {
		return nil, "", nil
	}
	res := c.b.resolver(outputs, mask, true)
	if c.interp != "" {
		inner := res
		res = func(ref string) (string, bool, bool, error) {
			text, esc, ok, err := inner(ref)
			if err == nil && ok && esc {
				err = fmt.Errorf("substitute {%s} into a %s script: its quoting is not supported, so the value cannot be escaped; set security.escape-shell: false and validate the value with a pattern, or pass it in environment.variables: %w", ref, c.interp, ErrUnsupportedExec)
			}
			return text, esc, ok, err
		}
	}
	if c.Syntax == SyntaxArgv {
		argv, err := c.tmpl.renderArgv(res)
		if err != nil {
			return nil, "", err
		}
		if len(argv) == 0 {
			return nil, "", fmt.Errorf("run: command is empty after substitution: %w", ErrUnsupportedExec)
		}
		q := make([]string, len(argv))
		for i, a := range argv {
			q[i] = ShellQuote(a)
		}
		return argv, strings.Join(q, " "), nil
	}
	script, err := c.tmpl.render(res)
	if err != nil {
		return nil, "", err
	}
	argv := append(append([]string(nil), c.prefix...), script)
	return argv, script, nil
}

// BoundStep is one step ready for the controller. Single-step tools (exec
// keys, commands:) have one step named "main". A use-tool step has no
// command (Argv is nil); the controller binds UseTool with With.
type BoundStep struct {
	Name string
	BoundCommand

	UseTool string
	// With holds use-tool arguments, parameters substituted unescaped.
	With map[string]string

	// Cwd is the step's working directory (step's own, else the tool's),
	// substituted, ~ expanded; relative paths are left for the caller to
	// resolve against its own working directory.
	Cwd string
	// Env is the tool's environment.variables overlaid with the step's own.
	Env map[string]string
	// Input is the text for stdin, parameters substituted unescaped.
	Input string
	// Timeout is the step's own, else the tool's timeout; 0 means none set.
	Timeout         time.Duration
	Output          *Output
	ContinueOnError bool
	// RunCondition has parameters substituted; see resolveCondition.
	RunCondition string
	Parallel     bool
	WaitFor      []string
	Retry        *Retry
	// Fallback is the error-handling fallback command, bound like the step.
	Fallback *BoundCommand

	inputTmpl *Template
	condTmpl  *Template
}

// ResolveInput returns the step's stdin text with step outputs substituted.
func (s *BoundStep) ResolveInput(outputs map[string]StepOutput) (string, error) {
	if s.inputTmpl == nil {
		return s.Input, nil
	}
	return s.inputTmpl.render(s.b.resolver(outputs, false, false))
}

// resolveCondition returns the run-condition with parameters and step
// outputs substituted verbatim (the condition is evaluated by the
// controller, never by a shell). A reference to a step without output is
// left as written, so the controller can report it.
func (s *BoundStep) resolveCondition(outputs map[string]StepOutput) (string, error) {
	if s.condTmpl == nil {
		return s.RunCondition, nil
	}
	res := s.b.resolver(outputs, false, false)
	return s.condTmpl.render(func(ref string) (string, bool, bool, error) {
		if step, _, isStep := strings.Cut(ref, "."); isStep {
			if _, ran := outputs[step]; !ran {
				return "", false, false, nil
			}
		}
		return res(ref)
	})
}

// Bound is a definition bound to arguments.
type Bound struct {
	Def    *Definition
	Params []BoundParam // in declaration order
	Steps  []BoundStep
	// Permissions are security.required-permissions with parameters
	// substituted unescaped (they are paths and hosts, not shell).
	Permissions []string
	// Env is environment.variables, substituted unescaped.
	Env map[string]string
	// WorkingDirectory is the tool-level working directory (working-directory,
	// else file-paths.working-directory), substituted, ~ expanded.
	WorkingDirectory string
	// Timeout is the whole run's limit: resources.timeout, else timeout.
	Timeout time.Duration
	// TempDirectory is file-paths.temp-directory, substituted unescaped.
	TempDirectory string
	// Cleanup holds resources.cleanup final commands, bound like commands:
	// entries (/bin/sh -c), to run after the steps whatever their outcome.
	Cleanup []BoundCommand

	builtins map[string]string
	byName   map[string]int
	stepSet  map[string]bool
}

// Param returns the bound parameter called name.
func (b *Bound) Param(name string) (BoundParam, bool) {
	i, ok := b.byName[name]
	if !ok {
		return BoundParam{}, false
	}
	return b.Params[i], true
}

// Masked returns each parameter that has a value, as text, with sensitive
// ones replaced by "***". It is what logs and audit records may show.
func (b *Bound) Masked() map[string]string {
	out := make(map[string]string, len(b.Params))
	for _, p := range b.Params {
		if p.Source == SourceNone {
			continue
		}
		if p.Sensitive {
			out[p.Name] = "***"
		} else {
			out[p.Name] = textOf(p.Value)
		}
	}
	return out
}

// resolver returns the lookup for rendering: parameters (masked if asked),
// built-ins, and step references from outputs. stepRefsEscape says whether
// step outputs are escaped (commands) or verbatim (stdin, conditions).
func (b *Bound) resolver(outputs map[string]StepOutput, mask, escapeSteps bool) resolveFunc {
	return func(ref string) (string, bool, bool, error) {
		if i, ok := b.byName[ref]; ok {
			p := b.Params[i]
			if mask && p.Sensitive && p.Text != "" {
				return "***", true, true, nil
			}
			return p.Text, p.Escape, true, nil
		}
		if step, field, ok := strings.Cut(ref, "."); ok && b.stepSet[step] {
			if outputs == nil {
				return "", false, false, nil
			}
			o := outputs[step]
			switch field {
			case "output":
				return strings.TrimRight(o.Output, "\n"), escapeSteps, true, nil
			case "error":
				return strings.TrimRight(o.Error, "\n"), escapeSteps, true, nil
			case "exit-code":
				if _, ran := outputs[step]; !ran {
					return "", escapeSteps, true, nil
				}
				return strconv.Itoa(o.ExitCode), escapeSteps, true, nil
			}
		}
		if v, ok := b.builtins[ref]; ok {
			if v == "" {
				return "", false, false, fmt.Errorf("substitute {%s}: the definition uses the built-in {%s} but no value was given for it: %w", ref, ref, ErrUnsupportedExec)
			}
			return v, true, true, nil
		}
		return "", false, false, nil
	}
}

// Built-in references, substituted unless a parameter of the same name is declared.
const (
	BuiltinToolName  = "TOOL_NAME"
	BuiltinWorkspace = "WORKSPACE"
	BuiltinTemp      = "TEMP"
)

type paramState struct {
	p       *Parameter
	value   any
	source  ValueSource
	pre     string // after transform, before format
	text    string
	state   int // 0 new, 1 resolving, 2 done
	invalid error
	missing bool
}

type binder struct {
	d        *Definition
	in       Input
	env      BindEnv
	params   map[string]*paramState
	b        *Bound
	stack    []string
	invalids []error
}

// Bind binds d to the arguments in in. See the package comment of binding
// above for the order of operations. Errors wrap ErrBadArgs (an argument given under its own and its exposed name), ErrUnknownParam,
// ErrMissingParam (all missing names in one error), ErrInvalidParam (one per
// bad parameter, joined), ErrDefaultCycle, ErrTransform, ErrUnsafeValue,
// ErrUnsafeContext or ErrUnsupportedExec.
func Bind(d *Definition, in Input, env BindEnv) (*Bound, error) {
	if d == nil {
		return nil, fmt.Errorf("bind: no definition: %w", ErrUnsupportedExec)
	}
	if d.Type == "alias" && d.Exec == nil && d.Commands == nil && len(d.Steps) == 0 {
		return nil, fmt.Errorf("bind %s: an alias must be merged with its base tool %q first (MergeAlias): %w", d.Name, d.BaseTool, ErrUnsupportedExec)
	}
	if env.Platform == "" {
		env.Platform = "linux"
	}
	if env.ToolName == "" {
		env.ToolName = d.Name
	}
	if env.Temp == "" {
		env.Temp = os.TempDir()
	}
	in, err := exposedInput(d, in)
	if err != nil {
		return nil, err
	}
	bd := &binder{d: d, in: in, env: env, params: map[string]*paramState{}}
	b := &Bound{
		Def:      d,
		byName:   map[string]int{},
		stepSet:  map[string]bool{},
		builtins: map[string]string{BuiltinToolName: env.ToolName, BuiltinWorkspace: env.Workspace, BuiltinTemp: env.Temp},
	}
	bd.b = b
	for _, s := range d.Steps {
		if s.Name != "" {
			b.stepSet[s.Name] = true
		}
	}
	sensitive := map[string]bool{}
	if d.Security.Logging != nil {
		for _, n := range d.Security.Logging.SensitiveParameters {
			sensitive[n] = true
		}
	}
	declared := make([]string, 0, len(d.Parameters))
	for i := range d.Parameters {
		p := &d.Parameters[i]
		bd.params[p.Name] = &paramState{p: p}
		declared = append(declared, p.Name)
	}

	if err := checkUnknown(d, in, declared); err != nil {
		return nil, err
	}
	for name := range d.DefaultParameters {
		if _, ok := bd.params[name]; !ok {
			return nil, fmt.Errorf("bind %s: default-parameters names %s, which is not a parameter of the tool: %w", d.Name, name, ErrUnknownParam)
		}
	}

	for _, name := range declared {
		if err := bd.resolve(name); err != nil {
			return nil, err
		}
	}
	var missing []string
	for _, name := range declared {
		if bd.params[name].missing {
			missing = append(missing, name)
		}
	}
	var errs []error
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("bind %s: missing required parameters: %s (give them as NAME=VALUE): %w", d.Name, strings.Join(missing, ", "), ErrMissingParam))
	}
	errs = append(errs, bd.invalids...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	for i, name := range declared {
		st := bd.params[name]
		b.Params = append(b.Params, BoundParam{
			Name: name, Type: st.p.Type, Value: st.value, Source: st.source,
			Text: st.text, Escape: st.p.Escapes(), Sensitive: sensitive[name],
		})
		b.byName[name] = i
	}

	if err := bd.bindRest(); err != nil {
		return nil, err
	}
	return b, nil
}

// exposedInput renames the arguments given under a parameter's exposed
// name (sandboxed.exposed-as.parameters) to the parameter's own name; the
// loader made sure no exposed name is another parameter's own. An
// argument given under both names is an error.
func exposedInput(d *Definition, in Input) (Input, error) {
	if d.Sandboxed == nil || d.Sandboxed.ExposedAs == nil || len(d.Sandboxed.ExposedAs.Parameters) == 0 {
		return in, nil
	}
	out := make(Input, len(in))
	var twice []string
	for k, v := range in {
		name := d.OwnParam(k)
		if _, dup := out[name]; dup {
			twice = append(twice, name)
		}
		out[name] = v
	}
	if len(twice) > 0 {
		sort.Strings(twice)
		var msgs []string
		for _, n := range twice {
			msgs = append(msgs, fmt.Sprintf("%s (as %s and %s)", n, d.ExposedParam(n), n))
		}
		return nil, fmt.Errorf("bind %s: parameter given twice: %s: %w", d.Name, strings.Join(msgs, ", "), ErrBadArgs)
	}
	return out, nil
}

// checkUnknown refuses arguments d does not declare; the message lists the
// parameters under the names the caller sees (their exposed names).
func checkUnknown(d *Definition, in Input, own []string) error {
	set := map[string]bool{}
	declared := make([]string, len(own))
	for i, n := range own {
		set[n] = true
		declared[i] = d.ExposedParam(n)
	}
	var unknown []string
	for k := range in {
		if !set[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	var msgs []string
	for _, u := range unknown {
		m := u
		if c := closest(u, declared); c != "" {
			m += fmt.Sprintf(" (did you mean %s?)", c)
		}
		msgs = append(msgs, m)
	}
	decl := "none"
	if len(declared) > 0 {
		decl = strings.Join(declared, ", ")
	}
	return fmt.Errorf("bind: unknown parameter %s; declared parameters: %s: %w", strings.Join(msgs, ", "), decl, ErrUnknownParam)
}

// knownRef reports whether name is a reference the definition can satisfy.
func (bd *binder) knownRef(name string) bool {
	if _, ok := bd.params[name]; ok {
		return true
	}
	if step, _, ok := strings.Cut(name, "."); ok {
		return bd.b.stepSet[step]
	}
	return name == BuiltinToolName || name == BuiltinWorkspace || name == BuiltinTemp
}

// resolve computes one parameter, resolving the parameters its default
// references first. Only a cycle is returned as an error; type, rule and
// transform failures are collected in bd.invalids.
func (bd *binder) resolve(name string) error {
	st := bd.params[name]
	switch st.state {
	case 2:
		return nil
	case 1:
		cycle := append([]string(nil), bd.stack...)
		for i, n := range cycle {
			if n == name {
				cycle = cycle[i:]
				break
			}
		}
		cycle = append(cycle, name)
		return fmt.Errorf("bind %s: parameter defaults reference each other: %s; give one of them a value or a default without references: %w",
			bd.d.Name, strings.Join(cycle, " -> "), ErrDefaultCycle)
	}
	st.state = 1
	bd.stack = append(bd.stack, name)
	defer func() {
		bd.stack = bd.stack[:len(bd.stack)-1]
		st.state = 2
	}()
	p := st.p

	var raw any
	switch {
	case bd.in[name] != nil:
		raw, st.source = bd.in[name], SourceInput
	default:
		if v, ok := bd.d.DefaultParameters[name]; ok {
			raw, st.source = v, SourceAliasDefault
		} else if p.HasDefault || p.Default != nil {
			raw, st.source = p.Default, SourceDefault
		}
		if s, ok := raw.(string); ok && st.source != SourceNone {
			expanded, err := bd.expandDefault(s)
			if err != nil {
				return err
			}
			raw = expanded
			if st.source == SourceAliasDefault || expanded != s {
				// Text written in the definition, read by the type.
				raw = Text(expanded)
			}
		}
	}
	if st.source == SourceNone {
		if p.Required {
			st.missing = true
		}
		return nil
	}

	var v any
	var err error
	if sch := bd.d.ParamSchemaOf(name); sch != nil {
		if v, err = coerceSchema(sch, raw); err == nil {
			err = checkSchema(sch, v)
		}
	} else {
		v, err = coerce(p.Type, raw)
	}
	if err != nil {
		st.invalid = fmt.Errorf("bind %s: parameter %s (%s): %v: %w", bd.d.Name, name, st.source, err, ErrInvalidParam)
		bd.invalids = append(bd.invalids, st.invalid)
		st.source = SourceNone
		return nil
	}
	if err := checkRules(v, p.Validation); err != nil {
		st.invalid = fmt.Errorf("bind %s: parameter %s: %v: %w", bd.d.Name, name, err, ErrInvalidParam)
		bd.invalids = append(bd.invalids, st.invalid)
		st.source = SourceNone
		return nil
	}
	st.value = v
	st.pre = textOf(v)
	if p.Transform != "" {
		text, err := EvalTransform(p.Transform, v, bd.env.Transform)
		if err != nil {
			var te *TransformError
			if errors.As(err, &te) {
				te.Param = name
			}
			bd.invalids = append(bd.invalids, err)
			return nil
		}
		st.pre = text
	}
	st.text = st.pre
	if p.Format != "" && st.pre != "" {
		st.text = strings.ReplaceAll(p.Format, "{value}", st.pre)
	}
	return nil
}

// expandDefault substitutes {OTHER} and built-ins in a string default.
func (bd *binder) expandDefault(s string) (string, error) {
	t := ParseTemplate(s, SyntaxPlain, func(n string) bool {
		if strings.Contains(n, ".") {
			return false
		}
		return bd.knownRef(n)
	})
	var cycle error
	out, err := t.render(func(ref string) (string, bool, bool, error) {
		if _, ok := bd.params[ref]; ok {
			if err := bd.resolve(ref); err != nil {
				cycle = err
				return "", false, false, err
			}
			return bd.params[ref].pre, false, true, nil
		}
		return bd.b.resolver(nil, false, false)(ref)
	})
	if cycle != nil {
		return "", cycle
	}
	if err != nil {
		return "", err
	}
	return out, nil
}

// plain substitutes parameters and built-ins verbatim into text no shell
// parses; step references stay as written.
func (bd *binder) plain(what, text string, allowNUL bool) (string, *Template, error) {
	if text == "" {
		return "", nil, nil
	}
	t := ParseTemplate(text, SyntaxPlain, bd.knownRef)
	res := bd.b.resolver(nil, false, false)
	out, err := t.render(func(ref string) (string, bool, bool, error) {
		text, _, ok, err := res(ref)
		if err == nil && ok && !allowNUL && strings.IndexByte(text, 0) >= 0 {
			err = fmt.Errorf("substitute {%s}: value contains a NUL byte: %w", ref, ErrUnsafeValue)
		}
		return text, false, ok, err
	})
	if err != nil {
		return "", nil, fmt.Errorf("bind %s: %s: %w", bd.d.Name, what, err)
	}
	return out, t, nil
}

func (bd *binder) bindRest() error {
	d, b := bd.d, bd.b
	for i, perm := range d.Security.RequiredPermissions {
		s, _, err := bd.plain(fmt.Sprintf("required-permissions[%d]", i), perm, false)
		if err != nil {
			return err
		}
		b.Permissions = append(b.Permissions, s)
	}
	if d.Environment != nil && len(d.Environment.Variables) > 0 {
		b.Env = map[string]string{}
		for k, v := range d.Environment.Variables {
			s, _, err := bd.plain("environment.variables."+k, v, false)
			if err != nil {
				return err
			}
			b.Env[k] = s
		}
	}
	wd := d.WorkingDirectory
	if wd == "" && d.FilePaths != nil {
		wd = d.FilePaths.WorkingDirectory
	}
	var err error
	if b.WorkingDirectory, err = bd.dir("working-directory", wd); err != nil {
		return err
	}
	if d.FilePaths != nil {
		if b.TempDirectory, err = bd.dir("file-paths.temp-directory", d.FilePaths.TempDirectory); err != nil {
			return err
		}
	}
	if d.Resources != nil && d.Resources.Cleanup != nil {
		for i, fc := range d.Resources.Cleanup.FinalCommands {
			c, err := bd.command(fmt.Sprintf("resources.cleanup final-command %d", i+1), &Exec{Command: fc})
			if err != nil {
				return err
			}
			b.Cleanup = append(b.Cleanup, *c)
		}
	}
	b.Timeout = d.Timeout
	if d.Resources != nil && d.Resources.Timeout > 0 {
		b.Timeout = d.Resources.Timeout
	}
	toolTimeout := d.Timeout
	if toolTimeout == 0 && d.Resources != nil {
		toolTimeout = d.Resources.Timeout
	}

	if err := bd.checkPlatform(); err != nil {
		return err
	}
	switch {
	case len(d.Steps) > 0:
		for i := range d.Steps {
			s, err := bd.step(&d.Steps[i], toolTimeout)
			if err != nil {
				return err
			}
			b.Steps = append(b.Steps, *s)
		}
	default:
		ex, err := bd.singleExec()
		if err != nil {
			return err
		}
		s, err := bd.step(&Step{Name: "main", Exec: ex, Input: d.Input}, toolTimeout)
		if err != nil {
			return err
		}
		b.Steps = append(b.Steps, *s)
	}
	return nil
}

// singleExec returns the command of a single-step tool, choosing among
// commands.platforms for the platform: on linux linux, then unix, then
// default; on macos macos, then unix, then default.
func (bd *binder) singleExec() (*Exec, error) {
	d := bd.d
	if d.Exec != nil {
		return d.Exec, nil
	}
	if d.Commands == nil {
		return nil, fmt.Errorf("bind %s: the tool has no command (bash, run, script, commands or steps): %w", d.Name, ErrUnsupportedExec)
	}
	order := []string{bd.env.Platform, "unix"}
	for _, k := range order {
		if c := d.Commands.Platforms[k]; c != "" {
			return &Exec{Kind: "", Command: c}, nil
		}
	}
	if d.Commands.Default != "" {
		return &Exec{Kind: "", Command: d.Commands.Default}, nil
	}
	return nil, fmt.Errorf("bind %s: commands has no entry for %s, unix or default; add commands.platforms.%s or commands.default: %w",
		d.Name, bd.env.Platform, bd.env.Platform, ErrUnsupportedExec)
}

func (bd *binder) checkPlatform() error {
	switch bd.env.Platform {
	case "linux", "macos":
	default:
		return fmt.Errorf("bind %s: platform %q is not supported; tools run on linux (or macos): %w", bd.d.Name, bd.env.Platform, ErrUnsupportedExec)
	}
	if len(bd.d.Platforms) == 0 {
		return nil
	}
	for _, p := range bd.d.Platforms {
		if p == bd.env.Platform || p == "unix" || (p == "darwin" && bd.env.Platform == "macos") {
			return nil
		}
	}
	return fmt.Errorf("bind %s: the tool lists platforms [%s], which do not include %s: %w",
		bd.d.Name, strings.Join(bd.d.Platforms, ", "), bd.env.Platform, ErrUnsupportedExec)
}

// dir substitutes a working directory and expands a leading ~.
func (bd *binder) dir(what, wd string) (string, error) {
	s, _, err := bd.plain(what, wd, false)
	if err != nil || s == "" {
		return s, err
	}
	if bd.d.FilePaths != nil && bd.d.FilePaths.Normalize {
		s = strings.ReplaceAll(s, `\`, "/")
	}
	if s == "~" || strings.HasPrefix(s, "~/") {
		if bd.env.Home == "" {
			return "", fmt.Errorf("bind %s: %s %q starts with ~ but no home directory was given: %w", bd.d.Name, what, s, ErrUnsupportedExec)
		}
		s = filepath.Join(bd.env.Home, s[1:])
	}
	return s, nil
}

// commandSpec says how a kind of command is executed.
type commandSpec struct {
	syntax Syntax
	prefix []string
	interp string // set for interpreters whose quoting we do not do
}

// specFor maps an exec key (and script shell) to its syntax and argv prefix:
//
//	bash                  /bin/bash -c SCRIPT
//	commands:             /bin/sh -c SCRIPT
//	script (no shell, sh) /bin/sh -c SCRIPT
//	script bash           /bin/bash -c SCRIPT
//	script dash|ash|ksh|zsh|mksh   SHELL -c SCRIPT (POSIX quoting)
//	script pwsh|powershell pwsh -NoLogo -NoProfile -NonInteractive -Command SCRIPT
//	script python|python3 python3 -c SCRIPT   (Python quoting, subst_python.go)
//	script node           node -e SCRIPT      (escaped references refused)
//	script ruby|perl      SHELL -e SCRIPT     (escaped references refused)
//	script other          SHELL -c SCRIPT     (escaped references refused)
//	pwsh                  pwsh … -Command SCRIPT
//	run                   the template split into words, no shell
//	cmd                   refused: Windows CMD does not exist on linux
func specFor(name string, ex *Exec) (commandSpec, error) {
	pwsh := []string{"pwsh", "-NoLogo", "-NoProfile", "-NonInteractive", "-Command"}
	switch ex.Kind {
	case ExecBash:
		return commandSpec{syntax: SyntaxBash, prefix: []string{"/bin/bash", "-c"}}, nil
	case "":
		return commandSpec{syntax: SyntaxSh, prefix: []string{"/bin/sh", "-c"}}, nil
	case ExecPwsh:
		return commandSpec{syntax: SyntaxPwsh, prefix: pwsh}, nil
	case ExecRun:
		return commandSpec{syntax: SyntaxArgv}, nil
	case ExecCmd:
		return commandSpec{}, fmt.Errorf("bind %s: cmd: runs Windows CMD, which does not exist on linux; use bash: (or sh via script:), or give a linux command in commands.platforms: %w", name, ErrUnsupportedExec)
	case ExecScript:
		sh := strings.TrimSpace(ex.Shell)
		switch path.Base(sh) {
		case "", ".", "sh":
			return commandSpec{syntax: SyntaxSh, prefix: []string{"/bin/sh", "-c"}}, nil
		case "bash":
			return commandSpec{syntax: SyntaxBash, prefix: []string{"/bin/bash", "-c"}}, nil
		case "dash", "ash", "ksh", "mksh", "zsh":
			return commandSpec{syntax: SyntaxSh, prefix: []string{sh, "-c"}}, nil
		case "pwsh", "powershell", "pwsh.exe", "powershell.exe":
			return commandSpec{syntax: SyntaxPwsh, prefix: pwsh}, nil
		case "cmd", "cmd.exe":
			return commandSpec{}, fmt.Errorf("bind %s: shell: cmd is Windows CMD, which does not exist on linux; use bash or sh: %w", name, ErrUnsupportedExec)
		case "python", "python3":
			return commandSpec{syntax: SyntaxPython, prefix: []string{"python3", "-c"}}, nil
		case "node", "nodejs":
			return commandSpec{syntax: SyntaxPlain, prefix: []string{"node", "-e"}, interp: "node"}, nil
		case "ruby", "perl":
			return commandSpec{syntax: SyntaxPlain, prefix: []string{sh, "-e"}, interp: path.Base(sh)}, nil
		default:
			return commandSpec{syntax: SyntaxPlain, prefix: []string{sh, "-c"}, interp: sh}, nil
		}
	}
	return commandSpec{}, fmt.Errorf("bind %s: unknown execution key %q: %w", name, ex.Kind, ErrUnsupportedExec)
}

func (bd *binder) command(where string, ex *Exec) (*BoundCommand, error) {
	spec, err := specFor(bd.d.Name, ex)
	if err != nil {
		return nil, err
	}
	c := &BoundCommand{
		Kind: ex.Kind, Shell: ex.Shell, Syntax: spec.syntax,
		tmpl: ParseTemplate(ex.Command, spec.syntax, bd.knownRef), prefix: spec.prefix, interp: spec.interp, b: bd.b,
	}
	if c.Argv, c.Command, err = c.render(nil, false); err != nil {
		return nil, fmt.Errorf("bind %s: %s: %w", bd.d.Name, where, err)
	}
	if _, c.MaskedCommand, err = c.render(nil, true); err != nil {
		return nil, fmt.Errorf("bind %s: %s: %w", bd.d.Name, where, err)
	}
	return c, nil
}

func (bd *binder) step(s *Step, toolTimeout time.Duration) (*BoundStep, error) {
	where := "step " + s.Name
	bs := &BoundStep{
		Name: s.Name, UseTool: s.UseTool, Output: s.Output, ContinueOnError: s.ContinueOnError,
		Parallel: s.Parallel, WaitFor: s.WaitFor, Timeout: s.Timeout,
	}
	bs.BoundCommand.b = bd.b
	if bs.Timeout == 0 {
		bs.Timeout = toolTimeout
	}
	if s.Exec != nil {
		c, err := bd.command(where, s.Exec)
		if err != nil {
			return nil, err
		}
		bs.BoundCommand = *c
	} else if s.UseTool == "" {
		return nil, fmt.Errorf("bind %s: %s has neither a command nor use-tool: %w", bd.d.Name, where, ErrUnsupportedExec)
	}
	if len(s.With) > 0 {
		bs.With = map[string]string{}
		for k, v := range s.With {
			out, _, err := bd.plain(where+" with."+k, v, false)
			if err != nil {
				return nil, err
			}
			bs.With[k] = out
		}
	}
	var err error
	if bs.Cwd, err = bd.dir(where+" working-directory", s.WorkingDirectory); err != nil {
		return nil, err
	}
	if bs.Cwd == "" {
		bs.Cwd = bd.b.WorkingDirectory
	} else if !filepath.IsAbs(bs.Cwd) && bd.b.WorkingDirectory != "" {
		bs.Cwd = filepath.Join(bd.b.WorkingDirectory, bs.Cwd)
	}
	if len(bd.b.Env) > 0 || len(s.Environment) > 0 {
		bs.Env = map[string]string{}
		for k, v := range bd.b.Env {
			bs.Env[k] = v
		}
		for k, v := range s.Environment {
			out, _, err := bd.plain(where+" environment."+k, v, false)
			if err != nil {
				return nil, err
			}
			bs.Env[k] = out
		}
	}
	if bs.Input, bs.inputTmpl, err = bd.plain(where+" input", s.Input, true); err != nil {
		return nil, err
	}
	if bs.RunCondition, bs.condTmpl, err = bd.plain(where+" run-condition", s.RunCondition, false); err != nil {
		return nil, err
	}
	if s.ErrorHandling != nil {
		bs.Retry = s.ErrorHandling.Retry
		if s.ErrorHandling.Fallback != "" {
			kind := ExecBash
			if s.Exec != nil {
				kind = s.Exec.Kind
			}
			fb := &Exec{Kind: kind, Command: s.ErrorHandling.Fallback}
			if s.Exec != nil {
				fb.Shell = s.Exec.Shell
			}
			if bs.Fallback, err = bd.command(where+" fallback", fb); err != nil {
				return nil, err
			}
		}
	}
	return bs, nil
}

// substituteSteps substitutes step references {NAME.output}, {NAME.error}
// and {NAME.exit-code} whose step is in outputs into a template written in
// syntax, escaping each for its quoting context (verbatim for SyntaxPlain
// and SyntaxArgv words). Other braces stay as written. It is for text that
// was not bound with Bind (cleanup commands, ad-hoc conditions); bound
// steps use BoundCommand.Resolve, which renders in one pass.
func substituteSteps(text string, syntax Syntax, outputs map[string]StepOutput) (string, error) {
	b := &Bound{stepSet: map[string]bool{}}
	for k := range outputs {
		b.stepSet[k] = true
	}
	t := ParseTemplate(text, syntax, func(n string) bool {
		step, _, ok := strings.Cut(n, ".")
		return ok && b.stepSet[step]
	})
	return t.render(b.resolver(outputs, false, syntax != SyntaxPlain))
}

// syntaxOf returns the syntax a command of kind (and script shell) is
// parsed with; the second result is false for kinds that cannot run here
// (cmd) or interpreters whose quoting is not supported.
func syntaxOf(kind ExecKind, shell string) (Syntax, bool) {
	spec, err := specFor("", &Exec{Kind: kind, Shell: shell})
	if err != nil || spec.interp != "" {
		return SyntaxPlain, false
	}
	return spec.syntax, true
}

// MergeAlias returns the definition an alias stands for: a copy of base
// with the alias's name, description (if set), tags and default-parameters
// (which act as defaults; the alias's own values win over base's).
func MergeAlias(alias, base *Definition) *Definition {
	out := *base
	out.Name = alias.Name
	if alias.Description != "" {
		out.Description = alias.Description
	}
	if len(alias.Tags) > 0 {
		out.Tags = alias.Tags
	}
	out.Type = ""
	out.BaseTool = ""
	dp := map[string]string{}
	for k, v := range base.DefaultParameters {
		dp[k] = v
	}
	for k, v := range alias.DefaultParameters {
		dp[k] = v
	}
	out.DefaultParameters = dp
	out.Source = alias.Source
	if x := base.Sandboxed; x != nil && x.ExposedAs != nil && x.ExposedAs.Name != "" {
		// The alias is a tool of its own name: only the base's parameter
		// names carry over.
		sb, ex := *x, *x.ExposedAs
		ex.Name = ""
		sb.ExposedAs = &ex
		out.Sandboxed = &sb
	}
	return &out
}
