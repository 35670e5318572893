package tool

import (
	"errors"
	"strings"
	"testing"
)

func TestParseFunctionFile(t *testing.T) {
	for _, tc := range []struct {
		name, data, format, names string
	}{
		{"openai tool", `{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}`, FormatOpenAI, "f"},
		{"openai function", `{"name":"f","parameters":{"type":"object","properties":{}}}`, FormatOpenAI, "f"},
		{"openai list", `[{"name":"f","parameters":{"type":"object"}},{"name":"g","parameters":{"type":"object"}}]`, FormatOpenAI, "f,g"},
		{"anthropic", `{"name":"f","input_schema":{"type":"object"}}`, FormatAnthropic, "f"},
		{"mcp tools/list result", `{"tools":[{"name":"f","inputSchema":{"type":"object"}}]}`, FormatMCP, "f"},
		{"mcp json-rpc answer", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"f","inputSchema":{"type":"object"}}]}}`, FormatMCP, "f"},
		{"cycod json", `{"name":"f","description":"d","bash":"echo","parameters":{"X":{"type":"string","description":"x"}}}`, "", ""},
		{"cycod json without a command", `{"name":"f","description":"d","parameters":{"X":{"type":"string","description":"x"}}}`, "", ""},
		{"yaml", "name: f\nbash: echo\n", "", ""},
		{"nameless", `{"parameters":{"type":"object"}}`, "", ""},
	} {
		f, ok := ParseFunctionFile([]byte(tc.data))
		switch {
		case tc.format == "" && ok:
			t.Errorf("%s: taken for %s", tc.name, f.Format)
		case tc.format != "" && (!ok || f.Format != tc.format || strings.Join(f.Names(), ",") != tc.names):
			t.Errorf("%s: ok %v %+v", tc.name, ok, f)
		}
	}
}

// TestDefinitionFromFunction: without a command, the error says what is
// missing and how to give it; with one, the definition validates and its
// parameters keep the declaration's types.
func TestDefinitionFromFunction(t *testing.T) {
	f, ok := ParseFunctionFile([]byte(`{"name":"get-weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":["integer","null"]},"tags":{"type":"array","items":{"type":"string"}}},"required":["city"]}}`))
	if !ok {
		t.Fatal("not recognised")
	}
	_, err := DefinitionFromFunction(f, "w.json", ImportCommand{})
	if !errors.Is(err, ErrNoCommand) || !strings.Contains(err.Error(), "it is an OpenAI function declaration (get-weather)") ||
		!strings.Contains(err.Error(), "sandboxed tool import w.json --bash 'COMMAND {city} {days} {tags}'") {
		t.Errorf("no command: %v", err)
	}
	d, err := DefinitionFromFunction(f, "w.json", ImportCommand{Kind: ExecBash, Command: "echo {city} {days} {tags}"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := Marshal(d, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(data, "w.yaml")
	if err != nil {
		t.Fatalf("does not load: %v\n%s", err, data)
	}
	in, _ := ParseParamsJSON([]byte(`{"city":"Saint-Étienne d'Or","days":3,"tags":["a b","c"]}`))
	b, err := Bind(back, in, BindEnv{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b.Steps[0].Command, `echo 'Saint-Étienne d'\''Or' '3' '["a b","c"]'`; got != want {
		t.Errorf("command %s, want %s", got, want)
	}
	if _, err := Bind(back, Input{"city": Text("x"), "days": Text("2.5")}, BindEnv{}); !errors.Is(err, ErrInvalidParam) {
		t.Errorf("days=2.5: %v", err)
	}

	many, _ := ParseFunctionFile([]byte(`{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b","inputSchema":{"type":"object"}}]}`))
	if _, err := DefinitionFromFunction(many, "m.json", ImportCommand{Kind: ExecBash, Command: "true"}); !errors.Is(err, ErrBadArgs) || !strings.Contains(err.Error(), "--tool NAME") {
		t.Errorf("several without --tool: %v", err)
	}
	if d, err := DefinitionFromFunction(many, "m.json", ImportCommand{Kind: ExecRun, Command: "true", Tool: "b"}); err != nil || d.Name != "b" {
		t.Errorf("--tool b: %v %v", d, err)
	}
}
