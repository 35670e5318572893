package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

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
	ok := callResult(&sandbox.Result{Status: sandbox.StatusOK, Stdout: "hi\n"}, defaultOutputBudget, nil)
	if ok.IsError || len(ok.Content) != 1 || ok.Content[0].(*mcp.TextContent).Text != "hi\n" || ok.StructuredContent == nil {
		t.Errorf("ok result = %+v", ok)
	}
	denied := callResult(&sandbox.Result{Status: sandbox.StatusDenied, ExitCode: 126,
		Error: &sandbox.ErrorInfo{Code: sandbox.CodePermission, Message: "run fetch: needs approval", Hint: "to approve this run:\n  --approve network:external:*"}}, defaultOutputBudget, nil)
	// No empty text ahead of the reason.
	if !denied.IsError || len(denied.Content) != 1 {
		t.Fatalf("denied result = %+v", denied)
	}
	why := denied.Content[0].(*mcp.TextContent).Text
	for _, want := range []string{"status denied", "needs approval", "--approve network:external:*", "restart `sandboxed mcp`"} {
		if !strings.Contains(why, want) {
			t.Errorf("refusal %q does not say %q", why, want)
		}
	}
	// stderr of a successful call reaches the model.
	warned := callResult(&sandbox.Result{Status: sandbox.StatusOK, Stdout: "42\n", Stderr: "warning: rounded\n"}, defaultOutputBudget, nil)
	if len(warned.Content) != 2 || !strings.Contains(warned.Content[1].(*mcp.TextContent).Text, "stderr:\nwarning: rounded") {
		t.Errorf("stderr of an ok call: %+v", warned.Content)
	}
	// The structured content does not carry the output again.
	b, _ := json.Marshal(warned.StructuredContent)
	if strings.Contains(string(b), "rounded") || strings.Contains(string(b), `"stdout"`) || !strings.Contains(string(b), `"status":"ok"`) {
		t.Errorf("structured content: %s", b)
	}
}

func TestCallResultBudget(t *testing.T) {
	big := strings.Repeat("0123456789abcdé\n", 100000) // 1.7 MB
	links := func(run, stream string) (string, int64, bool) {
		return outputURI(run, stream), int64(len(big)), stream == "stdout"
	}
	for _, budget := range []int{minOutputBudget, 4 << 10, defaultOutputBudget} {
		r := callResult(&sandbox.Result{RunID: "20261128T000000-000000000000", Status: sandbox.StatusOK, Stdout: big, Stderr: big}, budget, links)
		text := 0
		var link *mcp.ResourceLink
		for _, c := range r.Content {
			switch c := c.(type) {
			case *mcp.TextContent:
				text += len(c.Text)
				if !utf8.ValidString(c.Text) {
					t.Errorf("budget %d: text is not UTF-8", budget)
				}
			case *mcp.ResourceLink:
				link = c
			}
		}
		if text > budget+minOutputBudget/2 {
			t.Errorf("budget %d: %d bytes of text", budget, text)
		}
		if link == nil || link.URI != "sandboxed://runs/20261128T000000-000000000000/stdout" || *link.Size != int64(len(big)) {
			t.Errorf("budget %d: link %+v", budget, link)
		}
		if !strings.HasPrefix(r.Content[0].(*mcp.TextContent).Text, "0123456789") || !strings.Contains(r.Content[1].(*mcp.TextContent).Text, "?offset=") {
			t.Errorf("budget %d: content %q", budget, r.Content[1].(*mcp.TextContent).Text)
		}
		b, _ := json.Marshal(r)
		if len(b) > 2*budget+8<<10 {
			t.Errorf("budget %d: the whole result is %d bytes", budget, len(b))
		}
	}
}

func TestBlockedBySandbox(t *testing.T) {
	got := blockedBySandbox([]sandbox.EgressEntry{
		{Host: "example.com", Port: 443, Verdict: "allow"},
		{Host: "api.example.org", Port: 443, Verdict: "deny", Reason: "no permission grants api.example.org:443; the permission that would allow it is network:external:api.example.org:443"},
		{Host: "169.254.169.254", Port: 80, Verdict: "deny", Reason: "169.254.169.254 is a cloud metadata endpoint"},
		{Host: "api.example.com", Port: 443, Verdict: "quota_exceeded", Reason: "100 requests per run to api.example.com"},
	})
	want := []string{
		"blocked by the sandbox: a connection to api.example.org:443: no permission grants api.example.org:443 (permission that would allow it: network:external:api.example.org:443)",
		"blocked by the sandbox: a connection to 169.254.169.254:80: 169.254.169.254 is a cloud metadata endpoint (no permission allows it)",
		"blocked by the sandbox: a connection to api.example.com:443: over the operator's quota: 100 requests per run to api.example.com (no permission lifts a quota)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("blocked = %q\nwant %q", got, want)
	}
	r := callResult(&sandbox.Result{Status: sandbox.StatusFailed, ExitCode: 7, Egress: []sandbox.EgressEntry{
		{Host: "api.example.org", Port: 443, Verdict: "deny", Reason: "no permission grants api.example.org:443; the permission that would allow it is network:external:api.example.org:443"}}}, defaultOutputBudget, nil)
	if !strings.Contains(r.Content[0].(*mcp.TextContent).Text, "permission that would allow it: network:external:api.example.org:443") {
		t.Errorf("a failed call does not say what was blocked: %q", r.Content[0].(*mcp.TextContent).Text)
	}
}

func TestExcerpt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		cut  bool
		head int
	}{
		{"short", 10, false, 5},
		{"0123456789", 4, true, 2},
		{"ééééé", 5, true, 2}, // a rune is never split
	} {
		e := excerptOf(tc.in, tc.n)
		if e.cut != tc.cut || e.head != tc.head || !utf8.ValidString(e.text) {
			t.Errorf("excerptOf(%q, %d) = %+v", tc.in, tc.n, e)
		}
	}
}

func TestToolHints(t *testing.T) {
	for _, tc := range []struct {
		yaml                        string
		readOnly, destructive, open bool
	}{
		{"security: {required-permissions: [\"filesystem:read:.\"]}\n", true, false, false},
		// Tags do not make a tool look safer than its grants.
		{"tags: [read]\nsecurity: {required-permissions: [\"filesystem:write:out\"]}\n", false, true, false},
		{"tags: [write]\n", false, true, false},
		{"security: {required-permissions: [\"network:external:api.example.com\"]}\n", true, false, true},
		{"security: {isolation: none}\n", false, true, true},
	} {
		def, err := tool.Parse([]byte("name: x\ndescription: x\nbash: echo\n"+tc.yaml), "x.yaml")
		if err != nil {
			t.Fatal(err)
		}
		h := toolHints(def)
		if h.ReadOnlyHint != tc.readOnly || *h.DestructiveHint != tc.destructive || *h.OpenWorldHint != tc.open {
			t.Errorf("%s: hints %+v, destructive %v, open %v", tc.yaml, h, *h.DestructiveHint, *h.OpenWorldHint)
		}
	}
}

func TestOutputURIs(t *testing.T) {
	dir := t.TempDir()
	run := "20261128T000000-0123456789ab"
	if err := os.MkdirAll(filepath.Join(dir, "runs", run), 0o700); err != nil {
		t.Fatal(err)
	}
	data := strings.Repeat("é", 1000) // 2000 bytes
	if err := os.WriteFile(filepath.Join(dir, "runs", run, "stdout"), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	o := &outputStore{stateDir: dir, uid: os.Geteuid(), piece: 1001}
	var got strings.Builder
	uri := outputURI(run, "stdout")
	for i := 0; uri != "" && i < 10; i++ {
		res, err := o.read(context.Background(), &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: uri}})
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		c := res.Contents[0]
		got.WriteString(c.Text)
		uri, _ = c.Meta["next"].(string)
	}
	if got.String() != data {
		t.Errorf("paged read gave %d bytes, want %d", got.Len(), len(data))
	}
	for _, bad := range []string{
		"sandboxed://runs/../etc/stdout", "sandboxed://runs/" + run + "/plan.json", "file:///etc/passwd",
		"sandboxed://runs/" + run + "/stdout?offset=x", "sandboxed://runs/20261128T000000-000000000000/stdout",
	} {
		if _, err := o.read(context.Background(), &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: bad}}); err == nil {
			t.Errorf("read %s: no error", bad)
		}
	}
	// Another uid's record is not found.
	other := &outputStore{stateDir: dir, uid: os.Geteuid() + 1, piece: 10}
	if _, err := other.read(context.Background(), &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: outputURI(run, "stdout")}}); err == nil {
		t.Errorf("another uid read the output")
	}
	// The template matches the URIs a result links to.
	tmpl, err := uritemplate.New(o.template().URITemplate)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{outputURI(run, "stdout"), outputURI(run, "stderr") + "?offset=10&length=20"} {
		if tmpl.Regexp().FindString(u) != u {
			t.Errorf("template %s does not match %s", o.template().URITemplate, u)
		}
	}
}

func TestNoTools(t *testing.T) {
	s := tool.ScopesAt("/", "", "/nonexistent")
	got := instructions(0, s, tool.ScopeAny, []string{"/"}, defaultOutputBudget)
	for _, want := range []string{"no tools", "/.sandboxed/tools", "--project DIR", "root"} {
		if !strings.Contains(got, want) {
			t.Errorf("instructions %q do not say %q", got, want)
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

// fakeConn reads msgs in turn and keeps what is written.
type fakeConn struct {
	msgs    []jsonrpc.Message
	written []jsonrpc.Message
}

func (f *fakeConn) Read(context.Context) (jsonrpc.Message, error) {
	if len(f.msgs) == 0 {
		return nil, io.EOF
	}
	m := f.msgs[0]
	f.msgs = f.msgs[1:]
	return m, nil
}
func (f *fakeConn) Write(_ context.Context, m jsonrpc.Message) error {
	f.written = append(f.written, m)
	return nil
}
func (f *fakeConn) Close() error      { return nil }
func (f *fakeConn) SessionID() string { return "" }

type fakeTransport struct{ c *fakeConn }

func (t fakeTransport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

// A call the client cancelled gets no answer; the others do, also one
// that reuses a cancelled call's id after it was (not) answered.
func TestCancelledCallIsNotAnswered(t *testing.T) {
	id1, _ := jsonrpc.MakeID(float64(1))
	id2, _ := jsonrpc.MakeID("two")
	fc := &fakeConn{msgs: []jsonrpc.Message{
		&jsonrpc.Request{ID: id1, Method: "tools/call"},
		&jsonrpc.Request{ID: id2, Method: "tools/call"},
		&jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":1,"reason":"user"}`)},
		&jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":3}`)}, // never sent
	}}
	c, err := cancelAware{inner: fakeTransport{fc}}.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := c.Read(context.Background()); err != nil {
			break
		}
	}
	for _, id := range []jsonrpc.ID{id1, id2} {
		if err := c.Write(context.Background(), &jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if len(fc.written) != 1 || fc.written[0].(*jsonrpc.Response).ID != id2 {
		t.Errorf("written %+v, want the answer to call two alone", fc.written)
	}
	// The id is free again: a new call with it is answered.
	fc.msgs = []jsonrpc.Message{&jsonrpc.Request{ID: id1, Method: "tools/call"}}
	c.Read(context.Background())
	c.Write(context.Background(), &jsonrpc.Response{ID: id1, Result: json.RawMessage(`{}`)})
	if len(fc.written) != 2 {
		t.Errorf("a new call with a cancelled call's id was not answered")
	}
}

func TestReviewLine(t *testing.T) {
	for _, tt := range []struct {
		name string
		ch   *sandbox.ChangesInfo
		want []string
	}{
		{"not a review", nil, nil},
		{"applied", &sandbox.ChangesInfo{Review: true, Applied: true, Modified: 2}, []string{"2 path(s)) was applied", "sandboxed undo R1"}},
		{"declined", &sandbox.ChangesInfo{Review: true, Deleted: 1, NotApplied: "declined"}, []string{"was not applied, nothing reached the host: declined"}},
		{"failed", &sandbox.ChangesInfo{Review: true, Created: 1, Unavailable: "apply to /x: conflict"}, []string{"was not applied: apply to /x: conflict"}},
		// Applying failed midway: its record, written first, was kept.
		{"partly applied", &sandbox.ChangesInfo{Review: true, Undo: true, PartlyApplied: true, Modified: 2, Unavailable: "apply to /y: EPERM"}, []string{"only partly applied: apply to /y: EPERM", "sandboxed undo R1"}},
		{"refused only", &sandbox.ChangesInfo{Review: true, Refused: []sandbox.RefusedPath{{Op: "created", Path: "/x/.env", Rule: "secrets.mask[0] .env"}}}, []string{"1 change(s) to paths the policy protects"}},
	} {
		var b strings.Builder
		reviewLine(&b, &sandbox.Result{RunID: "R1", Changes: tt.ch})
		for _, w := range tt.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: %q lacks %q", tt.name, b.String(), w)
			}
		}
		if len(tt.want) == 0 && b.Len() != 0 {
			t.Errorf("%s: %q", tt.name, b.String())
		}
	}
}
