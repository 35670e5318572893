package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Schema formats accepted by FunctionSchema.
const (
	SchemaOpenAI    = "openai"    // {"name","description","parameters"}
	SchemaAnthropic = "anthropic" // {"name","description","input_schema"}
	SchemaMCP       = "mcp"       // {"name","description","inputSchema"}
)

// SchemaFormats lists the formats FunctionSchema accepts.
var SchemaFormats = []string{SchemaOpenAI, SchemaAnthropic, SchemaMCP}

// functionNameRe is OpenAI's (and Anthropic's) rule for function names.
var functionNameRe = lazyRegexp(`^[a-zA-Z0-9_-]{1,64}$`)

// OrderedObject is a JSON object that marshals its members in insertion
// order, so schemas list properties in declaration order.
type OrderedObject struct {
	keys []string
	vals map[string]any
}

// NewOrderedObject returns an empty object.
func NewOrderedObject() *OrderedObject { return &OrderedObject{vals: map[string]any{}} }

// Set adds or replaces a member; a new member goes last.
func (o *OrderedObject) Set(key string, v any) *OrderedObject {
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
	return o
}

// Get returns a member.
func (o *OrderedObject) Get(key string) (any, bool) {
	v, ok := o.vals[key]
	return v, ok
}

// Keys returns the member names in order.
func (o *OrderedObject) Keys() []string { return append([]string(nil), o.keys...) }

// MarshalJSON writes the members in order.
func (o *OrderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// FunctionSchema returns the function-calling schema of d in format
// (openai, anthropic or mcp) as an *OrderedObject ready for json.Marshal.
//
// function-calling.schema-generation is honoured: parameter-mapping (tool
// type → JSON Schema type; unknown types map to string), include-descriptions,
// include-defaults and example-generation (each true unless set false;
// examples go in an "examples" array), function-name (with {TOOL_NAME})
// and description-template (with {DESCRIPTION} and {TOOL_NAME}).
// Validation rules become the JSON Schema keywords of the same names;
// object properties and required become nested "properties"/"required";
// arrays get "items" typed from their default or examples (string if
// unknown). Defaults are typed (a number default 10 is 10); a default that
// references another parameter is not a value and is left out, as is the
// parameter from "required" when an alias default-parameters entry or a
// default gives it a value. The name must match ^[a-zA-Z0-9_-]{1,64}$.
// The tool and its parameters appear under their exposed names
// (sandboxed.exposed-as; function-name, when set, wins for the tool).
func FunctionSchema(d *Definition, format string) (any, error) {
	var inputKey string
	switch format {
	case SchemaOpenAI:
		inputKey = "parameters"
	case SchemaAnthropic:
		inputKey = "input_schema"
	case SchemaMCP:
		inputKey = "inputSchema"
	default:
		return nil, fmt.Errorf("export schema of %s: unknown format %q; use one of %s: %w", d.Name, format, strings.Join(SchemaFormats, ", "), ErrSchema)
	}
	g := &SchemaGeneration{}
	if d.FunctionCalling != nil && d.FunctionCalling.SchemaGeneration != nil {
		g = d.FunctionCalling.SchemaGeneration
	}
	on := func(b *bool) bool { return b == nil || *b }

	name := d.ExposedName()
	if g.FunctionName != "" {
		name = strings.ReplaceAll(g.FunctionName, "{TOOL_NAME}", d.Name)
	}
	if !functionNameRe().MatchString(name) {
		return nil, fmt.Errorf("export schema of %s: function name %q must be 1 to 64 letters, digits, '_' or '-'; set function-calling.schema-generation.function-name: %w", d.Name, name, ErrSchema)
	}
	desc := d.Description
	if g.DescriptionTemplate != "" {
		desc = strings.NewReplacer("{DESCRIPTION}", d.Description, "{TOOL_NAME}", d.Name).Replace(g.DescriptionTemplate)
	}

	declared := map[string]bool{}
	for _, p := range d.Parameters {
		declared[p.Name] = true
	}
	props := NewOrderedObject()
	var required []string
	for i := range d.Parameters {
		p := &d.Parameters[i]
		ps, hasDefault, err := paramSchema(d, p, g, on(g.IncludeDescriptions), on(g.IncludeDefaults), on(g.ExampleGeneration), declared)
		if err != nil {
			return nil, err
		}
		props.Set(d.ExposedParam(p.Name), ps)
		if p.Required && !hasDefault {
			required = append(required, d.ExposedParam(p.Name))
		}
	}
	input := NewOrderedObject().Set("type", "object").Set("properties", props)
	if len(required) > 0 {
		input.Set("required", required)
	}
	return NewOrderedObject().Set("name", name).Set("description", desc).Set(inputKey, input), nil
}

func mapType(g *SchemaGeneration, t ParamType) string {
	if t == "" {
		t = TypeString
	}
	if m, ok := g.ParameterMapping[string(t)]; ok && m != "" {
		return m
	}
	switch t {
	case TypeString, TypeNumber, TypeBoolean, TypeArray, TypeObject:
		return string(t)
	}
	return "string"
}

// paramSchema returns one property's schema and whether it has a default
// value (a parameter default or an alias default-parameters entry).
func paramSchema(d *Definition, p *Parameter, g *SchemaGeneration, descs, defaults, examples bool, declared map[string]bool) (*OrderedObject, bool, error) {
	if own := d.ParamSchemaOf(p.Name); own != nil {
		// The tool's own schema of the parameter, as it gave it.
		s := NewOrderedObject()
		for _, k := range sortedAnyKeys(own) {
			if k == "description" && !descs || k == "default" && !defaults || k == "examples" && !examples {
				continue
			}
			s.Set(k, own[k])
		}
		if _, has := own["description"]; !has && descs && p.Description != "" {
			s.Set("description", p.Description)
		}
		_, hasDefault := d.DefaultParameters[p.Name]
		return s, hasDefault || p.HasDefault || p.Default != nil, nil
	}
	s := NewOrderedObject().Set("type", mapType(g, p.Type))
	if descs && p.Description != "" {
		s.Set("description", p.Description)
	}
	addRules(s, p.Validation, g)

	var def any
	hasDefault := false
	if v, ok := d.DefaultParameters[p.Name]; ok {
		def, hasDefault = v, true
	} else if p.HasDefault || p.Default != nil {
		def, hasDefault = p.Default, true
	}
	if p.Type == TypeArray {
		s.Set("items", NewOrderedObject().Set("type", itemType(def, p.Examples)))
	}
	if hasDefault && defaults {
		if str, ok := def.(string); !ok || !referencesParam(str, declared) {
			v, err := coerce(p.Type, def)
			if err != nil {
				return nil, false, fmt.Errorf("export schema of %s: default of %s: %v: %w", d.Name, p.Name, err, ErrSchema)
			}
			s.Set("default", v)
		}
	}
	if examples && len(p.Examples) > 0 {
		ex := make([]any, len(p.Examples))
		for i, e := range p.Examples {
			ex[i] = normalizeJSON(e)
		}
		s.Set("examples", ex)
	}
	return s, hasDefault, nil
}

func referencesParam(s string, declared map[string]bool) bool {
	return len(ParseTemplate(s, SyntaxPlain, func(n string) bool { return declared[n] }).Refs()) > 0
}

// itemType guesses an array's item type from its default or examples.
func itemType(def any, examples []any) string {
	for _, cand := range append([]any{def}, examples...) {
		if arr, ok := normalizeJSON(cand).([]any); ok && len(arr) > 0 {
			switch arr[0].(type) {
			case float64:
				return "number"
			case bool:
				return "boolean"
			case map[string]any:
				return "object"
			}
			return "string"
		}
	}
	return "string"
}

// addRules maps validation rules to JSON Schema keywords.
func addRules(s *OrderedObject, r *Validation, g *SchemaGeneration) {
	if r == nil {
		return
	}
	if len(r.Enum) > 0 {
		e := make([]any, len(r.Enum))
		for i, v := range r.Enum {
			e[i] = normalizeJSON(v)
		}
		s.Set("enum", e)
	}
	if r.Minimum != nil {
		s.Set("minimum", *r.Minimum)
	}
	if r.Maximum != nil {
		s.Set("maximum", *r.Maximum)
	}
	if r.MinLength != nil {
		s.Set("minLength", *r.MinLength)
	}
	if r.MaxLength != nil {
		s.Set("maxLength", *r.MaxLength)
	}
	if r.Pattern != "" {
		s.Set("pattern", r.Pattern)
	}
	if r.MinItems != nil {
		s.Set("minItems", *r.MinItems)
	}
	if r.MaxItems != nil {
		s.Set("maxItems", *r.MaxItems)
	}
	if r.UniqueItems {
		s.Set("uniqueItems", true)
	}
	if len(r.Properties) > 0 {
		props := NewOrderedObject()
		for _, k := range sortedKeys(r.Properties) {
			ps := NewOrderedObject()
			if t := r.Properties[k].Type; t != "" {
				ps.Set("type", mapType(g, t))
			}
			addRules(ps, r.Properties[k], g)
			props.Set(k, ps)
		}
		s.Set("properties", props)
	}
	if len(r.Required) > 0 {
		s.Set("required", r.Required)
	}
}

func sortedKeys(m map[string]*Validation) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Insertion sort: property lists are short.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}
