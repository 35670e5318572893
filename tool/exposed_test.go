package tool

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

const exposedDef = `name: ls
description: List a directory
bash: echo {A} {max-depth} {path}
parameters:
  A:
    type: boolean
    description: include dot files
  max-depth:
    type: number
    description: how deep
    required: true
  path:
    description: where
sandboxed:
  exposed-as:
    name: _ls
    parameters:
      A: -A
`

func TestExposedAsRoundTrip(t *testing.T) {
	def, err := Parse([]byte(exposedDef), "ls.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &ExposedAs{Name: "_ls", Parameters: map[string]string{"A": "-A"}}
	if !reflect.DeepEqual(def.Sandboxed.ExposedAs, want) {
		t.Fatalf("exposed-as = %+v, want %+v", def.Sandboxed.ExposedAs, want)
	}
	for _, format := range []string{"yaml", "json"} {
		data, err := Marshal(def, format)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(data, "ls."+format)
		if err != nil {
			t.Fatalf("%s: %v\n%s", format, err, data)
		}
		if !reflect.DeepEqual(back.Sandboxed.ExposedAs, want) {
			t.Errorf("%s: exposed-as = %+v after a round trip\n%s", format, back.Sandboxed.ExposedAs, data)
		}
	}
	if def.ExposedName() != "_ls" || def.ExposedParam("A") != "-A" || def.ExposedParam("path") != "path" || def.OwnParam("-A") != "A" || def.OwnParam("path") != "path" {
		t.Errorf("ExposedName %q, ExposedParam(A) %q, OwnParam(-A) %q", def.ExposedName(), def.ExposedParam("A"), def.OwnParam("-A"))
	}
}

// The function schema (tool schema, sandboxed mcp) lists the exposed names.
func TestExposedAsSchema(t *testing.T) {
	def, err := Parse([]byte(exposedDef), "ls.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range SchemaFormats {
		fs, err := FunctionSchema(def, format)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(fs)
		var got struct {
			Name string `json:"name"`
		}
		json.Unmarshal(data, &got)
		o := fs.(*OrderedObject)
		in, _ := o.Get(map[string]string{SchemaOpenAI: "parameters", SchemaAnthropic: "input_schema", SchemaMCP: "inputSchema"}[format])
		props, _ := in.(*OrderedObject).Get("properties")
		req, _ := in.(*OrderedObject).Get("required")
		if got.Name != "_ls" || !reflect.DeepEqual(props.(*OrderedObject).Keys(), []string{"-A", "max-depth", "path"}) || !reflect.DeepEqual(req, []string{"max-depth"}) {
			t.Errorf("%s schema = %s", format, data)
		}
	}
	// CYCOD's own function-name setting wins over the exposed name.
	def.FunctionCalling = &FunctionCalling{SchemaGeneration: &SchemaGeneration{FunctionName: "list_{TOOL_NAME}"}}
	fs, err := FunctionSchema(def, SchemaOpenAI)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := fs.(*OrderedObject).Get("name"); n != "list_ls" {
		t.Errorf("name with function-name = %v", n)
	}
}

// Arguments bind under the exposed name or the parameter's own.
func TestExposedAsBind(t *testing.T) {
	def, err := Parse([]byte(exposedDef), "ls.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		in      Input
		want    string
		wantErr error
	}{
		{"exposed", Input{"-A": true, "max-depth": "2"}, "echo 'true' '2' ", nil},
		{"own", Input{"A": "true", "max-depth": "2", "path": "x"}, "echo 'true' '2' 'x'", nil},
		{"both", Input{"A": "true", "-A": "false", "max-depth": "2"}, "", ErrBadArgs},
		{"unknown", Input{"--A": "true", "max-depth": "2"}, "", ErrUnknownParam},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Bind(def, tc.in, BindEnv{Workspace: t.TempDir()})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			argv := b.Steps[0].Argv
			if got := argv[len(argv)-1]; got != tc.want {
				t.Errorf("command = %q, want %q", got, tc.want)
			}
		})
	}
}

// An alias is its own tool: it keeps the base's parameter names, not the
// base's exposed name.
func TestExposedAsAlias(t *testing.T) {
	base, err := Parse([]byte(exposedDef), "ls.yaml")
	if err != nil {
		t.Fatal(err)
	}
	alias, err := Parse([]byte("name: lsa\ndescription: all\ntype: alias\nbase-tool: ls\ndefault-parameters:\n  A: \"true\"\n"), "lsa.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := MergeAlias(alias, base)
	if m.ExposedName() != "lsa" || m.ExposedParam("A") != "-A" || base.ExposedName() != "_ls" {
		t.Errorf("merged: name %q, A as %q; base name %q", m.ExposedName(), m.ExposedParam("A"), base.ExposedName())
	}
	fs, err := FunctionSchema(m, SchemaOpenAI)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(fs)
	if !strings.Contains(string(data), `"name":"lsa"`) || !strings.Contains(string(data), `"-A":`) {
		t.Errorf("alias schema = %s", data)
	}
}
