package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"testing"
)

func boolp(b bool) *bool { return &b }

// weatherLookup is the spec's "Generated Schema Example" tool.
func weatherLookup(exampleGeneration bool) *Definition {
	return &Definition{
		Name:        "weather-lookup",
		Description: "Get weather for a location",
		Exec:        &Exec{Kind: ExecBash, Command: "curl -s 'wttr.in/{LOCATION}?format={FORMAT}'"},
		Parameters: []Parameter{
			{Name: "LOCATION", Type: TypeString, Description: "City or airport code", Required: true, Examples: []any{"New York", "SFO"}},
			{Name: "FORMAT", Type: TypeString, Description: "Output format", Default: "3", HasDefault: true, Examples: []any{"1", "3"}},
		},
		FunctionCalling: &FunctionCalling{SchemaGeneration: &SchemaGeneration{
			IncludeDescriptions: boolp(true), IncludeDefaults: boolp(true), ExampleGeneration: boolp(exampleGeneration),
		}},
	}
}

// specWeatherSchema is the JSON the spec's "Generated Schema Example"
// shows, verbatim.
var specWeatherSchema = func() string {
	b, err := os.ReadFile("testdata/spec/weather-lookup.openai.json")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSchemaSpecExample(t *testing.T) {
	s, err := FunctionSchema(weatherLookup(false), SchemaOpenAI)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := marshal(t, s), compact(t, specWeatherSchema); got != want {
		t.Errorf("openai schema\ngot  %s\nwant %s", got, want)
	}

	s, err = FunctionSchema(weatherLookup(true), SchemaOpenAI)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"weather-lookup","description":"Get weather for a location","parameters":{"type":"object","properties":{` +
		`"LOCATION":{"type":"string","description":"City or airport code","examples":["New York","SFO"]},` +
		`"FORMAT":{"type":"string","description":"Output format","default":"3","examples":["1","3"]}},"required":["LOCATION"]}}`
	if got := marshal(t, s); got != want {
		t.Errorf("with examples\ngot  %s\nwant %s", got, want)
	}

	for format, key := range map[string]string{SchemaAnthropic: "input_schema", SchemaMCP: "inputSchema"} {
		s, err := FunctionSchema(weatherLookup(false), format)
		if err != nil {
			t.Fatal(err)
		}
		o := s.(*OrderedObject)
		if k := o.Keys(); len(k) != 3 || k[2] != key {
			t.Errorf("%s: keys %v", format, k)
		}
		in, _ := o.Get(key)
		params, _ := mustSchema(t, weatherLookup(false)).Get("parameters")
		if marshal(t, in) != marshal(t, params) {
			t.Errorf("%s: input schema differs from openai parameters", format)
		}
	}
}

func mustSchema(t *testing.T, d *Definition) *OrderedObject {
	t.Helper()
	s, err := FunctionSchema(d, SchemaOpenAI)
	if err != nil {
		t.Fatal(err)
	}
	return s.(*OrderedObject)
}

func TestSchemaOptions(t *testing.T) {
	ten := 10.0
	one := 1.0
	three := 3
	d := &Definition{
		Name: "lister", Description: "List things",
		Exec: &Exec{Kind: ExecBash, Command: "ls"},
		Parameters: []Parameter{
			{Name: "LIMIT", Type: TypeNumber, Description: "Max", Default: 10, HasDefault: true,
				Validation: &Validation{Minimum: &one, Maximum: &ten}},
			{Name: "MODE", Type: TypeString, Description: "Mode", Required: true,
				Validation: &Validation{Enum: []any{"a", "b"}, Pattern: "^[ab]$", MinLength: &three, MaxLength: &three}},
			{Name: "TAGS", Type: TypeArray, Description: "Tags",
				Validation: &Validation{MinItems: &three, MaxItems: &three, UniqueItems: true}},
			{Name: "OUT", Type: TypeString, Description: "Out", Default: "./out/{MODE}", HasDefault: true},
			{Name: "CFG", Type: TypeObject, Description: "Config",
				Validation: &Validation{Required: []string{"k"}, Properties: map[string]*Validation{"k": {Type: TypeString, Pattern: "^x"}}}},
		},
		FunctionCalling: &FunctionCalling{SchemaGeneration: &SchemaGeneration{
			FunctionName: "my_{TOOL_NAME}", DescriptionTemplate: "Custom tool: {DESCRIPTION} ({TOOL_NAME})",
			IncludeDescriptions: boolp(false), ParameterMapping: map[string]string{"number": "integer"},
		}},
	}
	got := marshal(t, mustSchema(t, d))
	want := `{"name":"my_lister","description":"Custom tool: List things (lister)","parameters":{"type":"object","properties":{` +
		`"LIMIT":{"type":"integer","minimum":1,"maximum":10,"default":10},` +
		`"MODE":{"type":"string","enum":["a","b"],"minLength":3,"maxLength":3,"pattern":"^[ab]$"},` +
		`"TAGS":{"type":"array","minItems":3,"maxItems":3,"uniqueItems":true,"items":{"type":"string"}},` +
		`"OUT":{"type":"string"},` +
		`"CFG":{"type":"object","properties":{"k":{"type":"string","pattern":"^x"}},"required":["k"]}},"required":["MODE"]}}`
	if got != want {
		t.Errorf("\ngot  %s\nwant %s", got, want)
	}

	d.FunctionCalling.SchemaGeneration.IncludeDefaults = boolp(false)
	if s := marshal(t, mustSchema(t, d)); bytes.Contains([]byte(s), []byte(`"default"`)) {
		t.Errorf("include-defaults false still has defaults: %s", s)
	}
}

func TestSchemaErrors(t *testing.T) {
	d := weatherLookup(false)
	d.Name = "weather lookup!"
	if _, err := FunctionSchema(d, SchemaOpenAI); !errors.Is(err, ErrSchema) {
		t.Errorf("bad name: want ErrSchema, got %v", err)
	}
	d = weatherLookup(false)
	d.FunctionCalling.SchemaGeneration.FunctionName = "x_{TOOL_NAME}_" + string(bytes.Repeat([]byte("y"), 60))
	if _, err := FunctionSchema(d, SchemaOpenAI); !errors.Is(err, ErrSchema) {
		t.Errorf("long name: want ErrSchema, got %v", err)
	}
	if _, err := FunctionSchema(weatherLookup(false), "gemini"); !errors.Is(err, ErrSchema) {
		t.Errorf("unknown format: want ErrSchema, got %v", err)
	}
}
