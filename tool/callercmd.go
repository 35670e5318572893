package tool

// Unescaped returns the parameters the command substitutes with
// escape-shell: false, in order of appearance: their text becomes part of
// the command as the caller wrote it (a `bash {COMMAND}` tool). The
// policy's command rules judge such commands.
func (c *BoundCommand) Unescaped() []string {
	if c == nil || c.tmpl == nil || c.b == nil {
		return nil
	}
	var out []string
	for _, r := range c.tmpl.Refs() {
		if p, ok := c.b.Param(r); ok && !p.Escape {
			out = append(out, r)
		}
	}
	return out
}

// Language names the language the command is read in, for the command
// rules: "sh", "bash" (also a run: command, whose argv is shown as a bash
// line), "pwsh", or the interpreter of a script (python, node, …).
func (c *BoundCommand) Language() string {
	switch {
	case c.interp != "":
		return c.interp
	case c.Syntax == SyntaxSh:
		return "sh"
	case c.Syntax == SyntaxBash, c.Syntax == SyntaxArgv:
		return "bash"
	case c.Syntax == SyntaxPwsh:
		return "pwsh"
	}
	return "unknown"
}
