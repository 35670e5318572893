package tool

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// CheckRunnable reports what keeps a loaded definition from running on
// this host, each at its place in the file: a platforms: list without
// linux (or unix), a commands: without an entry for linux, unix or
// default, a cmd: command (Windows CMD), a transform that fails for a
// value of its parameter's type, and a shell or interpreter that
// lookPath cannot find where the sandbox looks (the host's system
// directories). A definition the loader accepts is valid CYCOD anywhere;
// `tool validate` adds these so that a definition that validates here runs
// here. An alias is checked through its base tool.
//
// lookPath reports whether a program is found; nil skips that check, as
// does a tool of the container tier, which runs its image's programs.
func CheckRunnable(d *Definition, lookPath func(prog string) error) []Diagnostic {
	if d == nil || d.Type == "alias" {
		return nil
	}
	var out []Diagnostic
	at := func(p Pos) Pos {
		if p.Line == 0 {
			p = d.Pos.Name
		}
		if p.File == "" {
			p.File = d.Source.Path
		}
		return p
	}
	if len(d.Platforms) > 0 {
		ok := false
		for _, p := range d.Platforms {
			ok = ok || p == "linux" || p == "unix"
		}
		if !ok {
			out = append(out, Diagnostic{Pos: at(d.Pos.Platforms),
				Msg:  fmt.Sprintf("the tool lists platforms [%s], which do not include linux, so it never runs here", strings.Join(d.Platforms, ", ")),
				Hint: "add linux to platforms if its command runs on linux"})
		}
	}
	check := func(where string, pos Pos, ex *Exec) {
		spec, err := specFor(d.Name, ex)
		if err != nil {
			msg := err.Error()
			msg = strings.TrimPrefix(msg, "bind "+d.Name+": ")
			msg = strings.TrimSuffix(msg, ": "+ErrUnsupportedExec.Error())
			if !strings.HasPrefix(msg, where+":") {
				msg = where + ": " + msg
			}
			out = append(out, Diagnostic{Pos: at(pos), Msg: msg})
			return
		}
		if lookPath == nil || len(spec.prefix) == 0 || d.Security.Isolation == IsolationContainer {
			return // a container runs its image's programs, not the host's
		}
		if err := lookPath(spec.prefix[0]); err != nil {
			out = append(out, Diagnostic{Pos: at(pos),
				Msg:  fmt.Sprintf("%s runs %s, which is not found in this host's system directories (the only ones a sandbox sees)", where, spec.prefix[0]),
				Hint: "install it in /usr/bin, or run the command with an interpreter that is there (bash:, or script: with shell: sh)"})
		}
	}
	for i := range d.Parameters {
		p := &d.Parameters[i]
		if p.Transform == "" {
			continue
		}
		v := sampleValue(p)
		if _, err := EvalTransform(p.Transform, v, TransformLimits{Timeout: 2 * time.Second}); err != nil {
			var te *TransformError
			if errors.As(err, &te) && te.Reason != "" {
				err = errors.New(te.Reason)
			}
			out = append(out, Diagnostic{Pos: at(d.Pos.Parameters[p.Name]),
				Msg:  fmt.Sprintf("the transform of parameter %s fails for the value %s: %v", p.Name, canonical(v), err),
				Hint: "transforms run in a plain JavaScript interpreter: no Node modules (path, fs), no I/O; value is the parameter's typed value"})
		}
	}
	switch {
	case len(d.Steps) > 0:
		for i := range d.Steps {
			st := &d.Steps[i]
			if st.Exec == nil {
				continue
			}
			pos := d.Pos.Steps[st.Name]
			check("step "+st.Name, pos, st.Exec)
			if st.ErrorHandling != nil && st.ErrorHandling.Fallback != "" {
				fb := *st.Exec
				fb.Command = st.ErrorHandling.Fallback
				check("the fallback of step "+st.Name, pos, &fb)
			}
		}
	case d.Exec != nil:
		check(execKeyName(d.Exec), d.Pos.Exec, d.Exec)
	case d.Commands != nil:
		bd := &binder{d: d, env: BindEnv{Platform: "linux"}}
		ex, err := bd.singleExec()
		if err != nil {
			out = append(out, Diagnostic{Pos: at(d.Pos.Exec), Msg: "commands has no entry for linux, unix or default, so the tool never runs here",
				Hint: "add commands.platforms.linux or commands.default"})
			break
		}
		check("commands", d.Pos.Exec, ex)
	}
	return out
}

// sampleValue is a value of p's type to try its transform with: its
// default or first example when it has one.
func sampleValue(p *Parameter) any {
	if p.HasDefault && p.Default != nil {
		if s, ok := p.Default.(string); !ok || !strings.Contains(s, "{") {
			if v, err := coerce(p.Type, p.Default); err == nil {
				return v
			}
		}
	}
	if len(p.Examples) > 0 {
		if v, err := coerce(p.Type, p.Examples[0]); err == nil {
			return v
		}
	}
	switch p.Type {
	case TypeNumber:
		return 1.0
	case TypeBoolean:
		return true
	case TypeArray:
		return []any{"a"}
	case TypeObject:
		return map[string]any{"k": "v"}
	}
	return "sample"
}

// execKeyName is the key a command was written under, for messages.
func execKeyName(ex *Exec) string {
	if ex.Kind == ExecScript && ex.Shell != "" {
		return "script (shell " + ex.Shell + ")"
	}
	return string(ex.Kind)
}
