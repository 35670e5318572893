package tool

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
)

// commands reads `commands:`. The reference shape is {default, platforms:
// {windows, linux, macos, unix}}; platform keys written directly under
// commands (a draft's shape) are accepted as a compatibility alias.
func (l *defLoader) commands(n *yaml.Node) *PlatformCommands {
	if n != nil && n.Kind == yaml.SequenceNode {
		l.errf(n, "the list form with per-entry platforms is from a draft; write commands: {default: CMD, platforms: {linux: CMD, windows: CMD}}",
			"commands must be a mapping with default: and platforms:, got a list")
		return nil
	}
	c := &PlatformCommands{}
	platform := func(where string) func(k, v *yaml.Node) {
		return func(k, v *yaml.Node) {
			s, ok := l.str(v, where+k.Value)
			if !ok {
				return
			}
			if c.Platforms == nil {
				c.Platforms = map[string]string{}
			}
			if _, dup := c.Platforms[k.Value]; dup {
				l.errf(k, "keep one", "command for %s is given twice", k.Value)
				return
			}
			c.Platforms[k.Value] = s
			ctx := refCtx{what: "commands." + k.Value + " command", step: -1}
			if k.Value != "windows" {
				// Only a command that runs here is checked for its quoting.
				ctx.cmd = shCommand
			}
			l.site(v, s, ctx)
		}
	}
	fields := map[string]fieldFn{
		"default": func(k, v *yaml.Node) {
			c.Default, _ = l.str(v, "commands.default")
			l.site(v, c.Default, refCtx{what: "commands.default command", step: -1, cmd: shCommand})
		},
		"platforms": func(k, v *yaml.Node) {
			pf := map[string]fieldFn{}
			for _, p := range knownPlatforms {
				pf[p] = platform("commands.platforms.")
			}
			l.mapping(v, "commands.platforms", pf, nil)
		},
	}
	for _, p := range knownPlatforms {
		fields[p] = platform("commands.") // compatibility alias (COMPAT.md)
	}
	if !l.mapping(n, "commands", fields, nil) {
		return nil
	}
	if strings.TrimSpace(c.Default) == "" && len(c.Platforms) == 0 {
		l.errf(n, "add default: CMD", "commands has no command")
	}
	return c
}

var stepKeyHints = map[string]string{
	"commands":  "commands: is for the whole tool; a step runs one of bash, cmd, pwsh, run or script",
	"tool":      "did you mean use-tool?",
	"uses":      "did you mean use-tool?",
	"arguments": "pass parameters to a used tool with with:",
	"env":       "did you mean environment?",
	"condition": "did you mean run-condition?",
	"if":        "did you mean run-condition?",
}

var stepExecKeys = map[string]ExecKind{
	"bash": ExecBash, "cmd": ExecCmd, "pwsh": ExecPwsh, "run": ExecRun, "script": ExecScript, "python": ExecScript,
}

func (l *defLoader) steps(n *yaml.Node) {
	if nodeIsNull(n) || n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
		l.errf(n, "add at least one step: - name: NAME / bash: CMD", "steps is empty")
		return
	}
	if n.Kind != yaml.SequenceNode {
		l.errf(n, "each step is a list item: - name: NAME / bash: CMD", "steps must be a list, got %s", nodeKindName(n))
		return
	}
	for i, sn := range n.Content {
		l.def.Steps = append(l.def.Steps, Step{})
		l.stepNodes = append(l.stepNodes, sn)
		l.step(i, sn)
	}
	if l.def.Pos.Steps == nil {
		l.def.Pos.Steps = map[string]Pos{}
	}
	for i, st := range l.def.Steps {
		if st.Name != "" {
			if _, dup := l.def.Pos.Steps[st.Name]; !dup {
				l.def.Pos.Steps[st.Name] = l.pos(l.stepNodes[i])
			}
		}
	}
}

func (l *defLoader) step(i int, sn *yaml.Node) {
	st := &l.def.Steps[i]
	if sn.Kind != yaml.MappingNode {
		l.errf(sn, "each step is a mapping: - name: NAME / bash: CMD", "step %d must be a mapping, got %s", i+1, nodeKindName(sn))
		return
	}
	var execKeys []*yaml.Node
	var nameNode, useKey, withKey, shellKey *yaml.Node
	var shell string
	sctx := func(what string) refCtx { return refCtx{what: what, step: i, steps: true} }
	execKey := func(k, v *yaml.Node) {
		execKeys = append(execKeys, k)
		s, ok := l.str(v, k.Value)
		if !ok {
			return
		}
		if strings.TrimSpace(s) == "" {
			l.errf(v, "", "%s command is empty", k.Value)
		}
		if st.Exec == nil {
			st.Exec = &Exec{Kind: stepExecKeys[k.Value], Command: s}
			if k.Value == "python" {
				st.Exec.Shell = "python3"
			}
			c := sctx(k.Value + " command")
			c.cmd = func() *Exec { return st.Exec }
			l.site(v, s, c)
		}
	}
	fields := map[string]fieldFn{
		"name": func(k, v *yaml.Node) {
			nameNode = v
			st.Name, _ = l.str(v, "step name")
		},
		"shell": func(k, v *yaml.Node) {
			shellKey = k
			shell, _ = l.str(v, "shell")
		},
		"use-tool": func(k, v *yaml.Node) {
			useKey = k
			st.UseTool, _ = l.str(v, "use-tool")
			if st.UseTool == "" || !isToolName(st.UseTool) {
				l.errf(v, "", "use-tool must name a tool, got %q", st.UseTool)
			}
		},
		"with": func(k, v *yaml.Node) {
			withKey = k
			st.With, _ = l.strMap(v, "with")
			l.mapSites(v, func(key string) refCtx { return sctx("with." + key) })
		},
		"continue-on-error": func(k, v *yaml.Node) { st.ContinueOnError, _ = l.boolean(v, "continue-on-error") },
		"run-condition": func(k, v *yaml.Node) {
			st.RunCondition, _ = l.str(v, "run-condition")
			if strings.TrimSpace(st.RunCondition) == "" {
				l.errf(v, "remove run-condition to always run the step", "run-condition is empty")
			}
			l.site(v, st.RunCondition, sctx("run-condition"))
		},
		"parallel": func(k, v *yaml.Node) { st.Parallel, _ = l.boolean(v, "parallel") },
		"wait-for": func(k, v *yaml.Node) {
			st.WaitFor, _ = l.strList(v, "wait-for", true)
			if v.Kind == yaml.SequenceNode {
				l.waitFor[i] = v.Content
			} else if v.Kind == yaml.ScalarNode && !nodeIsNull(v) {
				l.waitFor[i] = []*yaml.Node{v}
			}
		},
		"error-handling": func(k, v *yaml.Node) { st.ErrorHandling = l.errorHandling(i, v) },
		"output":         func(k, v *yaml.Node) { st.Output = l.output(v) },
		"working-directory": func(k, v *yaml.Node) {
			st.WorkingDirectory, _ = l.str(v, "working-directory")
			l.site(v, st.WorkingDirectory, sctx("working-directory"))
		},
		"environment": func(k, v *yaml.Node) {
			st.Environment, _ = l.strMap(v, "step environment")
			l.checkEnvNames(v)
			l.mapSites(v, func(key string) refCtx { return sctx("environment." + key) })
		},
		"timeout": func(k, v *yaml.Node) { st.Timeout, _ = l.duration(v, "timeout", true) },
		"input":   func(k, v *yaml.Node) { st.Input, _ = l.str(v, "input"); l.site(v, st.Input, sctx("input")) },
	}
	for key := range stepExecKeys {
		fields[key] = execKey
	}
	l.mapping(sn, "a step", fields, stepKeyHints)

	label := fmt.Sprintf("step %d", i+1)
	if st.Name != "" {
		label = "step " + st.Name
	}
	switch {
	case nameNode == nil:
		l.errf(sn, "add name: NAME; other steps refer to it as {NAME.output}", "%s has no name", label)
	case st.Name == "":
		l.errf(nameNode, "", "%s has an empty name", label)
	case !isNameIdent(st.Name):
		l.errf(nameNode, "use letters, digits, '_' and '-', starting with a letter or '_'", "step name %q is not valid", st.Name)
	default:
		if prev, dup := l.stepIndex[st.Name]; dup {
			l.errf(nameNode, fmt.Sprintf("the first %s is at line %d; step names must be unique", st.Name, l.stepNodes[prev].Line),
				"duplicate step name %s", st.Name)
		} else {
			l.stepIndex[st.Name] = i
		}
	}
	switch {
	case len(execKeys) == 0 && useKey == nil:
		l.errf(sn, "add one of bash, cmd, pwsh, run, script, or use-tool: NAME", "%s has nothing to run", label)
	case len(execKeys) > 0 && useKey != nil:
		l.errf(useKey, "a step either runs a command or uses a tool; split it into two steps", "%s has both %s and use-tool", label, execKeys[0].Value)
	}
	for _, k := range execKeys[min(1, len(execKeys)):] {
		l.errf(k, "keep exactly one command per step", "%s has both %s (line %d) and %s", label, execKeys[0].Value, execKeys[0].Line, k.Value)
	}
	if withKey != nil && useKey == nil {
		l.errf(withKey, "with: passes parameters to use-tool; add use-tool: NAME or remove with:", "%s has with: but no use-tool", label)
	}
	if shellKey != nil {
		if len(execKeys) == 0 || execKeys[0].Value != "script" {
			l.errf(shellKey, "shell chooses the interpreter for script:; bash, cmd, pwsh and run choose their own", "shell without script")
		} else if st.Exec != nil {
			st.Exec.Shell = shell
		}
	}
}

// shCommand is how commands: entries and cleanup commands run (/bin/sh).
func shCommand() *Exec { return &Exec{} }

// mapSites registers every value of mapping n as a substitution site.
func (l *defLoader) mapSites(n *yaml.Node, ctx func(key string) refCtx) {
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind == yaml.ScalarNode {
			l.site(v, v.Value, ctx(k.Value))
		}
	}
}

func (l *defLoader) checkEnvNames(n *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind == yaml.ScalarNode && !validEnvName(k.Value) {
			l.errf(k, "use letters, digits and _, not starting with a digit", "%q is not an environment variable name", k.Value)
		}
	}
}

func (l *defLoader) errorHandling(step int, n *yaml.Node) *ErrorHandling {
	eh := &ErrorHandling{}
	l.mapping(n, "error-handling", map[string]fieldFn{
		"retry": func(k, v *yaml.Node) {
			r := &Retry{Attempts: 1}
			seenAttempts := false
			l.mapping(v, "retry", map[string]fieldFn{
				"attempts": func(k, v *yaml.Node) {
					seenAttempts = true
					a, ok := l.nonNegInt(v, "retry.attempts")
					if ok && a < 1 {
						l.errf(v, "attempts counts every try, so 1 means no retry", "retry.attempts must be at least 1")
					}
					r.Attempts = a
				},
				"delay": func(k, v *yaml.Node) { r.Delay, _ = l.duration(v, "retry.delay", false) },
			}, map[string]string{"max-attempts": "did you mean attempts?", "retries": "did you mean attempts?"})
			if !seenAttempts && v.Kind == yaml.MappingNode {
				l.errf(k, "add attempts: N (total tries)", "retry has no attempts")
			}
			eh.Retry = r
		},
		"fallback": func(k, v *yaml.Node) {
			eh.Fallback, _ = l.str(v, "fallback")
			ctx := refCtx{what: "fallback", step: step, steps: true, self: true}
			ctx.cmd = func() *Exec {
				// A fallback runs the way its step's command does.
				if step >= 0 && step < len(l.def.Steps) && l.def.Steps[step].Exec != nil {
					ex := *l.def.Steps[step].Exec
					return &ex
				}
				return &Exec{Kind: ExecBash}
			}
			l.site(v, eh.Fallback, ctx)
		},
	}, map[string]string{"on-error-output": "not part of the format; print a message from the fallback command instead"})
	return eh
}

func (l *defLoader) output(n *yaml.Node) *Output {
	o := &Output{}
	l.mapping(n, "output", map[string]fieldFn{
		"mode": func(k, v *yaml.Node) {
			s, _ := l.str(v, "output.mode")
			o.Mode = OutputMode(s)
			if o.Mode != OutputBuffer && o.Mode != OutputStream {
				l.errf(v, "output.mode is buffer or stream", "unknown output mode %q", s)
			}
		},
		"buffer-limit": func(k, v *yaml.Node) { o.BufferLimit, _ = l.size(v, "output.buffer-limit") },
		"stream-callback": func(k, v *yaml.Node) {
			o.StreamCallback, _ = l.str(v, "output.stream-callback")
			if !inList(knownStreamCallbacks, o.StreamCallback) {
				l.errf(v, "stream-callback is one of "+strings.Join(knownStreamCallbacks, ", "), "unknown stream-callback %q", o.StreamCallback)
			}
		},
	}, map[string]string{"truncation": "output past buffer-limit is always cut with a truncation marker; remove truncation"})
	return o
}

var knownStreamCallbacks = []string{"console", "file", "function"}

var paramKeyHints = map[string]string{
	"sensitive":    "not part of the format; list the parameter in security.logging.sensitive-parameters",
	"name":         "a parameter's name is its key under parameters:",
	"optional":     "write required: false",
	"enum":         "enum goes under validation:",
	"pattern":      "pattern goes under validation:",
	"minimum":      "minimum goes under validation:",
	"maximum":      "maximum goes under validation:",
	"minLength":    "minLength goes under validation:",
	"maxLength":    "maxLength goes under validation:",
	"escape-shell": "escape-shell goes under security:",
}

var knownParamTypes = []string{string(TypeString), string(TypeNumber), string(TypeBoolean), string(TypeArray), string(TypeObject)}

func (l *defLoader) parameters(n *yaml.Node) {
	if nodeIsNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		l.errf(n, "write parameters: / NAME: / type: string / description: ...", "parameters must be a mapping of NAME: {type, description, ...}, got %s", nodeKindName(n))
		return
	}
	l.def.Pos.Parameters = map[string]Pos{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			l.errf(k, "", "a parameter name must be a plain name, got %s", nodeKindName(k))
			continue
		}
		if prev, dup := l.paramKeys[k.Value]; dup {
			l.errf(k, fmt.Sprintf("the first %s is at line %d; keep one", k.Value, prev.Line), "duplicate parameter %s", k.Value)
			continue
		}
		if !isNameIdent(k.Value) {
			l.errf(k, "use letters, digits, '_' and '-', starting with a letter or '_' (UPPER_CASE by convention)", "parameter name %q is not valid", k.Value)
		}
		l.paramKeys[k.Value] = k
		l.def.Pos.Parameters[k.Value] = l.pos(k)
		l.def.Parameters = append(l.def.Parameters, l.parameter(k, v))
	}
}

func (l *defLoader) parameter(key, n *yaml.Node) Parameter {
	p := Parameter{Name: key.Value, Type: TypeString}
	what := "parameter " + p.Name
	var defNode, valNode, descNode *yaml.Node
	var typeOK = true
	ok := l.mapping(n, what, map[string]fieldFn{
		"type": func(k, v *yaml.Node) {
			s, _ := l.str(v, what+" type")
			p.Type = ParamType(s)
			if !inList(knownParamTypes, s) {
				typeOK = false
				l.errf(v, "types are "+strings.Join(knownParamTypes, ", "), "unknown type %q for %s", s, what)
			}
		},
		"description": func(k, v *yaml.Node) {
			descNode = v
			p.Description, _ = l.str(v, what+" description")
		},
		"required":   func(k, v *yaml.Node) { p.Required, _ = l.boolean(v, what+" required") },
		"default":    func(k, v *yaml.Node) { defNode = v },
		"validation": func(k, v *yaml.Node) { valNode = v },
		"transform":  func(k, v *yaml.Node) { p.Transform, _ = l.str(v, what+" transform") },
		"format": func(k, v *yaml.Node) {
			p.Format, _ = l.str(v, what+" format")
		},
		"examples": func(k, v *yaml.Node) {
			if v.Kind != yaml.SequenceNode {
				l.errf(v, "write a list, e.g. examples: [\"a\", \"b\"]", "%s examples must be a list, got %s", what, nodeKindName(v))
				return
			}
			ex, _ := l.toAny(v, what+" examples")
			p.Examples, _ = ex.([]any)
		},
		"detailed-help": func(k, v *yaml.Node) { p.DetailedHelp, _ = l.str(v, what+" detailed-help") },
		"security": func(k, v *yaml.Node) {
			l.mapping(v, what+" security", map[string]fieldFn{
				"escape-shell": func(k, v *yaml.Node) {
					b, ok := l.boolean(v, "escape-shell")
					if ok {
						p.EscapeShell = &b
					}
				},
			}, paramKeyHints)
		},
	}, paramKeyHints)
	if !ok {
		return p
	}
	switch {
	case descNode == nil:
		l.errf(key, "add description: what the value means; agents read it", "%s has no description", what)
	case strings.TrimSpace(p.Description) == "":
		l.errf(descNode, "say what the value means; agents read it", "%s has an empty description", what)
	}
	if valNode != nil {
		p.Validation = l.validation(valNode, what+" validation", p.Type, typeOK, false)
	}
	if defNode != nil {
		p.HasDefault = true
		p.Default = l.paramDefault(p, defNode, typeOK)
	}
	return p
}

// paramDefault checks a default against the parameter's type. A string
// default that holds a {REF} is accepted for any type: it is checked again
// after substitution, at bind time.
func (l *defLoader) paramDefault(p Parameter, n *yaml.Node, typeOK bool) any {
	what := "default of parameter " + p.Name
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		l.site(n, n.Value, refCtx{what: what, step: -1, param: p.Name})
		if len(scanRefs(n.Value)) > 0 && p.Type != TypeString {
			return n.Value
		}
	}
	if !typeOK {
		return nil
	}
	bad := func(want string) any {
		l.errf(n, "write "+want+", or change the parameter's type", "%s must be %s for a %s parameter, got %s", what, want, p.Type, nodeKindName(n))
		return nil
	}
	switch p.Type {
	case TypeString:
		if nodeIsNull(n) {
			return ""
		}
		if n.Kind != yaml.ScalarNode {
			return bad("a string")
		}
		return n.Value
	case TypeNumber:
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
			return bad("a number")
		}
		f, _ := l.number(n, what)
		return f
	case TypeBoolean:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			return bad("true or false")
		}
		b, _ := l.boolean(n, what)
		return b
	case TypeArray:
		if n.Kind != yaml.SequenceNode {
			return bad("a list")
		}
		v, _ := l.toAny(n, what)
		return v
	case TypeObject:
		if n.Kind != yaml.MappingNode {
			return bad("a mapping")
		}
		v, _ := l.toAny(n, what)
		return v
	}
	return nil
}

var validationKeyHints = map[string]string{
	"custom":     "not part of the format (a script expression here would not be enforced); use pattern, minimum/maximum, minLength/maxLength or enum",
	"min":        "did you mean minimum?",
	"max":        "did you mean maximum?",
	"min-length": "did you mean minLength?",
	"max-length": "did you mean maxLength?",
	"min-items":  "did you mean minItems?",
	"max-items":  "did you mean maxItems?",
	"regex":      "did you mean pattern?",
}

// validation reads a validation block. inProps is true inside properties:,
// where `type` names the property's type.
func (l *defLoader) validation(n *yaml.Node, what string, typ ParamType, typeOK, inProps bool) *Validation {
	v := &Validation{}
	var minN, maxN, minLN, maxLN, minIN, maxIN, enumN *yaml.Node
	// bound and count read a key's value into dst and keep its node in
	// at, for the checks after the mapping.
	bound := func(dst **float64, at **yaml.Node) fieldFn {
		return func(k, n *yaml.Node) {
			if f, ok := l.number(n, what+" "+k.Value); ok {
				*dst, *at = &f, n
			}
		}
	}
	count := func(dst **int, at **yaml.Node) fieldFn {
		return func(k, n *yaml.Node) {
			if i, ok := l.nonNegInt(n, what+" "+k.Value); ok {
				*dst, *at = &i, n
			}
		}
	}
	fields := map[string]fieldFn{
		"minimum": bound(&v.Minimum, &minN),
		"maximum": bound(&v.Maximum, &maxN),
		"pattern": func(k, n *yaml.Node) {
			v.Pattern, _ = l.str(n, what+" pattern")
			if _, err := regexp.Compile(v.Pattern); err != nil {
				l.errf(n, "patterns use Go's RE2 syntax: no lookaround and no backreferences", "invalid regex in %s pattern: %v", what, err)
			}
		},
		"minLength": count(&v.MinLength, &minLN),
		"maxLength": count(&v.MaxLength, &maxLN),
		"enum": func(k, n *yaml.Node) {
			if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
				l.errf(n, "write enum: [a, b, c]", "%s enum must be a non-empty list, got %s", what, nodeKindName(n))
				return
			}
			x, _ := l.toAny(n, what+" enum")
			v.Enum, _ = x.([]any)
			enumN = n
		},
		"minItems":    count(&v.MinItems, &minIN),
		"maxItems":    count(&v.MaxItems, &maxIN),
		"uniqueItems": func(k, n *yaml.Node) { v.UniqueItems, _ = l.boolean(n, what+" uniqueItems") },
		"required":    func(k, n *yaml.Node) { v.Required, _ = l.strList(n, what+" required", false) },
		"properties": func(k, n *yaml.Node) {
			if nodeIsNull(n) {
				return
			}
			if n.Kind != yaml.MappingNode {
				l.errf(n, "", "%s properties must be a mapping of property names, got %s", what, nodeKindName(n))
				return
			}
			v.Properties = map[string]*Validation{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				pk, pv := n.Content[i], n.Content[i+1]
				if pk.Kind != yaml.ScalarNode {
					l.errf(pk, "", "a property name must be a plain name, got %s", nodeKindName(pk))
					continue
				}
				if _, dup := v.Properties[pk.Value]; dup {
					l.errf(pk, "keep one", "duplicate property %s in %s", pk.Value, what)
					continue
				}
				v.Properties[pk.Value] = l.validation(pv, what+" property "+pk.Value, "", false, true)
			}
		},
	}
	if inProps {
		fields["type"] = func(k, n *yaml.Node) {
			s, _ := l.str(n, what+" type")
			v.Type = ParamType(s)
			if !inList(knownParamTypes, s) {
				l.errf(n, "types are "+strings.Join(knownParamTypes, ", "), "unknown type %q for %s", s, what)
			} else {
				typ, typeOK = v.Type, true
			}
		}
		fields["description"] = nil // documentation only; not kept
	}
	l.mapping(n, what, fields, validationKeyHints)
	// fields["type"] may run after other keys; enum values are checked
	// here, once the type is known.
	if minN != nil && maxN != nil && *v.Minimum > *v.Maximum {
		l.errf(minN, "swap them, or fix one", "%s minimum %v is greater than maximum %v", what, *v.Minimum, *v.Maximum)
	}
	if minLN != nil && maxLN != nil && *v.MinLength > *v.MaxLength {
		l.errf(minLN, "swap them, or fix one", "%s minLength %d is greater than maxLength %d", what, *v.MinLength, *v.MaxLength)
	}
	if minIN != nil && maxIN != nil && *v.MinItems > *v.MaxItems {
		l.errf(minIN, "swap them, or fix one", "%s minItems %d is greater than maxItems %d", what, *v.MinItems, *v.MaxItems)
	}
	if enumN != nil && typeOK {
		for i, e := range v.Enum {
			if !defaultFitsType(e, typ) && i < len(enumN.Content) {
				l.errf(enumN.Content[i], "every enum value must have the parameter's type", "%s enum value %v is not a %s", what, e, typ)
			}
		}
	}
	return v
}

// defaultFitsType reports whether a decoded YAML value has type t. Any
// scalar fits a string.
func defaultFitsType(v any, t ParamType) bool {
	switch t {
	case TypeString:
		switch v.(type) {
		case string, int, float64, bool:
			return true
		}
		return false
	case TypeNumber:
		switch v.(type) {
		case int, float64:
			return true
		}
		return false
	}
	return hasType(v, t) // booleans, arrays and objects decode as from JSON
}

func (l *defLoader) environment(n *yaml.Node) *Environment {
	e := &Environment{}
	l.mapping(n, "environment", map[string]fieldFn{
		"variables": func(k, v *yaml.Node) {
			e.Variables, _ = l.strMap(v, "environment.variables")
			l.checkEnvNames(v)
			l.mapSites(v, func(key string) refCtx { return refCtx{what: "environment variable " + key, step: -1} })
		},
		"inherit": func(k, v *yaml.Node) { e.Inherit, _ = l.boolean(v, "environment.inherit") },
	}, map[string]string{"*": "environment variables go under environment.variables: {NAME: value}"})
	return e
}

var knownJSONTypes = []string{"string", "number", "integer", "boolean", "array", "object"}

func (l *defLoader) functionCalling(n *yaml.Node) *FunctionCalling {
	fc := &FunctionCalling{}
	l.mapping(n, "function-calling", map[string]fieldFn{
		"schema-generation": func(k, v *yaml.Node) {
			sg := &SchemaGeneration{}
			optBool := func(dst **bool, what string) fieldFn {
				return func(k, v *yaml.Node) {
					if b, ok := l.boolean(v, what); ok {
						*dst = &b
					}
				}
			}
			l.mapping(v, "function-calling.schema-generation", map[string]fieldFn{
				"parameter-mapping": func(k, v *yaml.Node) {
					sg.ParameterMapping, _ = l.strMap(v, "parameter-mapping")
					if v.Kind != yaml.MappingNode {
						return
					}
					for i := 0; i+1 < len(v.Content); i += 2 {
						mk, mv := v.Content[i], v.Content[i+1]
						if !inList(knownParamTypes, mk.Value) {
							l.errf(mk, "map the parameter types "+strings.Join(knownParamTypes, ", "), "unknown parameter type %q in parameter-mapping", mk.Value)
						}
						if mv.Kind == yaml.ScalarNode && !inList(knownJSONTypes, mv.Value) {
							l.errf(mv, "JSON Schema types are "+strings.Join(knownJSONTypes, ", "), "unknown JSON Schema type %q in parameter-mapping", mv.Value)
						}
					}
				},
				"include-descriptions": optBool(&sg.IncludeDescriptions, "include-descriptions"),
				"include-defaults":     optBool(&sg.IncludeDefaults, "include-defaults"),
				"example-generation":   optBool(&sg.ExampleGeneration, "example-generation"),
				"function-name": func(k, v *yaml.Node) {
					sg.FunctionName, _ = l.str(v, "function-name")
					l.site(v, sg.FunctionName, refCtx{what: "function-name", step: -1})
				},
				"description-template": func(k, v *yaml.Node) {
					sg.DescriptionTemplate, _ = l.str(v, "description-template")
					l.site(v, sg.DescriptionTemplate, refCtx{what: "description-template", step: -1, desc: true})
				},
			}, map[string]string{"sanitize-schemas": "not part of the format; exported schemas are always valid JSON Schema"})
			fc.SchemaGeneration = sg
		},
	}, nil)
	return fc
}

var (
	knownIsolations = []string{string(IsolationNone), string(IsolationProcess), string(IsolationContainer)}
	knownPrivileges = []string{string(PrivilegeSameAsUser), string(PrivilegeReduced), string(PrivilegeElevated)}
	knownLogLevels  = []string{"debug", "info", "warning", "error"}
	knownDepScopes  = []string{"local", "user", "global", "any"}
)

func (l *defLoader) security(n *yaml.Node) {
	s := &l.def.Security
	enum := func(dst *string, what string, allowed []string) fieldFn {
		return func(k, v *yaml.Node) {
			*dst, _ = l.str(v, what)
			if !inList(allowed, *dst) {
				l.errf(v, what+" is one of "+strings.Join(allowed, ", "), "unknown %s %q", what, *dst)
			}
		}
	}
	var iso, priv string
	l.mapping(n, "security", map[string]fieldFn{
		"execution-privilege": enum(&priv, "execution-privilege", knownPrivileges),
		"isolation":           enum(&iso, "isolation", knownIsolations),
		"required-permissions": func(k, v *yaml.Node) {
			s.RequiredPermissions, _ = l.strList(v, "required-permissions", false)
			if v.Kind != yaml.SequenceNode {
				return
			}
			for _, item := range v.Content {
				if item.Kind != yaml.ScalarNode {
					continue // reported by strList; keeps Pos.Permissions parallel
				}
				l.def.Pos.Permissions = append(l.def.Pos.Permissions, l.pos(item))
				perm := item.Value
				if _, err := ParsePermission(perm); err != nil {
					l.errf(item, "", "%v", err)
				}
				l.site(item, perm, refCtx{what: "permission", step: -1, perm: true})
			}
		},
		"justification": func(k, v *yaml.Node) { s.Justification, _ = l.str(v, "justification") },
		"logging": func(k, v *yaml.Node) {
			lg := &Logging{}
			l.mapping(v, "security.logging", map[string]fieldFn{
				"enabled": func(k, v *yaml.Node) { lg.Enabled, _ = l.boolean(v, "logging.enabled") },
				"level": func(k, v *yaml.Node) {
					lg.Level, _ = l.str(v, "logging.level")
					if !inList(knownLogLevels, lg.Level) {
						l.errf(v, "logging.level is one of "+strings.Join(knownLogLevels, ", "), "unknown logging level %q", lg.Level)
					}
				},
				"include-parameters": func(k, v *yaml.Node) { lg.IncludeParameters, _ = l.boolean(v, "logging.include-parameters") },
				"sensitive-parameters": func(k, v *yaml.Node) {
					lg.SensitiveParameters, _ = l.strList(v, "logging.sensitive-parameters", false)
					if v.Kind == yaml.SequenceNode {
						l.sensitive = append(l.sensitive, v.Content...)
					}
				},
			}, nil)
			s.Logging = lg
		},
		"auditing": func(k, v *yaml.Node) {
			a := &Auditing{}
			l.mapping(v, "security.auditing", map[string]fieldFn{
				"enabled":          func(k, v *yaml.Node) { a.Enabled, _ = l.boolean(v, "auditing.enabled") },
				"record-command":   func(k, v *yaml.Node) { a.RecordCommand, _ = l.boolean(v, "auditing.record-command") },
				"record-output":    func(k, v *yaml.Node) { a.RecordOutput, _ = l.boolean(v, "auditing.record-output") },
				"retention-period": func(k, v *yaml.Node) { a.RetentionPeriod, _ = l.duration(v, "auditing.retention-period", true) },
			}, nil)
			s.Auditing = a
		},
	}, map[string]string{"permissions": "did you mean required-permissions?"})
	s.Isolation = Isolation(iso)
	s.ExecutionPrivilege = Privilege(priv)
}

func (l *defLoader) filePaths(n *yaml.Node) *FilePaths {
	fp := &FilePaths{}
	l.mapping(n, "file-paths", map[string]fieldFn{
		"normalize": func(k, v *yaml.Node) { fp.Normalize, _ = l.boolean(v, "file-paths.normalize") },
		"working-directory": func(k, v *yaml.Node) {
			fp.WorkingDirectory, _ = l.str(v, "file-paths.working-directory")
			l.site(v, fp.WorkingDirectory, refCtx{what: "file-paths.working-directory", step: -1})
		},
		"temp-directory": func(k, v *yaml.Node) {
			fp.TempDirectory, _ = l.str(v, "file-paths.temp-directory")
			l.site(v, fp.TempDirectory, refCtx{what: "file-paths.temp-directory", step: -1})
		},
		"cross-platform": func(k, v *yaml.Node) {
			cp := &CrossPlatform{}
			l.mapping(v, "file-paths.cross-platform", map[string]fieldFn{
				"windows-separator": func(k, v *yaml.Node) { cp.WindowsSeparator, _ = l.str(v, "windows-separator") },
				"unix-separator":    func(k, v *yaml.Node) { cp.UnixSeparator, _ = l.str(v, "unix-separator") },
				"auto-convert":      func(k, v *yaml.Node) { cp.AutoConvert, _ = l.boolean(v, "auto-convert") },
			}, nil)
			fp.CrossPlatform = cp
		},
	}, nil)
	return fp
}

func (l *defLoader) metadata(n *yaml.Node) *Metadata {
	m := &Metadata{}
	l.mapping(n, "metadata", map[string]fieldFn{
		"category":        func(k, v *yaml.Node) { m.Category, _ = l.str(v, "metadata.category") },
		"subcategory":     func(k, v *yaml.Node) { m.Subcategory, _ = l.str(v, "metadata.subcategory") },
		"tags":            func(k, v *yaml.Node) { m.Tags, _ = l.strList(v, "metadata.tags", false) },
		"search-keywords": func(k, v *yaml.Node) { m.SearchKeywords, _ = l.strList(v, "metadata.search-keywords", false) },
	}, nil)
	return m
}

func (l *defLoader) resources(n *yaml.Node) *Resources {
	r := &Resources{}
	l.mapping(n, "resources", map[string]fieldFn{
		"timeout":    func(k, v *yaml.Node) { r.Timeout, _ = l.duration(v, "resources.timeout", true) },
		"max-memory": func(k, v *yaml.Node) { r.MaxMemory, _ = l.size(v, "resources.max-memory") },
		"cleanup": func(k, v *yaml.Node) {
			if nodeIsNull(v) {
				return
			}
			if v.Kind != yaml.SequenceNode {
				l.errf(v, "write cleanup: [- delete-temp-files: true, - final-command: CMD]", "resources.cleanup must be a list, got %s", nodeKindName(v))
				return
			}
			c := &Cleanup{}
			for _, item := range v.Content {
				l.mapping(item, "a resources.cleanup entry", map[string]fieldFn{
					"delete-temp-files": func(k, v *yaml.Node) { c.DeleteTempFiles, _ = l.boolean(v, "delete-temp-files") },
					"final-command": func(k, v *yaml.Node) {
						s, ok := l.str(v, "final-command")
						if ok {
							c.FinalCommands = append(c.FinalCommands, s)
							l.site(v, s, refCtx{what: "final-command", step: -1, cmd: shCommand})
						}
					},
				}, nil)
			}
			r.Cleanup = c
		},
	}, map[string]string{"memory": "did you mean max-memory?", "cpus": "cpu limits are ours: sandboxed.cpus", "pids-limit": "pids limits are ours: sandboxed.pids-limit"})
	return r
}

func (l *defLoader) interactiveOptions(n *yaml.Node) *InteractiveOptions {
	o := &InteractiveOptions{}
	l.mapping(n, "interactive-options", map[string]fieldFn{
		"timeout":          func(k, v *yaml.Node) { o.Timeout, _ = l.duration(v, "interactive-options.timeout", true) },
		"default-response": func(k, v *yaml.Node) { o.DefaultResponse, _ = l.str(v, "default-response") },
	}, nil)
	return o
}

// tests reads `tests:`: a list of cases, or a mapping with setup, cleanup,
// environment and cases (the suite form; see COMPAT.md).
func (l *defLoader) tests(n *yaml.Node) *TestSuite {
	ts := &TestSuite{}
	if nodeIsNull(n) {
		return ts
	}
	switch n.Kind {
	case yaml.SequenceNode:
		l.testCases(ts, n)
	case yaml.MappingNode:
		l.mapping(n, "tests", map[string]fieldFn{
			"setup":       func(k, v *yaml.Node) { ts.Setup, _ = l.strList(v, "tests.setup", true) },
			"cleanup":     func(k, v *yaml.Node) { ts.Cleanup, _ = l.strList(v, "tests.cleanup", true) },
			"environment": func(k, v *yaml.Node) { ts.Environment, _ = l.strMap(v, "tests.environment"); l.checkEnvNames(v) },
			"cases":       func(k, v *yaml.Node) { l.testCases(ts, v) },
		}, map[string]string{"name": "a suite with setup/cleanup lists its cases under tests.cases: [...]"})
	default:
		l.errf(n, "write tests: [- name: ..., expected: ...] or tests: {setup: [...], cases: [...]}", "tests must be a list of cases or a mapping, got %s", nodeKindName(n))
	}
	return ts
}

func (l *defLoader) testCases(ts *TestSuite, n *yaml.Node) {
	seen := map[string]int{}
	for _, cn := range l.items(n, "test cases", "") {
		tc := TestCase{Pos: l.pos(cn)}
		var nameNode *yaml.Node
		ok := l.mapping(cn, "a test case", map[string]fieldFn{
			"name":        func(k, v *yaml.Node) { nameNode = v; tc.Name, _ = l.str(v, "test name") },
			"description": func(k, v *yaml.Node) { tc.Description, _ = l.str(v, "test description") },
			"parameters": func(k, v *yaml.Node) {
				tc.Parameters, _ = l.strMap(v, "test parameters")
				if v.Kind == yaml.MappingNode {
					for i := 0; i < len(v.Content); i += 2 {
						l.testParams[cn] = append(l.testParams[cn], v.Content[i])
					}
				}
			},
			"expected": func(k, v *yaml.Node) { tc.Expected = l.expected(v) },
			"cleanup":  func(k, v *yaml.Node) { tc.Cleanup, _ = l.strList(v, "test cleanup", true) },
		}, map[string]string{"expect": "did you mean expected?", "params": "did you mean parameters?"})
		if !ok {
			continue
		}
		switch {
		case nameNode == nil || tc.Name == "":
			l.errf(cn, "add name: NAME; sandboxed tool test --test NAME runs one case", "test case has no name")
		default:
			if line, dup := seen[tc.Name]; dup {
				l.errf(nameNode, fmt.Sprintf("the first %s is at line %d", tc.Name, line), "duplicate test name %s", tc.Name)
			}
			seen[tc.Name] = nameNode.Line
		}
		ts.Cases = append(ts.Cases, tc)
	}
}

var expectedKeyHints = map[string]string{
	"output-contains-any": "not part of the format; write one case per platform, or output-matches: \"a|b\"",
	"directory-exists":    "use file-exists (it holds for directories too)",
	"stdout-contains":     "did you mean output-contains?",
	"exit_code":           "did you mean exit-code?",
}

// expected reads a test's assertions. output-contains, output-not-contains,
// output-matches, file-exists and file-not-exists take a string or a list.
// file-contains takes a mapping PATH: TEXT (or PATH: [TEXT, ...]) or a list
// of {path, text} (see COMPAT.md).
func (l *defLoader) expected(n *yaml.Node) Expected {
	var e Expected
	list := func(dst *[]string, what string) fieldFn {
		return func(k, v *yaml.Node) { *dst, _ = l.strList(v, what, true) }
	}
	l.mapping(n, "expected", map[string]fieldFn{
		"exit-code": func(k, v *yaml.Node) {
			if i, ok := l.integer(v, "exit-code"); ok {
				if i < 0 || i > 255 {
					l.errf(v, "exit codes are 0 to 255", "exit-code %d is out of range", i)
				}
				c := int(i)
				e.ExitCode = &c
			}
		},
		"output-contains":     list(&e.OutputContains, "output-contains"),
		"output-not-contains": list(&e.OutputNotContains, "output-not-contains"),
		"output-matches": func(k, v *yaml.Node) {
			e.OutputMatches, _ = l.strList(v, "output-matches", true)
			items := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				items = v.Content
			}
			for i, re := range e.OutputMatches {
				if _, err := regexp.Compile(re); err != nil && i < len(items) {
					l.errf(items[i], "patterns use Go's RE2 syntax", "invalid regex in output-matches: %v", err)
				}
			}
		},
		"file-exists":     list(&e.FileExists, "file-exists"),
		"file-not-exists": list(&e.FileNotExists, "file-not-exists"),
		"file-contains":   func(k, v *yaml.Node) { e.FileContains = l.fileContains(v) },
		"error": func(k, v *yaml.Node) {
			if b, ok := l.boolean(v, "expected.error"); ok {
				e.Error = &b
			}
		},
	}, expectedKeyHints)
	return e
}

func (l *defLoader) fileContains(n *yaml.Node) []FileContains {
	var out []FileContains
	hint := "write file-contains: {PATH: TEXT} or file-contains: [{path: PATH, text: TEXT}]"
	switch n.Kind {
	case yaml.MappingNode:
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				l.errf(k, hint, "a path in file-contains must be a string, got %s", nodeKindName(k))
				continue
			}
			if seen[k.Value] {
				l.errf(k, "list several texts for one path as PATH: [A, B]", "duplicate path %s in file-contains", k.Value)
				continue
			}
			seen[k.Value] = true
			texts, _ := l.strList(v, "file-contains."+k.Value, true)
			for _, t := range texts {
				out = append(out, FileContains{Path: k.Value, Text: t})
			}
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			var fc FileContains
			var havePath, haveText bool
			ok := l.mapping(item, "a file-contains entry", map[string]fieldFn{
				"path": func(k, v *yaml.Node) { fc.Path, havePath = l.str(v, "file-contains path") },
				"text": func(k, v *yaml.Node) { fc.Text, haveText = l.str(v, "file-contains text") },
			}, map[string]string{"contains": "did you mean text?", "file": "did you mean path?"})
			if ok && (!havePath || !haveText) {
				l.errf(item, hint, "a file-contains entry needs path and text")
				continue
			}
			out = append(out, fc)
		}
	default:
		l.errf(n, hint, "file-contains must be a mapping or a list, got %s", nodeKindName(n))
	}
	return out
}

func (l *defLoader) changelog(n *yaml.Node) []Change {
	var out []Change
	for _, item := range l.items(n, "changelog", "write changelog: [- version: 1.0.0 / changes: ...]") {
		var c Change
		var haveV bool
		ok := l.mapping(item, "a changelog entry", map[string]fieldFn{
			"version": func(k, v *yaml.Node) { c.Version, haveV = l.str(v, "changelog version") },
			"changes": func(k, v *yaml.Node) { c.Changes, _ = l.str(v, "changelog changes") },
		}, nil)
		if ok && (!haveV || c.Version == "") {
			l.errf(item, "add version: X.Y.Z", "changelog entry has no version")
		}
		out = append(out, c)
	}
	return out
}

func (l *defLoader) dependencies(n *yaml.Node) []Dependency {
	var out []Dependency
	for _, item := range l.items(n, "dependencies", "write dependencies: [- tool: NAME / version: \">=1.0.0\"]") {
		var dep Dependency
		ok := l.mapping(item, "a dependency", map[string]fieldFn{
			"tool": func(k, v *yaml.Node) {
				dep.Tool, _ = l.str(v, "dependency tool")
				if dep.Tool != "" && !isToolName(dep.Tool) {
					l.errf(v, "", "dependency tool %q is not a tool name", dep.Tool)
				}
			},
			"version":  func(k, v *yaml.Node) { dep.Version, _ = l.str(v, "dependency version") },
			"required": func(k, v *yaml.Node) { dep.Required, _ = l.boolean(v, "dependency required") },
			"scope": func(k, v *yaml.Node) {
				dep.Scope, _ = l.str(v, "dependency scope")
				if !inList(knownDepScopes, dep.Scope) {
					l.errf(v, "scope is one of "+strings.Join(knownDepScopes, ", "), "unknown dependency scope %q", dep.Scope)
				}
			},
		}, map[string]string{"name": "did you mean tool?"})
		if ok && dep.Tool == "" {
			l.errf(item, "add tool: NAME", "dependency has no tool")
		}
		out = append(out, dep)
	}
	return out
}

func (l *defLoader) debugging(n *yaml.Node) *Debugging {
	db := &Debugging{}
	l.mapping(n, "debugging", map[string]fieldFn{
		"verbose": func(k, v *yaml.Node) { db.Verbose, _ = l.boolean(v, "debugging.verbose") },
		"dry-run": func(k, v *yaml.Node) { db.DryRun, _ = l.boolean(v, "debugging.dry-run") },
		"log-file": func(k, v *yaml.Node) {
			db.LogFile, _ = l.str(v, "debugging.log-file")
			l.site(v, db.LogFile, refCtx{what: "debugging.log-file", step: -1})
		},
	}, nil)
	return db
}

// sandboxed reads our own section. Nothing else of ours appears anywhere
// else in a definition.
func (l *defLoader) sandboxed(n *yaml.Node) *SandboxedExt {
	x := &SandboxedExt{}
	l.mapping(n, "sandboxed", map[string]fieldFn{
		"image": func(k, v *yaml.Node) {
			x.Image, _ = l.str(v, "sandboxed.image")
			if strings.TrimSpace(x.Image) == "" || strings.ContainsAny(x.Image, " \t\n") {
				l.errf(v, "name a local image, e.g. sandboxed-runner:latest", "sandboxed.image %q is not an image reference", x.Image)
			}
		},
		"runtime": func(k, v *yaml.Node) {
			x.Runtime, _ = l.str(v, "sandboxed.runtime")
			if !isToolName(x.Runtime) {
				l.errf(v, "name a container runtime registered with Docker, e.g. runc or runsc", "sandboxed.runtime %q is not a runtime name", x.Runtime)
			}
		},
		"pids-limit": func(k, v *yaml.Node) {
			if i, ok := l.integer(v, "sandboxed.pids-limit"); ok {
				if i < 1 {
					l.errf(v, "omit the key for the policy's default (limits.pids: 256 built in; 64 for reduced privilege)", "sandboxed.pids-limit must be at least 1")
				}
				x.PidsLimit = i
			}
		},
		"cpus": func(k, v *yaml.Node) {
			if f, ok := l.number(v, "sandboxed.cpus"); ok {
				// The kernel's least CFS quota is 1ms of its 100ms period.
				if !(f >= MinCPUs && f <= MaxCPUs) {
					l.errf(v, "write a number of CPUs such as 0.5 or 2", "sandboxed.cpus must be at least %g and at most %d", MinCPUs, MaxCPUs)
				}
				x.CPUs = f
			}
		},
		"tmpfs-size":        func(k, v *yaml.Node) { x.TmpfsSize, _ = l.size(v, "sandboxed.tmpfs-size") },
		"exposed-as":        func(k, v *yaml.Node) { x.ExposedAs = l.exposedAs(v) },
		"parameter-schemas": func(k, v *yaml.Node) { x.ParameterSchemas = l.paramSchemas(v) },
		"credentials":       func(k, v *yaml.Node) { x.Credentials = l.credentials(v) },
		"http":              func(k, v *yaml.Node) { x.HTTP = l.httpRules(v) },
		"quotas":            func(k, v *yaml.Node) { x.Quotas = l.quotas(v) },
	}, map[string]string{"memory": "memory is CYCOD's resources.max-memory", "timeout": "timeouts are CYCOD's timeout or resources.timeout", "network": "network access is requested with security.required-permissions"})
	return x
}

// exposedAs reads sandboxed.exposed-as. Which parameters it may name is
// checked with the other references, in validate.
func (l *defLoader) exposedAs(n *yaml.Node) *ExposedAs {
	x := &ExposedAs{}
	l.mapping(n, "sandboxed.exposed-as", map[string]fieldFn{
		"name": func(k, v *yaml.Node) {
			x.Name, _ = l.str(v, "sandboxed.exposed-as.name")
			if !functionNameRe().MatchString(x.Name) {
				l.errf(v, "a function name is 1 to 64 letters, digits, '_' or '-'", "sandboxed.exposed-as.name %q is not a function name", x.Name)
			}
		},
		"parameters": func(k, v *yaml.Node) {
			x.Parameters, _ = l.strMap(v, "sandboxed.exposed-as.parameters")
			l.exposedParams = v
			if v.Kind != yaml.MappingNode {
				return
			}
			for i := 1; i < len(v.Content); i += 2 {
				if e := v.Content[i]; e.Kind == yaml.ScalarNode && !validExposedParam(e.Value) {
					l.errf(e, "write the name the tool documents: 1 to 128 bytes of text without control characters", "exposed parameter name %q is not valid", e.Value)
				}
			}
		},
	}, nil)
	return x
}

// paramSchemas reads sandboxed.parameter-schemas: parameter name → JSON
// Schema (a mapping). That each names a declared parameter is checked in
// validate.
func (l *defLoader) paramSchemas(n *yaml.Node) map[string]ParamSchema {
	if n.Kind != yaml.MappingNode {
		l.errf(n, "write parameter-schemas: {NAME: {type: [number, boolean]}}", "sandboxed.parameter-schemas must be a mapping, got %s", nodeKindName(n))
		return nil
	}
	l.paramSchemaNode = n
	out := map[string]ParamSchema{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		what := "sandboxed.parameter-schemas." + k.Value
		if v.Kind != yaml.MappingNode {
			l.errf(v, "a JSON Schema is a mapping, e.g. {type: [number, boolean]}", "%s must be a mapping, got %s", what, nodeKindName(v))
			continue
		}
		a, ok := l.toAny(v, what)
		if !ok {
			continue
		}
		sch, _ := normalizeJSON(a).(map[string]any)
		if err := CheckParamSchema(sch); err != nil {
			l.errf(v, "binding checks type, enum, const, minimum, maximum, lengths, pattern, items, properties, required and anyOf/oneOf/allOf", "%s: %v", what, err)
			continue
		}
		out[k.Value] = sch
	}
	return out
}

// validExposedParam reports whether s may be a parameter's exposed name:
// any JSON property name of 1 to 128 bytes of UTF-8 text without control
// characters.
func validExposedParam(s string) bool {
	if s == "" || len(s) > 128 || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// credentials reads sandboxed.credentials. That no env: grant or
// environment variable names a credential's variable is checked in
// validate, once the whole definition is read.
func (l *defLoader) credentials(n *yaml.Node) []Credential {
	var out []Credential
	seen := map[string]bool{}
	const hint = "write credentials: [- env: NAME / hosts: [api.example.com]] (or file: PATH or command: [ARGV] with name: NAME)"
	for _, item := range l.items(n, "sandboxed.credentials", hint) {
		var c Credential
		var sources []*yaml.Node
		ok := l.mapping(item, "a credential", map[string]fieldFn{
			"name": func(k, v *yaml.Node) {
				c.Name, _ = l.str(v, "credential name")
				if !validEnvName(c.Name) {
					l.errf(v, "a variable name is letters, digits and _, not starting with a digit", "credential name %q is not a variable name", c.Name)
				}
			},
			"env": func(k, v *yaml.Node) {
				sources = append(sources, k)
				c.Env, _ = l.str(v, "credential env")
				if !validEnvName(c.Env) {
					l.errf(v, "name a variable of the host environment", "credential env %q is not a variable name", c.Env)
				}
			},
			"file": func(k, v *yaml.Node) {
				sources = append(sources, k)
				c.File, _ = l.str(v, "credential file")
				if !strings.HasPrefix(c.File, "/") && !strings.HasPrefix(c.File, "~/") {
					l.errf(v, "write an absolute path or ~/PATH", "credential file %q is not an absolute path", c.File)
				}
			},
			"command": func(k, v *yaml.Node) {
				sources = append(sources, k)
				if v.Kind != yaml.SequenceNode {
					l.errf(v, "write the command as a list, run without a shell: command: [pass, show, api-token]", "credential command must be a list")
					return
				}
				c.Command, _ = l.strList(v, "credential command", false)
				if len(c.Command) == 0 || c.Command[0] == "" {
					l.errf(v, "name the program first: command: [pass, show, api-token]", "credential command is empty")
				}
			},
			"setup": func(k, v *yaml.Node) {
				c.Setup, _ = l.str(v, "credential setup")
			},
			"hosts": func(k, v *yaml.Node) {
				c.Hosts, _ = l.strList(v, "credential hosts", false)
				for i, h := range c.Hosts {
					if err := checkCredentialHost(h); err != nil {
						at := v
						if v.Kind == yaml.SequenceNode && i < len(v.Content) {
							at = v.Content[i]
						}
						l.errf(at, "name the hosts the credential is for: api.example.com or *.example.com", "%v", err)
					}
				}
			},
		}, map[string]string{"value": "a credential's value never appears in a definition: name where it comes from (env, file or command)", "host": "did you mean hosts?"})
		if !ok {
			continue
		}
		switch {
		case len(sources) == 0:
			l.errf(item, "add env: NAME, file: PATH or command: [ARGV]", "credential has no source")
		case len(sources) > 1:
			l.errf(sources[1], "keep one of env, file and command", "credential has two sources (%s and %s)", sources[0].Value, sources[1].Value)
		}
		if c.Env == "" && c.Name == "" && len(sources) > 0 {
			l.errf(item, "add name: VARIABLE, the variable that holds the stand-in inside the sandbox", "a credential from a %s needs a name", c.SourceKind())
		}
		if len(c.Hosts) == 0 {
			l.errf(item, "add hosts: [api.example.com], the only hosts whose requests may carry it", "credential has no hosts")
		}
		if name := c.VarName(); name != "" {
			if seen[name] {
				l.errf(item, "give each credential its own name", "credential %s is declared twice", name)
			}
			seen[name] = true
		}
		l.credNodes = append(l.credNodes, item)
		out = append(out, c)
	}
	return out
}

// checkCredentialHost accepts the hosts of credentials, HTTP rules and
// quotas (netrule.ParseNamedHost): a name, "*.suffix" or an IP literal,
// without parameters; not "*", which would send the secret (or terminate
// the TLS of) every host.
func checkCredentialHost(h string) error {
	if strings.ContainsAny(h, "{}") {
		return fmt.Errorf("host %q: parameters are not substituted here; name the host", h)
	}
	if h == "" || h == "*" {
		return fmt.Errorf("host %q: name a host or *.example.com; a credential or HTTP rule never covers every host", h)
	}
	_, err := netrule.ParseNamedHost(h)
	return err
}

// httpRules reads sandboxed.http.
func (l *defLoader) httpRules(n *yaml.Node) []HTTPRule {
	var out []HTTPRule
	const hint = "write http: [- host: api.example.com / methods: [GET] / paths: [/repos/]]"
	for _, item := range l.items(n, "sandboxed.http", hint) {
		var r HTTPRule
		ok := l.mapping(item, "an HTTP rule", map[string]fieldFn{
			"host": func(k, v *yaml.Node) {
				r.Host, _ = l.str(v, "http rule host")
				if err := checkCredentialHost(r.Host); err != nil {
					l.errf(v, "name the host the rule narrows, such as api.example.com or *.example.com", "%v", err)
				}
			},
			"methods": func(k, v *yaml.Node) {
				r.Methods, _ = l.strList(v, "http rule methods", false)
				for _, m := range r.Methods {
					if netrule.CheckHTTPMethod(m) != nil {
						l.errf(v, "write upper-case HTTP methods: [GET, HEAD]", "http rule method %q is not an HTTP method", m)
					}
				}
			},
			"paths": func(k, v *yaml.Node) {
				r.Paths, _ = l.strList(v, "http rule paths", false)
				for _, p := range r.Paths {
					if netrule.CheckHTTPPath(p) != nil {
						l.errf(v, "write path prefixes such as /repos/: starting with /, without %-escapes, a query (?), a fragment (#), backslashes, or . and .. segments", "http rule path %q is not a plain path prefix", p)
					}
				}
			},
		}, map[string]string{"method": "did you mean methods?", "path": "did you mean paths?", "hosts": "one host per rule: host: NAME"})
		if ok && r.Host == "" {
			l.errf(item, "add host: api.example.com", "HTTP rule has no host")
		}
		out = append(out, r)
	}
	return out
}
