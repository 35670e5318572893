package tool

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"gopkg.in/yaml.v3"
)

// MaxFileSize bounds a definition file; anything larger is refused before
// parsing.
const MaxFileSize = 4 << 20

// Load reads and parses the definition at path, and records where it came
// from in Source (absolute path, scope, SHA-256 of the bytes, the bytes).
// A definition with problems returns a *LoadError (errors.Is ErrInvalid)
// listing every problem; a missing file wraps ErrNotFound.
func Load(path string, scope Scope) (*Definition, error) {
	data, abs, err := readDefinition(path)
	if err != nil {
		return nil, err
	}
	return build(data, path, abs, scope)
}

// readDefinition reads the definition file at path (a regular file, or a
// link to one, of at most MaxFileSize bytes) and returns its bytes and
// absolute path.
func readDefinition(path string) (data []byte, abs string, err error) {
	abs, err = filepath.Abs(path)
	if err != nil {
		return nil, "", fmt.Errorf("load tool %s: %w", path, err)
	}
	// A FIFO or device would block or never end: only regular files
	// (or symlinks to them) are definitions. Opened without blocking (a
	// FIFO's open would wait for a writer) and checked as opened, so a
	// file swapped after a check is not read either.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, "", fmt.Errorf("load tool %s: %w: no such file", path, ErrNotFound)
		}
		return nil, "", fmt.Errorf("load tool %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, "", fmt.Errorf("load tool %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, "", fmt.Errorf("load tool %s: not a regular file", path)
	}
	data, err = io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, "", fmt.Errorf("load tool %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, "", newLoadError(path, []Diagnostic{{
			Pos: Pos{File: path, Line: 1, Col: 1},
			Msg: fmt.Sprintf("file is larger than %d bytes", MaxFileSize), Hint: "a tool definition is a small YAML file",
		}})
	}
	return data, abs, nil
}

// build parses data, read from path (abs), into the definition Load
// returns.
func build(data []byte, path, abs string, scope Scope) (*Definition, error) {
	def, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	def.Source = Source{Path: abs, Scope: scope, SHA256: hex.EncodeToString(sum[:]), Raw: data}
	return def, nil
}

// Parse parses one definition from data; file names it in positions and
// supplies the tool name when the YAML has no `name` (the file name without
// .yaml/.yml). It checks everything that can be checked without other
// files or the host, and reports every problem at once as a *LoadError.
// Source is left empty except for Source.Raw.
func Parse(data []byte, file string) (def *Definition, err error) {
	l := &defLoader{nodeDecoder: nodeDecoder{file: file, lines: strings.Split(string(data), "\n")}}
	defer func() {
		// yaml.v3 is not supposed to panic; if it does, the input is
		// still only an invalid definition.
		if r := recover(); r != nil {
			def = nil
			err = newLoadError(file, append(l.diags, Diagnostic{
				Pos: Pos{File: file, Line: 1, Col: 1}, Msg: fmt.Sprintf("invalid YAML: %v", r),
			}))
		}
	}()
	def = l.parse(data)
	if err := newLoadError(file, l.diags); err != nil {
		if le := err.(*LoadError); l.truncated {
			last := le.Diags[len(le.Diags)-1].Pos
			le.Diags = append(le.Diags, Diagnostic{Pos: last, Msg: fmt.Sprintf("too many errors; stopped after %d", maxDiags),
				Hint: "fix the errors above and load the file again"})
		}
		return nil, err
	}
	def.Source.Raw = data
	return def, nil
}

// isToolName reports whether s may be a tool name, which becomes a file
// name and a command-line argument: [A-Za-z0-9][A-Za-z0-9._-]*. (Checked
// by hand: every run checks its names, and compiling the expression would
// cost more than all the checks.)
func isToolName(s string) bool {
	if s == "" || !isASCIIAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isASCIIAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// isNameIdent reports whether s may be a parameter or step name, so that
// {NAME} and {STEP.output} can refer to it: [A-Za-z_][A-Za-z0-9_-]*.
func isNameIdent(s string) bool {
	if s == "" || !isASCIILetter(s[0]) && s[0] != '_' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isASCIIAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isASCIIAlnum(c byte) bool { return isASCIILetter(c) || '0' <= c && c <= '9' }

// nameFromFile is the tool name a file gives: its base name without
// .yaml/.yml.
func nameFromFile(file string) string {
	base := filepath.Base(file)
	for _, ext := range []string{".yaml", ".yml"} {
		if strings.HasSuffix(strings.ToLower(base), ext) {
			return base[:len(base)-len(ext)]
		}
	}
	return base
}

// defLoader holds one parse: the definition being filled and the nodes the
// cross-field checks (validate.go) need.
type defLoader struct {
	nodeDecoder
	def *Definition

	sites      []textSite   // texts that may hold {REF}s
	execKeys   []*yaml.Node // top-level execution keys, in order
	shellKey   *yaml.Node   // top-level shell
	shellValue string
	paramKeys  map[string]*yaml.Node       // parameter name -> key node
	stepIndex  map[string]int              // step name -> index
	stepNodes  []*yaml.Node                // step mapping nodes (index = step)
	waitFor    map[int][]*yaml.Node        // step index -> wait-for item nodes
	sensitive  []*yaml.Node                // security.logging.sensitive-parameters items
	testParams map[*yaml.Node][]*yaml.Node // test parameters key nodes
	// exposedParams is sandboxed.exposed-as.parameters.
	exposedParams *yaml.Node
	// paramSchemaNode is sandboxed.parameter-schemas.
	paramSchemaNode *yaml.Node
	// credNodes are the sandboxed.credentials items (index = credential).
	credNodes []*yaml.Node
}

// textSite is a string that is substituted at run time, with what may be
// referenced from it.
type textSite struct {
	node *yaml.Node
	text string
	ctx  refCtx
}

// refCtx says what a text may refer to.
type refCtx struct {
	what  string // for messages: "bash command", "default of parameter X", ...
	step  int    // index of the step the text belongs to; -1 outside steps
	self  bool   // the step's own results may be referenced (fallback)
	steps bool   // step results may be referenced
	desc  bool   // {DESCRIPTION} may be referenced (description-template)
	param string // the text is the default of this parameter
	perm  bool   // a permission: resolved before any step runs
	// cmd, for a command, returns how it runs once the whole definition
	// is read (a script's shell comes after its text), so validate can
	// check where each reference stands in its quoting.
	cmd func() *Exec
}

func (l *defLoader) site(n *yaml.Node, text string, ctx refCtx) {
	if strings.Contains(text, "{") {
		l.sites = append(l.sites, textSite{node: n, text: text, ctx: ctx})
	}
}

func (l *defLoader) parse(data []byte) *Definition {
	l.def = &Definition{}
	l.paramKeys = map[string]*yaml.Node{}
	l.stepIndex = map[string]int{}
	l.waitFor = map[int][]*yaml.Node{}
	l.testParams = map[*yaml.Node][]*yaml.Node{}
	start := Pos{File: l.file, Line: 1, Col: 1}

	if len(bytes.TrimSpace(data)) == 0 {
		l.errAt(start, "a tool needs at least description and one of bash, cmd, pwsh, run, script, commands or steps", "file is empty")
		return l.def
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			l.errAt(start, "a tool needs at least description and one of bash, cmd, pwsh, run, script, commands or steps", "file holds only comments")
		} else {
			l.diags = append(l.diags, l.syntaxDiag(err))
		}
		return l.def
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		l.errf(&extra, "keep one tool per file", "file holds more than one YAML document")
	} else if !errors.Is(err, io.EOF) {
		l.diags = append(l.diags, l.syntaxDiag(err))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		l.errAt(start, "", "file holds no YAML document")
		return l.def
	}
	root := doc.Content[0]
	if !l.aliasCheck(root) {
		return l.def
	}
	if root.Kind != yaml.MappingNode {
		l.errf(root, "a tool definition starts with keys such as name:, description: and bash:", "a tool definition must be a mapping of keys, got %s", nodeKindName(root))
		return l.def
	}
	l.top(root)
	l.finish(root)
	l.validate()
	return l.def
}

// topKeyHints explains keys the CYCOD drafts use that the reference format
// does not have (see COMPAT.md).
var topKeyHints = map[string]string{
	"uses":              "uses: is from a draft that the reference format replaced; compose tools with steps: - use-tool: NAME / with:",
	"with":              "top-level with: is from a draft; pass parameters to another tool with steps: - use-tool: NAME / with:",
	"arguments":         "arguments: is from a draft; put arguments in the command itself with {PARAM} references",
	"tool":              "a single tool call is written as steps: - name: call / use-tool: NAME",
	"mcp":               "MCP tools are not part of the tool format",
	"detailed-help":     "detailed-help belongs to a parameter (parameters.NAME.detailed-help); describe the tool in description",
	"error-handling":    "error-handling belongs to a step; write the command as steps: - name: main / bash: ... / error-handling: ...",
	"continue-on-error": "continue-on-error belongs to a step; the tool-level key is ignore-errors",
	"env":               "did you mean environment: {variables: {...}}?",
}

func (l *defLoader) top(root *yaml.Node) {
	d := l.def
	execKey := func(kind ExecKind) fieldFn {
		return func(k, v *yaml.Node) {
			l.execKeys = append(l.execKeys, k)
			if len(l.execKeys) == 1 {
				l.def.Pos.Exec = l.pos(k)
			}
			s, ok := l.str(v, k.Value)
			if !ok {
				return
			}
			if strings.TrimSpace(s) == "" {
				l.errf(v, "", "%s command is empty", k.Value)
			}
			if d.Exec == nil {
				d.Exec = &Exec{Kind: kind, Command: s}
				l.site(v, s, refCtx{what: k.Value + " command", step: -1, cmd: func() *Exec { return d.Exec }})
			}
		}
	}
	var nameNode *yaml.Node
	fields := map[string]fieldFn{
		"name": func(k, v *yaml.Node) {
			nameNode = v
			d.Name, _ = l.str(v, "name")
		},
		"description": func(k, v *yaml.Node) {
			d.Description, _ = l.str(v, "description")
			if strings.TrimSpace(d.Description) == "" {
				l.errf(v, "say in one sentence what the tool does; agents read it", "description is empty")
			}
		},
		"version":           func(k, v *yaml.Node) { d.Version, _ = l.str(v, "version") },
		"min-cycod-version": func(k, v *yaml.Node) { d.MinCycodVersion, _ = l.str(v, "min-cycod-version") },
		"bash":              execKey(ExecBash),
		"cmd":               execKey(ExecCmd),
		"pwsh":              execKey(ExecPwsh),
		"run":               execKey(ExecRun),
		"script":            execKey(ExecScript),
		"python": func(k, v *yaml.Node) {
			// Compatibility alias (COMPAT.md): python: X is script: X with shell: python3.
			execKey(ExecScript)(k, v)
			if d.Exec != nil && l.execKeys[0] == k {
				d.Exec.Shell = "python3"
			}
		},
		"shell": func(k, v *yaml.Node) {
			l.shellKey = k
			s, ok := l.str(v, "shell")
			if ok && strings.TrimSpace(s) == "" {
				l.errf(v, "", "shell is empty")
			}
			l.shellValue = s
		},
		"commands": func(k, v *yaml.Node) {
			l.execKeys = append(l.execKeys, k)
			if len(l.execKeys) == 1 {
				l.def.Pos.Exec = l.pos(k)
			}
			c := l.commands(v)
			if d.Commands == nil && c != nil {
				d.Commands = c
			}
		},
		"steps": func(k, v *yaml.Node) {
			l.execKeys = append(l.execKeys, k)
			if len(l.execKeys) == 1 {
				l.def.Pos.Exec = l.pos(k)
			}
			l.steps(v)
		},
		"parameters":       func(k, v *yaml.Node) { l.parameters(v) },
		"environment":      func(k, v *yaml.Node) { d.Environment = l.environment(v) },
		"function-calling": func(k, v *yaml.Node) { d.FunctionCalling = l.functionCalling(v) },
		"security":         func(k, v *yaml.Node) { l.security(v) },
		"file-paths":       func(k, v *yaml.Node) { d.FilePaths = l.filePaths(v) },
		"metadata":         func(k, v *yaml.Node) { d.Metadata = l.metadata(v) },
		"resources":        func(k, v *yaml.Node) { d.Resources = l.resources(v) },
		"interactive":      func(k, v *yaml.Node) { d.Interactive, _ = l.boolean(v, "interactive") },
		"interactive-options": func(k, v *yaml.Node) {
			d.InteractiveOptions = l.interactiveOptions(v)
		},
		"type": func(k, v *yaml.Node) {
			d.Type, _ = l.str(v, "type")
			if d.Type != "" && d.Type != "alias" {
				l.errf(v, "the only type is alias (with base-tool); omit type for an ordinary tool", "unknown tool type %q", d.Type)
			}
		},
		"base-tool": func(k, v *yaml.Node) {
			d.BaseTool, _ = l.str(v, "base-tool")
			if d.BaseTool != "" && !isToolName(d.BaseTool) {
				l.errf(v, "", "base-tool %q is not a tool name", d.BaseTool)
			}
		},
		"default-parameters": func(k, v *yaml.Node) { d.DefaultParameters, _ = l.strMap(v, "default-parameters") },
		"tests":              func(k, v *yaml.Node) { d.Tests = l.tests(v) },
		"changelog":          func(k, v *yaml.Node) { d.Changelog = l.changelog(v) },
		"dependencies":       func(k, v *yaml.Node) { d.Dependencies = l.dependencies(v) },
		"debugging":          func(k, v *yaml.Node) { d.Debugging = l.debugging(v) },
		"tags":               func(k, v *yaml.Node) { d.Tags, _ = l.strList(v, "tags", false) },
		"platforms": func(k, v *yaml.Node) {
			d.Platforms, _ = l.strList(v, "platforms", false)
			l.def.Pos.Platforms = l.pos(v)
			l.checkPlatforms(v, d.Platforms)
		},
		"working-directory": func(k, v *yaml.Node) {
			d.WorkingDirectory, _ = l.str(v, "working-directory")
			l.site(v, d.WorkingDirectory, refCtx{what: "working-directory", step: -1})
		},
		"timeout":       func(k, v *yaml.Node) { d.Timeout, _ = l.duration(v, "timeout", true) },
		"ignore-errors": func(k, v *yaml.Node) { d.IgnoreErrors, _ = l.boolean(v, "ignore-errors") },
		"input": func(k, v *yaml.Node) {
			d.Input, _ = l.str(v, "input")
			l.site(v, d.Input, refCtx{what: "input", step: -1})
		},
		"sandboxed": func(k, v *yaml.Node) { d.Sandboxed = l.sandboxed(v) },
	}
	l.mapping(root, "the tool definition", fields, topKeyHints)
	if nameNode != nil {
		l.def.Pos.Name = l.pos(nameNode)
	} else {
		l.def.Pos.Name = Pos{File: l.file, Line: 1, Col: 1}
	}
}

// finish checks what needs the whole top level: name, description,
// execution keys, alias rules, defaults.
func (l *defLoader) finish(root *yaml.Node) {
	d := l.def
	start := Pos{File: l.file, Line: 1, Col: 1}
	if d.Name == "" {
		if l.file != "" {
			d.Name = nameFromFile(l.file)
		}
		if d.Name == "" {
			l.errAt(start, "add name: my-tool", "missing name")
		}
	}
	if d.Name != "" && !isToolName(d.Name) {
		l.errAt(d.Pos.Name, "use letters, digits, '.', '_' and '-', starting with a letter or digit", "tool name %q is not valid", d.Name)
	}
	if !mapHasKey(root, "description") {
		l.errAt(start, "add description: what the tool does (agents read it to decide when to call the tool)", "missing description")
	}

	// Exactly one way to execute (an alias has none; reported below).
	if len(l.execKeys) > 1 && d.Type != "alias" {
		first := l.execKeys[0]
		for _, k := range l.execKeys[1:] {
			l.errf(k, "keep exactly one of bash, cmd, pwsh, run, script, commands or steps",
				"%s and %s (line %d) are both set: a tool runs one way", k.Value, first.Value, first.Line)
		}
	}
	if l.shellKey != nil {
		if d.Exec == nil || d.Exec.Kind != ExecScript || (len(l.execKeys) > 0 && l.execKeys[0].Value != "script") {
			l.errf(l.shellKey, "shell chooses the interpreter for script:; bash, cmd, pwsh and run choose their own", "shell without script")
		} else {
			d.Exec.Shell = l.shellValue
		}
	}
	if d.Type == "alias" {
		if d.BaseTool == "" {
			l.errAt(start, "add base-tool: NAME, the tool this alias presets parameters for", "an alias needs base-tool")
		}
		for _, k := range l.execKeys {
			l.errf(k, "an alias runs its base-tool; remove "+k.Value+" or remove type: alias", "an alias cannot have %s", k.Value)
		}
	} else {
		if d.BaseTool != "" || d.DefaultParameters != nil {
			key := "base-tool"
			if d.BaseTool == "" {
				key = "default-parameters"
			}
			l.errf(mapKeyNode(root, key), "add type: alias, or remove "+key, "%s is only for aliases", key)
		}
		if len(l.execKeys) == 0 {
			l.errAt(start, "add one of bash, cmd, pwsh, run, script (with shell), commands or steps", "no command to run")
		}
	}
	if d.Security.Isolation == "" {
		d.Security.Isolation = IsolationProcess
	}
	if d.Security.ExecutionPrivilege == "" {
		d.Security.ExecutionPrivilege = PrivilegeSameAsUser
	}
}

func mapHasKey(m *yaml.Node, key string) bool { return mapKeyNode(m, key) != nil }

func mapKeyNode(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Kind == yaml.ScalarNode && m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return nil
}

var knownPlatforms = []string{"windows", "linux", "macos", "unix"}

func (l *defLoader) checkPlatforms(n *yaml.Node, ps []string) {
	if n == nil || n.Kind != yaml.SequenceNode {
		return
	}
	for i, p := range ps {
		if !inList(knownPlatforms, p) && i < len(n.Content) {
			l.errf(n.Content[i], "platforms are "+strings.Join(knownPlatforms, ", "), "unknown platform %q", p)
		}
	}
}

func inList(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
