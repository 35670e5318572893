package tool

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// Names of discovered tools and parameters.
//
// A self-describing script names itself and its parameters as it likes:
// "_ls", "-A", "max-depth", "a.b". Agents must call it by those names,
// and the script must receive them, so the names stay as the script gives
// them in everything an agent sees (the function schema of `tool schema`
// and `sandboxed mcp`) and in what the script receives. Where CYCOD cannot
// spell one — a tool name must start with a letter or digit, a parameter
// name with a letter or '_' and hold only letters, digits, '_' and '-' —
// the definition gets a name of its own, derived by the rules below, and
// records the script's name under sandboxed.exposed-as.
//
//   - Tool: leading '_' and '-' are dropped ("_ls" → "ls"); a name of
//     nothing but those becomes "tool". Two tools that come out the same
//     are an error naming both (within one script here; across scripts in
//     the caller).
//   - Parameter: a name the grammar accepts is kept ("max-depth"), unless
//     it is a built-in's (TOOL_NAME, WORKSPACE, TEMP), which a parameter
//     would shadow. Any other has each character outside letters, digits,
//     '_' and '-' replaced by '_', leading '-' dropped and '_' put before
//     a leading digit ("-A" → "A", "--all" → "all", "a.b" → "a_b", "2x" →
//     "_2x", "" or "-" → "param"). Kept names are taken first; a derived
//     name that is taken gets "_2", "_3", … in the order of the script's
//     names (with "A" and "-A", "-A" becomes "A_2"; "WORKSPACE" becomes
//     "WORKSPACE_2").

// ToolNameFor is the definition name of a tool a script calls name (a
// valid function name).
func ToolNameFor(name string) string {
	n := strings.TrimLeft(name, "_-")
	if n == "" {
		return "tool"
	}
	return n
}

// scriptName is the name a file gives the tool it describes when the
// script names none: its name without extension, each character a
// function name may not hold replaced by '_', at most 64 bytes.
func scriptName(file string) string {
	b := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	b = badNameChar().ReplaceAllString(b, "_")
	if b == "" {
		b = "tool"
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return b
}

// ParamNamesFor maps a schema's property names to parameter names by the
// rules above: every name gets one, no two the same. A name CYCOD accepts
// maps to itself.
func ParamNamesFor(names []string) map[string]string {
	out := make(map[string]string, len(names))
	// The built-ins' names are taken: a parameter of that name would
	// shadow {WORKSPACE} or {TEMP} in a permission given with discover
	// --grant, and the agent would choose the path.
	taken := map[string]bool{}
	for _, b := range builtinRefNames {
		taken[b] = true
	}
	var derive []string
	for _, n := range names {
		if isNameIdent(n) && !taken[n] {
			out[n], taken[n] = n, true
		} else {
			derive = append(derive, n)
		}
	}
	sort.Strings(derive)
	for _, n := range derive {
		c := paramCandidate(n)
		own := c
		for i := 2; taken[own]; i++ {
			own = fmt.Sprintf("%s_%d", c, i)
		}
		out[n], taken[own] = own, true
	}
	return out
}

func paramCandidate(n string) string {
	c := strings.TrimLeft(badParamChar().ReplaceAllString(n, "_"), "-")
	switch {
	case c == "":
		return "param"
	case c[0] >= '0' && c[0] <= '9':
		return "_" + c
	}
	return c
}

var badParamChar = lazyRegexp(`[^A-Za-z0-9_-]`)

// jsonKey is name as a JSON string, with '{' and '}' escaped too, so that
// written into a command it is never read as a {REFERENCE}.
func jsonKey(name string) string {
	b, _ := json.Marshal(name) // a string always marshals
	return strings.NewReplacer("{", `\u007b`, "}", `\u007d`).Replace(string(b))
}

// exposeAs records on d the names the script gives the tool and its
// parameters where they differ from d's own: tool is the script's name
// for the tool; params maps parameter names to the script's names.
func exposeAs(d *Definition, tool string, params map[string]string) {
	e := &ExposedAs{}
	if tool != d.Name {
		e.Name = tool
	}
	for own, orig := range params {
		if own != orig {
			if e.Parameters == nil {
				e.Parameters = map[string]string{}
			}
			e.Parameters[own] = orig
		}
	}
	if e.Name == "" && e.Parameters == nil {
		return
	}
	if d.Sandboxed == nil {
		d.Sandboxed = &SandboxedExt{}
	}
	d.Sandboxed.ExposedAs = e
}
