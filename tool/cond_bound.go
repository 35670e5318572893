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

// ConditionSource returns the run-condition as written in the definition
// (references not substituted), for messages.
func (s *BoundStep) ConditionSource() string {
	if s.condTmpl != nil {
		return s.condTmpl.src
	}
	return s.RunCondition
}

// CheckCondition parses the run-condition, so a condition that cannot be
// evaluated refuses the run before anything runs.
func (s *BoundStep) CheckCondition() error {
	_, err := s.condition()
	return err
}
