package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Function-calling declarations (an OpenAI function, an Anthropic tool, an
// MCP tools/list answer) say what a tool takes but not what it runs. `tool
// import` recognises them, says what is missing, and with a command
// (--bash or --run) makes a definition of them: the declaration's name,
// description and parameters (each with its own JSON Schema kept under
// sandboxed.parameter-schemas, so values reach the command with the types
// the declaration gives), the command as given, CYCOD's defaults otherwise.

// Function declaration formats.
const (
	FormatOpenAI    = "an OpenAI function declaration"
	FormatAnthropic = "an Anthropic tool declaration"
	FormatMCP       = "an MCP tools/list answer"
)

// ErrNoCommand: a function declaration was imported without the command
// that runs it.
var ErrNoCommand = errors.New("function declaration without a command")

// FunctionFile is a file of function declarations.
type FunctionFile struct {
	Format string
	Decls  []FunctionDecl
}

// Names lists the declared tools' names.
func (f *FunctionFile) Names() []string {
	var out []string
	for _, d := range f.Decls {
		out = append(out, d.Name)
	}
	return out
}

// ParseFunctionFile reports whether data is a function declaration file
// rather than a CYCOD definition, and reads it. A CYCOD definition (even
// in JSON) is never taken for one: it has an execution key, and its
// parameters are keyed by name rather than a JSON Schema object.
func ParseFunctionFile(data []byte) (*FunctionFile, bool) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	if m, ok := v.(map[string]any); ok {
		// A JSON-RPC answer to tools/list.
		if r, ok := m["result"].(map[string]any); ok {
			if _, ok := r["tools"]; ok {
				v = r
			}
		}
	}
	format := ""
	var list []any
	switch x := v.(type) {
	case map[string]any:
		if ts, ok := x["tools"].([]any); ok {
			format, list = FormatMCP, ts
		} else {
			list = []any{x}
		}
	case []any:
		list = x
	default:
		return nil, false
	}
	if len(list) == 0 {
		return nil, false
	}
	f := &FunctionFile{}
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok || !isFunctionDecl(m) {
			return nil, false
		}
		fd, err := parseDecl(m)
		if err != nil || fd.Name == "" {
			return nil, false
		}
		if format == "" {
			format = declFormat(m)
		}
		f.Decls = append(f.Decls, fd)
	}
	f.Format = format
	return f, true
}

// isFunctionDecl reports whether m has a function declaration's shape.
func isFunctionDecl(m map[string]any) bool {
	for _, k := range []string{"bash", "cmd", "pwsh", "run", "script", "python", "commands", "steps"} {
		if _, ok := m[k]; ok {
			return false
		}
	}
	if fn, ok := m["function"].(map[string]any); ok && m["type"] == "function" {
		return isFunctionDecl(fn)
	}
	for _, k := range []string{"input_schema", "inputSchema"} {
		if _, ok := m[k].(map[string]any); ok {
			return true
		}
	}
	p, ok := m["parameters"].(map[string]any)
	return ok && p["type"] == "object"
}

func declFormat(m map[string]any) string {
	switch {
	case m["input_schema"] != nil:
		return FormatAnthropic
	case m["inputSchema"] != nil:
		return FormatMCP
	}
	return FormatOpenAI
}

// ImportCommand is the command a function declaration is imported with.
type ImportCommand struct {
	Kind    ExecKind // ExecBash or ExecRun
	Command string
	// Tool picks one declaration of a file that holds several.
	Tool string
}

// DefinitionFromFunction makes the definition of one declaration of f,
// run by cmd. Without a command it fails with ErrNoCommand and a message
// that says what to add.
func DefinitionFromFunction(f *FunctionFile, file string, cmd ImportCommand) (*Definition, error) {
	var fd *FunctionDecl
	switch {
	case cmd.Tool != "":
		for i := range f.Decls {
			if f.Decls[i].Name == cmd.Tool {
				fd = &f.Decls[i]
			}
		}
		if fd == nil {
			return nil, fmt.Errorf("import %s: it declares no tool %s; it declares %s: %w", file, cmd.Tool, strings.Join(f.Names(), ", "), ErrBadArgs)
		}
	case len(f.Decls) > 1:
		if cmd.Command == "" {
			return nil, noCommand(f, file, nil)
		}
		return nil, fmt.Errorf("import %s: it declares %d tools (%s); pick one with --tool NAME, one import per tool: %w", file, len(f.Decls), strings.Join(f.Names(), ", "), ErrBadArgs)
	default:
		fd = &f.Decls[0]
	}
	if cmd.Command == "" {
		return nil, noCommand(f, file, fd)
	}
	params, orig, err := schemaParams(*fd, fd.Name)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", file, err)
	}
	for i := range params {
		// The command places each value where it says; the value's text
		// is itself (an array or object its JSON).
		params[i].Transform = ""
	}
	desc := strings.TrimSpace(fd.Description)
	if desc == "" {
		desc = "Imported from " + file
	}
	d := &Definition{
		Name:        ToolNameFor(fd.Name),
		Description: desc,
		Exec:        &Exec{Kind: cmd.Kind, Command: cmd.Command},
		Parameters:  params,
		Security:    Security{ExecutionPrivilege: PrivilegeSameAsUser, Isolation: IsolationProcess},
		// The command is the importer's own: the execute tier (spec 003),
		// as a discovered tool's.
		Tags: []string{"run", "imported"},
	}
	exposeAs(d, fd.Name, orig)
	if err := keepSchemas(d, *fd, orig); err != nil {
		return nil, fmt.Errorf("import %s: %w", file, err)
	}
	return d, nil
}

// noCommand says what a declaration lacks and how to give it.
func noCommand(f *FunctionFile, file string, fd *FunctionDecl) error {
	var refs []string
	which := ""
	if fd != nil {
		props, _ := fd.Input["properties"].(map[string]any)
		_, orig, _ := schemaParams(*fd, fd.Name)
		own := make([]string, 0, len(props))
		for o := range orig {
			own = append(own, o)
		}
		sort.Strings(own)
		for _, o := range own {
			refs = append(refs, "{"+o+"}")
		}
	} else {
		which = " --tool NAME"
	}
	example := "COMMAND"
	if len(refs) > 0 {
		example = "COMMAND " + strings.Join(refs, " ")
	}
	return fmt.Errorf("import %s: it is %s (%s): it says what the tool takes, not what it runs, so it is not a tool definition yet; "+
		"give the command, with each parameter where it goes: sandboxed tool import %s%s --bash '%s' (or --run, without a shell): %w",
		file, f.Format, strings.Join(f.Names(), ", "), file, which, example, ErrNoCommand)
}

// ReadFunctionFile reads path (at most MaxFileSize bytes, as a
// definition) and parses it with ParseFunctionFile.
func ReadFunctionFile(path string) (*FunctionFile, bool, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, false, err
	}
	if len(data) > MaxFileSize {
		return nil, false, nil // the loader says what is wrong with it
	}
	f, ok := ParseFunctionFile(data)
	return f, ok, nil
}
