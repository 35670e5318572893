package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxed-dev/sandboxed/sandbox"
	"github.com/sandboxed-dev/sandboxed/tool"
)

func TestMCPTool(t *testing.T) {
	def, err := tool.Parse([]byte(`name: shout
description: Shout TEXT
bash: echo {TEXT}
parameters:
  TEXT: {type: string, description: What, required: true}
`), "shout.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tl, err := mcpTool(def)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Name != "shout" || tl.Description != "Shout TEXT" {
		t.Errorf("tool = %+v", tl)
	}
	schema, _ := json.Marshal(tl.InputSchema)
	if string(schema) != `{"type":"object","properties":{"TEXT":{"type":"string","description":"What"}},"required":["TEXT"]}` {
		t.Errorf("input schema = %s", schema)
	}
}

func TestCallResult(t *testing.T) {
	ok := callResult(&sandbox.Result{Status: sandbox.StatusOK, Stdout: "hi\n"})
	if ok.IsError || len(ok.Content) != 1 || ok.Content[0].(*mcp.TextContent).Text != "hi\n" || ok.StructuredContent == nil {
		t.Errorf("ok result = %+v", ok)
	}
	denied := callResult(&sandbox.Result{Status: sandbox.StatusDenied, ExitCode: 126,
		Error: &sandbox.ErrorInfo{Code: sandbox.CodePermission, Message: "run fetch: needs approval", Hint: "to approve this run:\n  --approve network:external:*"}})
	if !denied.IsError || len(denied.Content) != 2 {
		t.Fatalf("denied result = %+v", denied)
	}
	why := denied.Content[1].(*mcp.TextContent).Text
	for _, want := range []string{"status denied", "needs approval", "--approve network:external:*", "restart `sandboxed mcp`"} {
		if !strings.Contains(why, want) {
			t.Errorf("refusal %q does not say %q", why, want)
		}
	}
}

// A discovered tool is listed under the script's own names.
func TestMCPToolExposedNames(t *testing.T) {
	def, err := tool.Parse([]byte(`name: ls
description: List
bash: echo {A} {max-depth}
parameters:
  A: {type: boolean, description: all}
  max-depth: {type: number, description: depth, required: true}
sandboxed:
  exposed-as:
    name: _ls
    parameters: {A: -A}
`), "ls.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tl, err := mcpTool(def)
	if err != nil {
		t.Fatal(err)
	}
	schema, _ := json.Marshal(tl.InputSchema)
	if tl.Name != "_ls" || string(schema) != `{"type":"object","properties":{"-A":{"type":"boolean","description":"all"},"max-depth":{"type":"number","description":"depth"}},"required":["max-depth"]}` {
		t.Errorf("tool %s, input schema = %s", tl.Name, schema)
	}
}
