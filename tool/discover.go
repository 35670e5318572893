package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// Discovery of self-describing executables (specs/001).
//
// A script found in a directory is asked about itself with up to four
// probes, in this order: the simple JSON ping ('{"__test__": true}' as
// argv[1]), the multi-schema dump, the single-schema dump and --help. The
// caller runs each probe (inside a sandbox: discovering a script must
// never run it on the host) and this file only interprets what the probes
// printed, so every branch is a table test.
//
// Every tool discovered is written as a CYCOD definition that runs the
// script with the simple JSON convention: the call's parameters become one
// JSON object in argv[1]; the script's JSON answer is the output, and an
// answer {"error": ...} fails the call. The command is a bash script in
// which each parameter is JSON-encoded by its transform
// (JSON.stringify(value)) and substituted as an escaped shell word, so no
// value can break out of its place in the shell or in the JSON object.
// Each member is named as the script names the property, whatever name
// the parameter got in the definition (see discover_names.go).

// ProbeKind names one probe of a script.
type ProbeKind string

const (
	ProbePing        ProbeKind = "ping"
	ProbeMultiSchema ProbeKind = "multi-schema"
	ProbeSchema      ProbeKind = "schema"
	ProbeHelp        ProbeKind = "help"
)

// PingArg is the simple JSON convention's test argument.
const PingArg = `{"__test__": true}`

// ProbeArg returns the argument a probe passes as argv[1].
func ProbeArg(k ProbeKind) string {
	switch k {
	case ProbePing:
		return PingArg
	case ProbeMultiSchema:
		return "--fractalic-dump-multi-schema"
	case ProbeSchema:
		return "--fractalic-dump-schema"
	case ProbeHelp:
		return "--help"
	}
	return ""
}

// ConventionSimpleJSON: the parameters go as one JSON object in argv[1].
const ConventionSimpleJSON = "simple-json"

// Discovery results.
const (
	ResultRegistered = "registered"
	ResultSkipped    = "skipped"
)

// Script is one executable found for discovery.
type Script struct {
	// File is the name as found in the directory.
	File string `json:"file"`
	// Path is the absolute path with symlinks resolved: what is bound into
	// the sandbox and granted to the generated tool.
	Path string `json:"path"`
	// Argv runs the script: [Path] for an executable file, or the
	// interpreter of its #! line followed by Path.
	Argv []string `json:"argv"`
	// Interpreter is the program its #! line runs, as a sandbox finds it
	// (/usr/bin/env python3 is /usr/bin/python3); "" for a binary.
	Interpreter string `json:"interpreter,omitempty"`
	// HostInterpreter is the program of that name on the invoking user's
	// PATH where it is another one, which a sandbox does not see (a
	// version manager's python under the home directory).
	HostInterpreter string `json:"host_interpreter,omitempty"`
	// Reads are what its probes and its tools may read: its folder, so
	// the modules beside it import (the script alone where the folder is
	// a home or shared directory), and an interpreter's environment.
	Reads []string `json:"reads,omitempty"`
}

// ReadPaths are the paths s's sandboxes may read: Reads, or the script
// alone.
func (s Script) ReadPaths() []string {
	if len(s.Reads) > 0 {
		return s.Reads
	}
	return []string{s.Path}
}

// ProbeOutput is what one probe of a script did.
type ProbeOutput struct {
	Kind     ProbeKind `json:"kind"`
	ExitCode int       `json:"exit_code"`
	Stdout   string    `json:"stdout"`
	Stderr   string    `json:"stderr"`
	TimedOut bool      `json:"timed_out,omitempty"`
	// Error is set when the sandbox itself failed (nothing meaningful ran).
	Error      string `json:"error,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// Prober runs one probe of the script (inside a sandbox) and reports it.
type Prober func(k ProbeKind) ProbeOutput

// Discovery is what discovery found out about one script.
type Discovery struct {
	File   string `json:"file"`
	Path   string `json:"path"`
	Result string `json:"result"` // registered or skipped
	// Interpreter is the program that ran the probes (Script.Interpreter).
	Interpreter string `json:"interpreter,omitempty"`
	// Convention is how the tools run: simple-json, cli-schema or
	// cli-help; "" when skipped.
	Convention string `json:"convention,omitempty"`
	// Source says which probe described the tools: ping, multi-schema,
	// schema (the simple JSON answer alone gives a tool without parameters).
	Source ProbeKind     `json:"source,omitempty"`
	Tools  []*Definition `json:"-"`
	Names  []string      `json:"tools"`
	// Why explains a skip, or notes something the user should know.
	Why    string        `json:"why,omitempty"`
	Probes []ProbeOutput `json:"probes"`
	// Written lists the definition files written (discover --write).
	Written []string `json:"written,omitempty"`
}

// Discover probes s in the order of specs/001 and turns the answers into
// definitions. probe is called at most once per kind.
func Discover(s Script, probe Prober) *Discovery {
	d := &Discovery{File: s.File, Path: s.Path, Interpreter: s.Interpreter, Probes: []ProbeOutput{}}
	run := func(k ProbeKind) ProbeOutput {
		o := probe(k)
		o.Kind = k
		d.Probes = append(d.Probes, o)
		return o
	}
	skip := func(why string) *Discovery {
		d.Result, d.Why, d.Tools, d.Names = ResultSkipped, why+missingModuleHint(s, d.Probes), nil, []string{}
		return d
	}

	ping := run(ProbePing)
	simple := IsSimpleAnswer(ping.Stdout)
	var notes []string

	var schemas []FunctionDecl
	var source ProbeKind
	multi := run(ProbeMultiSchema)
	if decls, err := ParseSchemaDump(multi.Stdout, true); err == nil {
		schemas, source = decls, ProbeMultiSchema
	}
	if ping.TimedOut && multi.TimedOut {
		// A script that hangs on two different arguments will hang on the
		// rest: each probe would cost its whole timeout.
		return skip("no probe answered: ping and multi-schema dump timed out; not probed further")
	}
	var single ProbeOutput
	var singleErr error
	if schemas == nil {
		single = run(ProbeSchema)
		var decls []FunctionDecl
		if decls, singleErr = ParseSchemaDump(single.Stdout, false); singleErr == nil {
			schemas, source = decls, ProbeSchema
		}
	}

	convention := ConventionSimpleJSON
	switch {
	case schemas != nil && !simple && looksLikeUsage(ping):
		convention = ConventionCLISchema
		notes = append(notes, "refused the simple JSON ping with a usage message: a command line, run with --option=VALUE arguments from its schema")
	case schemas != nil:
		if !simple {
			notes = append(notes, "did not answer the simple JSON ping ("+probeSummary(ping)+"); assumed to take its parameters as JSON in argv[1]")
		}
	case simple:
		source = ProbePing
		notes = append(notes, "answers the simple JSON ping but dumps no schema: registered without parameters")
		schemas = []FunctionDecl{{Input: map[string]any{"type": "object", "properties": map[string]any{}}}}
	default:
		help := run(ProbeHelp)
		text := help.Stdout
		if strings.TrimSpace(text) == "" {
			text = help.Stderr
		}
		if help.ExitCode == 0 && !help.TimedOut && help.Error == "" && strings.TrimSpace(text) != "" {
			h, ok := ParseHelp(text)
			if !ok {
				return skip(fmt.Sprintf("answers only --help, without a usage: line (%q), so its arguments are not machine-readable; write a definition by hand", firstTextLine(text)))
			}
			def, err := HelpDefinition(s, h, scriptName(s.File))
			if err != nil {
				return skip(err.Error())
			}
			d.Result, d.Convention, d.Source = ResultRegistered, ConventionCLIHelp, ProbeHelp
			d.Tools, d.Names = []*Definition{def}, []string{def.Name}
			d.Why = "described by --help only: runs as a command line (--option=VALUE), not with the simple JSON convention"
			return d
		}
		why := "no probe answered: ping: " + probeSummary(ping)
		if single.Kind != "" && singleErr != nil && strings.TrimSpace(single.Stdout) != "" {
			why += "; schema dump: " + singleErr.Error()
		} else if single.Kind != "" {
			why += "; schema dump: " + probeSummary(single)
		}
		return skip(why)
	}

	base := scriptName(s.File)
	seen := map[string]string{} // definition name -> the script's name
	for i, fd := range schemas {
		name := fd.Name
		if name == "" {
			if len(schemas) > 1 {
				return skip(fmt.Sprintf("the %s dump lists %d tools and tool %d has no name", source, len(schemas), i+1))
			}
			name = base
		}
		if !functionNameRe().MatchString(name) {
			return skip(fmt.Sprintf("tool name %q: names must be 1 to 64 letters, digits, '_' or '-'", name))
		}
		own := ToolNameFor(name)
		if other, dup := seen[own]; dup {
			if other == name {
				return skip(fmt.Sprintf("the %s dump names tool %q twice", source, name))
			}
			return skip(fmt.Sprintf("the %s dump names tools %q and %q, which both become the tool name %s", source, other, name, own))
		}
		seen[own] = name
		action := ""
		if len(schemas) > 1 {
			action = name
		}
		var def *Definition
		var err error
		if convention == ConventionCLISchema {
			def, err = CLIDefinition(s, fd, name, action)
		} else {
			def, err = DefinitionFor(s, fd, name, action)
		}
		if err != nil {
			return skip(err.Error())
		}
		d.Tools = append(d.Tools, def)
		d.Names = append(d.Names, def.Name)
	}
	d.Result, d.Convention, d.Source = ResultRegistered, convention, source
	switch {
	case len(schemas) > 1 && convention == ConventionCLISchema:
		notes = append(notes, "several tools in one script: each call passes the tool's name as the first argument")
	case len(schemas) > 1:
		notes = append(notes, `several tools in one script: each call's JSON carries "action": TOOL`)
	}
	d.Why = strings.Join(notes, "; ")
	return d
}

// moduleRe finds the module a Python script failed to import.
var moduleRe = lazyRegexp(`(?:ModuleNotFoundError|ImportError): No module named '([^']+)'`)

// missingModuleHint says, when a probe failed to import a module, which
// interpreter ran and how to run the script with another.
func missingModuleHint(s Script, probes []ProbeOutput) string {
	for _, p := range probes {
		m := moduleRe().FindStringSubmatch(p.Stderr)
		if m == nil {
			continue
		}
		ran := s.Interpreter
		if ran == "" && len(s.Argv) > 0 {
			ran = s.Argv[0]
		}
		h := fmt.Sprintf("; the interpreter that ran is %s, which has no module %s", ran, m[1])
		if s.HostInterpreter != "" {
			h += fmt.Sprintf(" (the %s on your PATH, %s, is not seen in a sandbox, which shows only the system directories)", filepath.Base(ran), s.HostInterpreter)
		}
		h += "; install the package for " + ran + ", or run the tools with an interpreter that has it: sandboxed discover --interpreter VENV/bin/python (probes and the written definitions then run it and may read its environment)"
		return h
	}
	return ""
}

// probeSummary says in a few words how a probe ended.
func probeSummary(o ProbeOutput) string {
	switch {
	case o.Error != "":
		return "sandbox failed: " + o.Error
	case o.TimedOut:
		return "timed out"
	case o.ExitCode != 0:
		s := fmt.Sprintf("exit %d", o.ExitCode)
		if l := lastLine(o.Stderr); l != "" {
			s += " (" + l + ")"
		} else if l := lastLine(o.Stdout); l != "" {
			s += " (" + l + ")"
		}
		lower := strings.ToLower(o.Stderr)
		switch {
		case strings.Contains(lower, "permission denied"):
			s += "; probes run as nobody: the script and every directory above it must be world-readable"
		case o.ExitCode == 127 && strings.Contains(lower, "no such file or directory"):
			s += "; the script's #! interpreter must exist in the sandbox, which sees only the host's system directories"
		}
		return s
	case strings.TrimSpace(o.Stdout) == "":
		return "no output"
	}
	return "unexpected answer " + clip(firstTextLine(o.Stdout), 80)
}

func firstTextLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" {
			return clip(t, 120)
		}
	}
	return ""
}

func lastLine(s string) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := len(ls) - 1; i >= 0; i-- {
		if t := strings.TrimSpace(ls[i]); t != "" {
			return clip(t, 160)
		}
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// BaseName is the tool name a file gives: its name without extension,
// with characters a tool name may not hold replaced by '_' and leading
// '_' and '-' dropped (ToolNameFor).
func BaseName(file string) string {
	return ToolNameFor(scriptName(file))
}

var badNameChar = lazyRegexp(`[^A-Za-z0-9_-]`)

// jsonValues decodes the JSON values printed in out, starting at the first
// '{' or '[' (a banner line before the answer is tolerated) and stopping
// at the first thing that is not JSON.
func jsonValues(out string) []any {
	i := strings.IndexAny(out, "{[")
	if i < 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(out[i:]))
	dec.UseNumber()
	var vs []any
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			return vs
		}
		vs = append(vs, v)
	}
}

// IsSimpleAnswer reports whether out holds the simple JSON convention's
// answer to the ping, {"success": true, "_simple": true}. Scripts that
// print it more than once, or after a banner line, still count.
func IsSimpleAnswer(out string) bool {
	for _, v := range jsonValues(out) {
		m, ok := v.(map[string]any)
		if ok && m["success"] == true && m["_simple"] == true {
			return true
		}
	}
	return false
}

// FunctionDecl is one tool as a schema dump declares it.
type FunctionDecl struct {
	Name        string
	Description string
	// Input is the JSON Schema of the parameters (type object).
	Input map[string]any
	// HasOutput is set when the dump declares an output schema.
	HasOutput bool
}

// ParseSchemaDump reads a schema dump: with multi, an array of function
// declarations (or an object holding one under "tools"); otherwise one
// declaration or an array of them. A declaration is OpenAI-style
// {name, description, parameters}, Anthropic-style {name, description,
// input_schema, output_schema}, MCP-style {inputSchema, outputSchema},
// {"type": "function", "function": {...}}, or a bare JSON Schema of the
// parameters ({"type": "object", "properties": ...}), whose description
// or title describes the tool.
func ParseSchemaDump(out string, multi bool) ([]FunctionDecl, error) {
	vs := jsonValues(out)
	if len(vs) == 0 {
		if strings.TrimSpace(out) == "" {
			return nil, fmt.Errorf("no output")
		}
		return nil, fmt.Errorf("output is not JSON (%s)", clip(firstTextLine(out), 60))
	}
	v := vs[0]
	if m, ok := v.(map[string]any); ok && multi {
		if ts, ok := m["tools"].([]any); ok {
			v = ts
		}
	}
	var list []any
	switch x := v.(type) {
	case []any:
		list = x
	case map[string]any:
		if multi {
			return nil, fmt.Errorf("the multi-schema dump is an object, not a list")
		}
		list = []any{x}
	default:
		return nil, fmt.Errorf("the dump is neither an object nor a list")
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("the dump lists no tools")
	}
	var decls []FunctionDecl
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("entry %d of the dump is not an object", i+1)
		}
		fd, err := parseDecl(m)
		if err != nil {
			if len(list) > 1 {
				return nil, fmt.Errorf("entry %d: %w", i+1, err)
			}
			return nil, err
		}
		decls = append(decls, fd)
	}
	return decls, nil
}

func parseDecl(m map[string]any) (FunctionDecl, error) {
	if f, ok := m["function"].(map[string]any); ok && m["type"] == "function" {
		return parseDecl(f)
	}
	// A ping answer or an error answer is not a schema.
	if _, ok := m["error"]; ok && len(m) <= 2 {
		return FunctionDecl{}, fmt.Errorf("the script answered with an error: %s", clip(fmt.Sprint(m["error"]), 100))
	}
	fd := FunctionDecl{}
	fd.Name, _ = m["name"].(string)
	fd.Description, _ = m["description"].(string)
	var input any
	var key string
	for _, k := range []string{"parameters", "input_schema", "inputSchema"} {
		if v, ok := m[k]; ok {
			input, key = v, k
			break
		}
	}
	for _, k := range []string{"output_schema", "outputSchema"} {
		if _, ok := m[k]; ok {
			fd.HasOutput = true
		}
	}
	if key == "" {
		_, props := m["properties"]
		if m["type"] != "object" && !props {
			return FunctionDecl{}, fmt.Errorf("the dump has no parameters, input_schema or properties")
		}
		// A bare JSON Schema: the name is the file's.
		input, key = m, "schema"
		fd.Name = ""
		if fd.Description == "" {
			fd.Description, _ = m["title"].(string)
		}
	}
	in, ok := input.(map[string]any)
	if !ok {
		return FunctionDecl{}, fmt.Errorf("%s is not an object", key)
	}
	if t, has := in["type"]; has && t != "object" {
		return FunctionDecl{}, fmt.Errorf("%s has type %v; a tool's parameters are an object", key, t)
	}
	fd.Input = in
	return fd, nil
}

// DefinitionFor builds the definition of one discovered tool, which the
// script calls name. action, when set, is added to every call's JSON as
// "action" (a script with several tools tells them apart by it), unless
// the schema declares "action". Names CYCOD cannot spell are mapped
// (ToolNameFor, ParamNamesFor); the script still gets its own.
func DefinitionFor(s Script, fd FunctionDecl, name, action string) (*Definition, error) {
	if err := checkArgv(s); err != nil {
		return nil, err
	}
	params, orig, err := schemaParams(fd, name)
	if err != nil {
		return nil, err
	}
	for _, p := range params {
		if orig[p.Name] == "action" {
			action = ""
		}
	}

	exec := &Exec{Kind: ExecBash, Command: simpleJSONCommand(s, params, orig, action)}
	d := discovered(s, ToolNameFor(name), fd.Description, "Discovered from "+s.File+" (simple JSON convention)", exec, params, ConventionSimpleJSON)
	exposeAs(d, name, orig)
	if err := keepSchemas(d, fd, orig); err != nil {
		return nil, fmt.Errorf("tool %s: %w", name, err)
	}
	return d, nil
}

// keepSchemas puts the script's own schema of each parameter under
// sandboxed.parameter-schemas: values reach the script with the JSON
// types the script declared (a union, an array of objects, an untyped
// value), checked against that schema, and agents see it as the script
// wrote it. A schema binding could not check is refused.
func keepSchemas(d *Definition, fd FunctionDecl, orig map[string]string) error {
	props, _ := fd.Input["properties"].(map[string]any)
	for _, p := range d.Parameters {
		ps, ok := normalizeJSON(props[orig[p.Name]]).(map[string]any)
		if !ok {
			ps = map[string]any{}
		}
		if err := CheckParamSchema(ps); err != nil {
			return fmt.Errorf("parameter %q: %w", orig[p.Name], err)
		}
		if d.Sandboxed == nil {
			d.Sandboxed = &SandboxedExt{}
		}
		if d.Sandboxed.ParameterSchemas == nil {
			d.Sandboxed.ParameterSchemas = map[string]ParamSchema{}
		}
		d.Sandboxed.ParameterSchemas[p.Name] = ps
	}
	return nil
}

// discovered is the definition of a tool found in script s: it reads only
// the script, at reduced privilege, in the process tier, tagged run (the
// execute tier of spec 003, which the default policy allows) and with the
// convention it was found by. fallback is the description when the script
// gives none.
func discovered(s Script, name, desc, fallback string, exec *Exec, params []Parameter, convention string) *Definition {
	desc = strings.TrimSpace(desc)
	if desc == "" {
		desc = fallback
	}
	var perms []string
	for _, r := range s.ReadPaths() {
		perms = append(perms, "filesystem:read:"+r)
	}
	why := "reads its own script"
	if len(s.Reads) > 0 && s.Reads[0] != s.Path {
		why = "reads its own folder (the modules beside it)"
	}
	if len(s.Reads) > 1 {
		why += " and its interpreter's environment"
	}
	return &Definition{
		Name:        name,
		Description: desc,
		Exec:        exec,
		Parameters:  params,
		Security: Security{
			ExecutionPrivilege:  PrivilegeReduced,
			Isolation:           IsolationProcess,
			RequiredPermissions: perms,
			Justification:       why,
		},
		Tags:     []string{"run", "discovered"},
		Metadata: &Metadata{Category: "discovered", Tags: []string{convention}},
	}
}

// checkArgv refuses a script whose command cannot be written into a
// definition literally.
func checkArgv(s Script) error {
	if len(s.Argv) == 0 || s.Path == "" {
		return fmt.Errorf("script %s: no command to run it", s.File)
	}
	for _, a := range s.Argv {
		if strings.ContainsAny(a, "{}\n\x00") {
			return fmt.Errorf("path %q holds '{', '}' or a newline, which a definition cannot hold literally; rename it", a)
		}
	}
	return nil
}

// schemaParams turns a declaration's JSON Schema properties into typed
// parameters, each JSON-encoded by its transform: required ones first,
// then by name (JSON objects have no order). orig maps each parameter's
// name to the script's (ParamNamesFor).
func schemaParams(fd FunctionDecl, name string) (params []Parameter, orig map[string]string, err error) {
	props, _ := fd.Input["properties"].(map[string]any)
	required := map[string]bool{}
	if rs, ok := fd.Input["required"].([]any); ok {
		for _, r := range rs {
			if n, ok := r.(string); ok {
				required[n] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		if !validExposedParam(n) {
			return nil, nil, fmt.Errorf("tool %s: parameter %q: a name must be 1 to 128 bytes of text without control characters", name, n)
		}
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if required[names[i]] != required[names[j]] {
			return required[names[i]]
		}
		return names[i] < names[j]
	})
	own := ParamNamesFor(names)
	orig = make(map[string]string, len(names))
	for _, n := range names {
		ps, _ := props[n].(map[string]any)
		p := discoveredParam(own[n], ps, required[n])
		if p.Description == own[n] {
			p.Description = n
		}
		params = append(params, p)
		orig[own[n]] = n
	}
	return params, orig, nil
}

func discoveredParam(name string, s map[string]any, required bool) Parameter {
	p := Parameter{Name: name, Required: required, Transform: "JSON.stringify(value)"}
	p.Description, _ = s["description"].(string)
	if p.Description == "" {
		p.Description = name
	}
	t, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok {
		// A union: its first type that is not null stands for it in
		// CYCOD's type; the schema kept beside says the rest.
		for _, e := range ts {
			if n, _ := e.(string); n != "" && n != "null" {
				t = n
				break
			}
		}
	}
	switch t {
	case "string", "boolean", "array", "object", "number":
		p.Type = ParamType(t)
	case "integer":
		p.Type = TypeNumber
	default:
		p.Type = TypeString

	}
	v := &Validation{}
	set := false
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		v.Enum, set = normalizeEnum(e), true
	}
	num := func(k string) *float64 {
		if n, ok := s[k].(json.Number); ok {
			if f, err := n.Float64(); err == nil {
				set = true
				return &f
			}
		}
		return nil
	}
	integer := func(k string) *int {
		if f := num(k); f != nil && *f >= 0 && *f == float64(int(*f)) {
			i := int(*f)
			return &i
		}
		return nil
	}
	if p.Type == TypeNumber {
		v.Minimum, v.Maximum = num("minimum"), num("maximum")
	}
	if p.Type == TypeString {
		v.MinLength, v.MaxLength = integer("minLength"), integer("maxLength")
	}
	if p.Type == TypeArray {
		v.MinItems, v.MaxItems = integer("minItems"), integer("maxItems")
	}
	if set {
		p.Validation = v
	}
	if dv, ok := s["default"]; ok && !required {
		switch x := dv.(type) {
		case string:
			if !strings.ContainsAny(x, "{}") && p.Type == TypeString {
				p.Default, p.HasDefault = x, true
			}
		case bool:
			if p.Type == TypeBoolean {
				p.Default, p.HasDefault = x, true
			}
		case json.Number:
			if f, err := x.Float64(); err == nil && p.Type == TypeNumber {
				p.Default, p.HasDefault = f, true
			}
		}
	}
	return p
}

func normalizeEnum(e []any) []any {
	out := make([]any, len(e))
	for i, x := range e {
		if n, ok := x.(json.Number); ok {
			if f, err := n.Float64(); err == nil {
				out[i] = f
				continue
			}
		}
		out[i] = x
	}
	return out
}

// simpleJSONCommand is the bash script of a discovered tool: it builds the
// JSON object from the parameters that have a value (each already JSON
// text, by its transform, and an escaped shell word, by substitution),
// runs the script with it as argv[1], prints the answer, and fails the call
// when the answer is {"error": ...}.
func simpleJSONCommand(s Script, params []Parameter, orig map[string]string, action string) string {
	var b bytes.Buffer
	b.WriteString("# Generated by sandboxed discover from " + s.File + " (simple JSON convention).\n")
	b.WriteString("j=\n")
	if action != "" {
		fmt.Fprintf(&b, "j=%s\n", ShellQuote(jsonKey("action")+":"+jsonKey(action)))
	}
	// Each member's name is written as JSON text: the script's own name.
	b.WriteString("add() {\n  [ -n \"$2\" ] || return 0\n  [ -z \"$j\" ] || j=\"$j,\"\n  j=\"$j$1:$2\"\n}\n")
	for _, p := range params {
		fmt.Fprintf(&b, "add %s {%s}\n", ShellQuote(jsonKey(orig[p.Name])), p.Name)
	}
	q := make([]string, len(s.Argv))
	for i, a := range s.Argv {
		q[i] = ShellQuote(a)
	}
	fmt.Fprintf(&b, "out=$(%s \"{$j}\")\nrc=$?\n", strings.Join(q, " "))
	b.WriteString("printf '%s\\n' \"$out\"\n")
	b.WriteString("re='^[[:space:]]*[{][[:space:]]*\"error\"[[:space:]]*:'\n")
	b.WriteString("if [[ $out =~ $re ]]; then\n  printf 'the tool answered with an error: %s\\n' \"$out\" >&2\n  [ \"$rc\" -ne 0 ] || rc=1\nfi\nexit \"$rc\"\n")
	return b.String()
}
