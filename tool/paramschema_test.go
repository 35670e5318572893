package tool

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

// unionDump is a script's schema with the parameter shapes CYCOD's single
// type cannot say.
const unionDump = `{"name":"shape","description":"shapes","parameters":{"type":"object","properties":{
 "u":{"type":["number","boolean"]},
 "su":{"type":["string","number"]},
 "any":{"description":"anything"},
 "i":{"type":"integer","minimum":1},
 "ao":{"type":"array","items":{"type":"object","required":["k"]}},
 "o":{"type":"object","properties":{"n":{"type":"number"}},"additionalProperties":false},
 "e":{"enum":["a",2]},
 "s":{"type":"string"},
 "ss":{"type":"array","items":{"type":"string"}},
 "ns":{"type":"array","items":{"type":"number"}}},"required":[]}}`

// TestDiscoveredTypesPassThrough binds a discovered tool whose script
// declares unions, untyped, integer, array-of-object and object
// parameters, runs the generated command against a script that prints
// its argv[1], and checks the JSON the script got: JSON values as given,
// command-line text read by the script's schema.
func TestDiscoveredTypesPassThrough(t *testing.T) {
	testenv.NeedCommand(t, "bash")
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	echo := filepath.Join(dir, "echo.sh")
	if err := os.WriteFile(echo, []byte("#!/bin/sh\nprintf '%s\\n' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ds, err := ParseSchemaDump(unionDump, false)
	if err != nil {
		t.Fatal(err)
	}
	def, err := DefinitionFor(Script{File: "echo.sh", Path: echo, Argv: []string{echo}}, ds[0], "shape", "")
	if err != nil {
		t.Fatal(err)
	}
	def = roundTrip(t, def)

	js := func(s string) Input {
		in, err := ParseParamsJSON([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	for _, tc := range []struct {
		name string
		in   Input
		want string // the JSON the script gets
	}{
		{"union number json", js(`{"u": 1}`), `{"u":1}`},
		{"union boolean json", js(`{"u": true}`), `{"u":true}`},
		{"union number text", Input{"u": Text("1")}, `{"u":1}`},
		{"union boolean text", Input{"u": Text("false")}, `{"u":false}`},
		{"union string json stays a string", js(`{"su": "123"}`), `{"su":"123"}`},
		{"union text tries number first", Input{"su": Text("123")}, `{"su":123}`},
		{"union text falls back to string", Input{"su": Text("abc")}, `{"su":"abc"}`},
		{"untyped json array", js(`{"any": [1, "a", {"b": null}]}`), `{"any":[1,"a",{"b":null}]}`},
		{"untyped text json", Input{"any": Text(`{"x": [true]}`)}, `{"any":{"x":[true]}}`},
		{"untyped text", Input{"any": Text("hello world")}, `{"any":"hello world"}`},
		{"integer", js(`{"i": 3}`), `{"i":3}`},
		{"array of objects", js(`{"ao": [{"k": 1}, {"k": "x", "z": [1]}]}`), `{"ao":[{"k":1},{"k":"x","z":[1]}]}`},
		{"array text", Input{"ao": Text(`[{"k": 2}]`)}, `{"ao":[{"k":2}]}`},
		{"array of strings as a list", Input{"ss": Text("a b, c")}, `{"ss":["a b","c"]}`},
		{"array of numbers as a list", Input{"ns": Text("1, 2.5")}, `{"ns":[1,2.5]}`},
		{"object", js(`{"o": {"n": 2.5}}`), `{"o":{"n":2.5}}`},
		{"enum number", js(`{"e": 2}`), `{"e":2}`},
		{"enum text", Input{"e": Text("2")}, `{"e":2}`},
		{"string text that looks like a number", Input{"s": Text("007")}, `{"s":"007"}`},
		{"hostile string", js(`{"s": "'\"; $(id) ` + "`id`" + `\n\\"}`), `{"s":"'\"; $(id) ` + "`id`" + `\n\\"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Bind(def, tc.in, BindEnv{Workspace: dir})
			if err != nil {
				t.Fatal(err)
			}
			argv := b.Steps[0].Argv
			out, err := exec.Command(bash, "-c", argv[len(argv)-1]).Output()
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			var got, want any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("argv[1] is not JSON: %v: %q", err, out)
			}
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("argv[1] = %s, want %s", out, tc.want)
			}
		})
	}

	for _, tc := range []struct {
		name string
		in   Input
		msg  string
	}{
		{"union refuses a string", js(`{"u": "x"}`), `"x" is not a number or a boolean`},
		{"union refuses text", Input{"u": Text("maybe")}, `"maybe" is not a number or a boolean`},
		{"union refuses an array", js(`{"u": [1]}`), "want a number or a boolean, got an array"},
		{"integer refuses a fraction", js(`{"i": 2.5}`), "want an integer"},
		{"integer minimum", js(`{"i": 0}`), "less than the minimum 1"},
		{"item required", js(`{"ao": [{"k": 1}, {}]}`), "[1]: missing required properties: k"},
		{"additional property", js(`{"o": {"m": 1}}`), "property m is not allowed"},
		{"nested type", js(`{"o": {"n": "2"}}`), "n: want a number, got a string"},
		{"enum", js(`{"e": "b"}`), "not one of the allowed values"},
		{"list item of the wrong type", Input{"ns": Text("1,x")}, `"1,x" is not a JSON array, nor a list whose items are a number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Bind(def, tc.in, BindEnv{Workspace: dir})
			if !errors.Is(err, ErrInvalidParam) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want ErrInvalidParam with %q", err, tc.msg)
			}
		})
	}

	// Agents see the script's own schema.
	fs, err := FunctionSchema(def, SchemaMCP)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(fs)
	var got struct {
		InputSchema struct {
			Properties map[string]map[string]any `json:"properties"`
		} `json:"inputSchema"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if u := got.InputSchema.Properties["u"]["type"]; !reflect.DeepEqual(u, []any{"number", "boolean"}) {
		t.Errorf("u's exported type = %v (%s)", u, raw)
	}
	if a, ok := got.InputSchema.Properties["any"]; !ok || a["type"] != nil || a["description"] != "anything" {
		t.Errorf("any's exported schema = %v", a)
	}
	if items := got.InputSchema.Properties["ao"]["items"]; !reflect.DeepEqual(items, map[string]any{"type": "object", "required": []any{"k"}}) {
		t.Errorf("ao's items = %v", items)
	}
}

// TestCYCODTypesInCommands: every CYCOD type reaches a command; an array
// or object is its JSON text, escaped as one word.
func TestCYCODTypesInCommands(t *testing.T) {
	def, err := Parse([]byte(`description: d
bash: printf '%s\n' {A} {O} "{A}"
parameters:
  A: {type: array, description: a}
  O: {type: object, description: o}
`), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in, err := ParseParamsJSON([]byte(`{"A": ["x y", "'"], "O": {"k": "$(id)"}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Bind(def, in, BindEnv{Workspace: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	want := `printf '%s\n' '["x y","'\''"]' '{"k":"$(id)"}' "[\"x y\",\"'\"]"`
	if got := b.Steps[0].Command; got != want {
		t.Errorf("command\n got %s\nwant %s", got, want)
	}
}

// TestParamSchemaLoad: sandboxed.parameter-schemas is checked where it is
// written.
func TestParamSchemaLoad(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, msg string
	}{
		{"unknown type", "    A: {type: [number, float]}\n", "9:8: sandboxed.parameter-schemas.A: type: float is not a JSON Schema type"},
		{"bad pattern", "    A: {pattern: '(?<=x)'}\n", "does not compile"},
		{"undeclared", "    B: {type: number}\n", "9:5: parameter-schemas names B, which is not a declared parameter"},
		{"not a mapping", "    A: number\n", "9:8: sandboxed.parameter-schemas.A must be a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "description: d\nbash: echo {A}\nparameters:\n  A:\n    type: number\n    description: a\nsandboxed:\n  parameter-schemas:\n" + tc.yaml
			_, err := Parse([]byte(src), "t.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want %q", err, tc.msg)
			}
		})
	}
}

// fuzzSchemas are the parameter schemas FuzzParamSchema reads text by.
var fuzzSchemas = []ParamSchema{
	{"type": []any{"number", "boolean"}},
	{"type": []any{"string", "number"}},
	{"type": "integer", "minimum": 0.0},
	{"type": "array", "items": map[string]any{"type": "number"}},
	{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "number"}}},
	{"anyOf": []any{map[string]any{"type": "boolean"}, map[string]any{"type": "array"}}},
	{},
}

// FuzzParamSchema: reading text by a schema never panics; a value it
// accepts has one of the schema's types, and given back as JSON it is
// kept exactly as it is.
func FuzzParamSchema(f *testing.F) {
	for _, s := range []string{"1", "true", "x", "[1, 2]", "1,2", `{"n": 1}`, "", "-0", "1e400", "null", "[", "007", " 2 "} {
		for i := range fuzzSchemas {
			f.Add(s, uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, text string, which uint8) {
		s := fuzzSchemas[int(which)%len(fuzzSchemas)]
		v, err := coerceSchema(s, Text(text))
		if err != nil {
			return
		}
		if err := checkSchema(s, v); err != nil {
			return
		}
		if types, typed := schemaTypes(s); typed {
			ok := false
			for _, ty := range types {
				ok = ok || hasSchemaType(v, ty)
			}
			if !ok {
				t.Fatalf("%q read as %#v, not of %v", text, v, types)
			}
		}
		if !utf8.ValidString(text) {
			return // JSON holds text only: invalid UTF-8 cannot come back
		}
		data, err := json.Marshal(map[string]any{"p": v})
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		in, err := ParseParamsJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		if v == nil {
			return // null is "not given"
		}
		back, err := coerceSchema(s, in["p"])
		if err != nil || !reflect.DeepEqual(back, v) {
			t.Fatalf("%q: %#v given as JSON %s came back %#v (%v)", text, v, data, back, err)
		}
	})
}
