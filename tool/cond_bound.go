package tool

// Builtin returns the value the bound tool gives the built-in reference
// name ({WORKSPACE}, {TEMP}, {TOOL_NAME}); "" when it has none. Commands
// bound later for the same run (resources.cleanup) use it to see the same
// values.
func (b *Bound) Builtin(name string) string {
	if b == nil {
		return ""
	}
	return b.builtins[name]
}
