package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPServer drives `sandboxed mcp` with the MCP SDK's client over the
// binary's stdio: it lists the tools of the local scope, calls one, and
// gets a call that needs approval refused with the reason.
func TestMCPServer(t *testing.T) {
	begin(t)
	cwd := workdir(t, map[string]string{
		".sandboxed/tools/shout.yaml": `name: shout
description: Print TEXT in capitals
tags: [read]
bash: printf '%s\n' {TEXT} | tr a-z A-Z
parameters:
  TEXT:
    type: string
    description: What to shout
    required: true
security:
  execution-privilege: reduced
  isolation: process
`,
		".sandboxed/tools/fetch.yaml": `name: fetch
description: Fetch anything from anywhere
tags: [read]
bash: echo would fetch
security:
  isolation: process
  required-permissions:
    - "network:external:*"
`,
		".sandboxed/tools/broken.yaml": "name: broken\ndescription: no command at all\nnot-a-field: 1\n",
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := command("mcp")
	cmd.Dir = cwd
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "sandboxed-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to sandboxed mcp: %v\nstderr: %s", err, stderr.String())
	}
	defer cs.Close()

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tl := range list.Tools {
		tools[tl.Name] = tl
	}
	if len(tools) != 2 || tools["shout"] == nil || tools["fetch"] == nil {
		t.Fatalf("tools = %v, want shout and fetch", keys(tools))
	}
	schema, _ := json.Marshal(tools["shout"].InputSchema)
	var in struct {
		Type       string                       `json:"type"`
		Properties map[string]map[string]string `json:"properties"`
		Required   []string                     `json:"required"`
	}
	if err := json.Unmarshal(schema, &in); err != nil || in.Type != "object" || in.Properties["TEXT"]["type"] != "string" ||
		len(in.Required) != 1 || in.Required[0] != "TEXT" {
		t.Errorf("shout input schema: %s", schema)
	}

	// A call runs in the sandbox; the result is stdout plus the run result.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shout", Arguments: map[string]any{"TEXT": "hi $(id)"}})
	if err != nil {
		t.Fatalf("call shout: %v", err)
	}
	if res.IsError || len(res.Content) == 0 || textOf(res.Content[0]) != "HI $(ID)\n" {
		t.Errorf("shout: isError %v content %q", res.IsError, texts(res.Content))
	}
	var run result
	if b, err := json.Marshal(res.StructuredContent); err != nil || json.Unmarshal(b, &run) != nil {
		t.Fatalf("structured content is not a run result: %v", res.StructuredContent)
	}
	if run.Status != "ok" || run.Tool != "shout" || run.Isolation != "process" || run.RunID == "" {
		t.Errorf("structured result = %+v", run)
	}

	// A call the policy wants approved is refused, saying why and how.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fetch", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("call fetch: %v", err)
	}
	all := strings.Join(texts(res.Content), "\n")
	if !res.IsError || !strings.Contains(all, "denied") || !strings.Contains(all, "--approve") {
		t.Errorf("fetch: isError %v, content %q; want a refusal naming --approve", res.IsError, all)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &run); err != nil || run.Status != "denied" || run.Error == nil || run.Error.Hint == "" {
		t.Errorf("fetch structured result = %s", b)
	}

	// A missing required parameter is an error result, not a crash.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "shout", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("call shout without TEXT: %v", err)
	}
	if !res.IsError || !strings.Contains(strings.Join(texts(res.Content), "\n"), "TEXT") {
		t.Errorf("shout without TEXT: %q", texts(res.Content))
	}

	if err := cs.Close(); err != nil && !strings.Contains(err.Error(), "exit") {
		t.Logf("close: %v", err)
	}
	if !strings.Contains(stderr.String(), "skip") || !strings.Contains(stderr.String(), "broken.yaml") {
		t.Errorf("stderr does not report the broken definition:\n%s", stderr.String())
	}
}

func keys(m map[string]*mcp.Tool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func textOf(c mcp.Content) string {
	if tc, ok := c.(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

func texts(cs []mcp.Content) []string {
	var out []string
	for _, c := range cs {
		out = append(out, textOf(c))
	}
	return out
}
