package sandbox

import (
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// callerCommands are the commands of a bound tool that hold text from its
// caller (parameters substituted with escape-shell: false), for the
// policy's command rules: every step's command, fallback and the cleanup
// commands.
func callerCommands(b *tool.Bound) []policy.CallerCommand {
	var out []policy.CallerCommand
	add := func(name string, c *tool.BoundCommand) {
		if ps := c.Unescaped(); len(ps) > 0 {
			out = append(out, policy.CallerCommand{Step: name, Text: c.Command, Shell: c.Language(), Params: ps})
		}
	}
	for i := range b.Steps {
		s := &b.Steps[i]
		if s.UseTool != "" {
			continue
		}
		name := s.Name
		if len(b.Steps) == 1 {
			name = ""
		}
		add(name, &s.BoundCommand)
		if s.Fallback != nil {
			add(s.Name+" (fallback)", s.Fallback)
		}
	}
	for i := range b.Cleanup {
		add("cleanup", &b.Cleanup[i])
	}
	return out
}
