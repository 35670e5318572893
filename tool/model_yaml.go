package tool

import (
	"reflect"

	"gopkg.in/yaml.v3"
)

// The model types whose YAML shape is not their Go shape. Everything else
// is written from the struct tags (see yamlform.go).

// yamlPairs writes the execution key that carried the command (bash: …),
// and shell: for a script.
func (e Exec) yamlPairs() []*yaml.Node {
	pairs := []*yaml.Node{strScalar(string(e.Kind)), strScalar(e.Command)}
	if e.Shell != "" {
		pairs = append(pairs, strScalar("shell"), strScalar(e.Shell))
	}
	return pairs
}

// MarshalYAML writes a parameter with its type made explicit, its default
// when it has one (even a zero or null one), and escape-shell under the
// parameter's own security: key.
func (p Parameter) MarshalYAML() (any, error) {
	if p.Type == "" {
		p.Type = TypeString
	}
	m, err := encodeStruct(reflect.ValueOf(p))
	if err != nil {
		return nil, err
	}
	if p.HasDefault {
		def := anyScalar(p.Default)
		if f, ok := p.Default.(float64); ok && p.Type == TypeNumber {
			def = floatScalar(f) // number defaults are float64 whatever was written
		}
		// After type, description and required.
		at := 4
		if p.Required {
			at = 6
		}
		m.Content = append(m.Content[:at], append([]*yaml.Node{strScalar("default"), def}, m.Content[at:]...)...)
	}
	if p.EscapeShell != nil {
		s := mapNode()
		put(s, "escape-shell", boolScalar(*p.EscapeShell))
		put(m, "security", s)
	}
	return m, nil
}

// MarshalYAML writes a property's validation; a property with none is an
// empty mapping.
func (v *Validation) MarshalYAML() (any, error) {
	if v == nil {
		return mapNode(), nil
	}
	return encodeStruct(reflect.ValueOf(*v))
}

// MarshalYAML writes resources.cleanup as the spec's list of one-key maps.
func (c Cleanup) MarshalYAML() (any, error) {
	s := seqNode()
	if c.DeleteTempFiles {
		e := mapNode()
		put(e, "delete-temp-files", boolScalar(true))
		s.Content = append(s.Content, e)
	}
	for _, fc := range c.FinalCommands {
		e := mapNode()
		put(e, "final-command", strScalar(fc))
		s.Content = append(s.Content, e)
	}
	return s, nil
}

// MarshalYAML writes tests: as a plain list of cases, or as a mapping with
// setup, cleanup and environment when the suite has any of them (the two
// shapes the spec shows).
func (t TestSuite) MarshalYAML() (any, error) {
	cases, err := encodeValue(reflect.ValueOf(t.Cases), "")
	if err != nil {
		return nil, err
	}
	if t.Setup == nil && t.Cleanup == nil && t.Environment == nil {
		return cases, nil
	}
	return encodeStruct(reflect.ValueOf(t))
}
