package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// These tests drive `sandboxed mcp` the way agent hosts do, with clients
// that share no code with the server: mark3labs/mcp-go, and a bare
// JSON-RPC client over the process's pipes.

// mcpGoClient is `sandboxed mcp ARGS...` started in dir under mcp-go's
// stdio client and initialized. legacy pins the session protocol
// (2025-11-25, the initialize handshake) that hosts speak today; else the
// client negotiates what it prefers. The server is closed when the test
// ends.
type mcpGoClient struct {
	*mcpclient.Client
	cmd    *exec.Cmd
	stderr *syncBuffer
	init   *mcpgo.InitializeResult
}

func startMCPGo(t *testing.T, dir string, legacy bool, opts []mcpclient.ClientOption, args ...string) *mcpGoClient {
	t.Helper()
	m := &mcpGoClient{stderr: &syncBuffer{}}
	tr := transport.NewStdioWithOptions(env.bin, nil, nil, transport.WithCommandFunc(
		func(ctx context.Context, _ string, _ []string, _ []string) (*exec.Cmd, error) {
			m.cmd = command(append([]string{"mcp"}, args...)...)
			m.cmd.Dir = dir
			m.cmd.Stderr = m.stderr
			return m.cmd, nil
		}))
	if legacy {
		opts = append(opts, mcpclient.WithProtocolVersion(mcpgo.LATEST_LEGACY_PROTOCOL_VERSION))
	}
	m.Client = mcpclient.NewClient(tr, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The transport answers the server's requests (roots, elicitation)
	// under the context it starts with: the test's, not the handshake's.
	if err := m.Start(context.Background()); err != nil {
		t.Fatalf("start sandboxed mcp: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	req := mcpgo.InitializeRequest{}
	req.Params.ClientInfo = mcpgo.Implementation{Name: "e2e-mcp-go", Version: "1"}
	res, err := m.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initialize: %v\nstderr: %s", err, m.stderr.String())
	}
	m.init = res
	return m
}

// call calls a tool and returns the result as it was on the wire.
func (m *mcpGoClient) call(t *testing.T, ctx context.Context, name string, args map[string]any, meta *mcpgo.Meta) wireResult {
	t.Helper()
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments, req.Params.Meta = name, args, meta
	res, err := m.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("call %s: %v\nstderr: %s", name, err, m.stderr.String())
	}
	return asWire(t, res)
}

// wireResult is a tool call's result as JSON has it, whatever the client's
// types.
type wireResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
		URI  string `json:"uri"`
		Size *int64 `json:"size"`
	} `json:"content"`
	Structured json.RawMessage `json:"structuredContent"`
	IsError    bool            `json:"isError"`
	raw        []byte
}

func asWire(t *testing.T, v any) wireResult {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var w wireResult
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatalf("result %s: %v", b, err)
	}
	w.raw = b
	return w
}

func (w wireResult) text() string {
	var parts []string
	for _, c := range w.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (w wireResult) run(t *testing.T) result {
	t.Helper()
	var r result
	if err := json.Unmarshal(w.Structured, &r); err != nil {
		t.Fatalf("structured content %s: %v", w.Structured, err)
	}
	return r
}

// rssOf is the resident set of process pid, from /proc/PID/status.
func rssOf(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// A 50 MB flood reaches the model as at most the output budget and a link;
// the client pages through the whole captured output with ranged
// resource URIs; the server's memory goes back down afterwards.
func TestMCPFloodIsBounded(t *testing.T) {
	begin(t)
	const budget = 64 << 10
	dir := workdir(t, map[string]string{
		".sandboxed/tools/flood.yaml": `name: flood
description: Print 50 MB
tags: [read]
bash: yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 52428800; echo done >&2
security:
  isolation: process
`})
	for _, legacy := range []bool{true, false} {
		t.Run(map[bool]string{true: "session protocol", false: "client's preferred protocol"}[legacy], func(t *testing.T) {
			c := startMCPGo(t, dir, legacy, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res := c.call(t, ctx, "flood", map[string]any{}, nil)
			if res.IsError {
				t.Fatalf("flood: %s", res.text())
			}
			text := 0
			var link string
			var size int64
			for _, ct := range res.Content {
				text += len(ct.Text)
				if ct.Type == "resource_link" && strings.HasSuffix(ct.URI, "/stdout") {
					link, size = ct.URI, *ct.Size
				}
			}
			if text > budget {
				t.Errorf("the model got %d bytes of text, more than the budget of %d", text, budget)
			}
			if len(res.raw) > budget+16<<10 {
				t.Errorf("the result is %d bytes on the wire", len(res.raw))
			}
			if link == "" || size != 10<<20 {
				t.Fatalf("no link to the whole stdout (10 MiB kept): %s", res.raw[:min(len(res.raw), 4096)])
			}
			if !strings.Contains(res.text(), "stderr:\ndone") {
				t.Errorf("stderr does not reach the model: %q", res.text()[:min(len(res.text()), 2000)])
			}
			// Page through the whole output, a MiB at a time.
			var got int64
			uri := link + "?length=1048576"
			for i := 0; uri != "" && i < 20; i++ {
				rr, err := c.ReadResource(ctx, mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: uri}})
				if err != nil {
					t.Fatalf("read %s: %v", uri, err)
				}
				var w struct {
					Contents []struct {
						Text string         `json:"text"`
						Meta map[string]any `json:"_meta"`
					} `json:"contents"`
				}
				b, _ := json.Marshal(rr)
				if err := json.Unmarshal(b, &w); err != nil || len(w.Contents) != 1 {
					t.Fatalf("read %s: %s", uri, b[:min(len(b), 500)])
				}
				piece := w.Contents[0].Text
				if got == 0 && !strings.HasPrefix(piece, "0123456789abcdefghijklmnopqrstuvwxyz\n") {
					t.Errorf("the output starts %q", piece[:min(len(piece), 80)])
				}
				got += int64(len(piece))
				uri, _ = w.Contents[0].Meta["next"].(string)
			}
			if got != size {
				t.Errorf("paged through %d bytes of %d", got, size)
			}
			// Back under 100 MB once the call is answered.
			pid := c.cmd.Process.Pid
			var rss int64
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				if rss = rssOf(t, pid); rss < 100<<20 {
					break
				}
			}
			t.Logf("server RSS after the flood: %.1f MB", float64(rss)/(1<<20))
			if rss >= 100<<20 {
				t.Errorf("server RSS after the flood: %d MB, want under 100 MB", rss>>20)
			}
		})
	}
}

// A call to a host the tool did not declare tells the model the host and
// the permission that would allow it.
func TestMCPBlockedEgressNamesThePermission(t *testing.T) {
	begin(t)
	grant := "network:external:web.test"
	dir := workdir(t, nil)
	tools := filepath.Join(dir, ".sandboxed", "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	toolYAML(t, tools, "process", "fetcher", "curl -sSf http://other.test/ || echo FETCH-FAILED", []string{grant}, "")
	giveToRunner(t, filepath.Join(dir, ".sandboxed"))
	c := startMCPGo(t, dir, true, nil, "--approve", grant)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := c.call(t, ctx, "fetcher", map[string]any{}, nil)
	text := res.text()
	for _, want := range []string{"FETCH-FAILED", "blocked by the sandbox", "other.test:80", "permission that would allow it: network:external:other.test"} {
		if !strings.Contains(text, want) {
			t.Errorf("the model is not told %q:\n%s", want, text)
		}
	}
	if r := res.run(t); len(r.Egress) == 0 || r.Egress[0].Verdict != "deny" {
		t.Errorf("structured egress: %+v", r.Egress)
	}
}

// Annotations follow the grants the sandbox gives, not the tags; tools
// have a title and an output schema; an ok call's stderr reaches the
// model; an error result does not start with an empty text; resources
// answer (advertised), prompts do not (not advertised).
func TestMCPToolDeclarations(t *testing.T) {
	begin(t)
	dir := workdir(t, map[string]string{
		".sandboxed/tools/reader.yaml": "name: reader\ndescription: r\ntags: [read]\nbash: echo out; echo note >&2\nsecurity:\n  isolation: process\n  required-permissions: [\"filesystem:read:.\"]\n",
		// Tagged read, but its grants let it write.
		".sandboxed/tools/writer.yaml": "name: writer\ndescription: w\ntags: [read]\nbash: echo\nsecurity:\n  isolation: process\n  required-permissions: [\"filesystem:write:out\"]\n",
		".sandboxed/tools/netter.yaml": "name: netter\ndescription: n\ntags: [read]\nbash: echo\nsecurity:\n  isolation: process\n  required-permissions: [\"network:external:web.test\"]\n",
	})
	c := startMCPGo(t, dir, true, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	list, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	type hints struct{ ro, destructive, open bool }
	want := map[string]hints{"reader": {true, false, false}, "writer": {false, true, false}, "netter": {true, false, true}}
	for _, tl := range list.Tools {
		w, ok := want[tl.Name]
		if !ok {
			t.Errorf("unexpected tool %s", tl.Name)
			continue
		}
		a := tl.Annotations
		got := hints{a.ReadOnlyHint != nil && *a.ReadOnlyHint, a.DestructiveHint != nil && *a.DestructiveHint, a.OpenWorldHint != nil && *a.OpenWorldHint}
		if got != w {
			t.Errorf("%s: hints %+v, want %+v", tl.Name, got, w)
		}
		if tl.Title == "" || tl.OutputSchema.Type != "object" || tl.OutputSchema.Properties["run_id"] == nil {
			t.Errorf("%s: title %q, output schema %+v", tl.Name, tl.Title, tl.OutputSchema)
		}
		delete(want, tl.Name)
	}
	if len(want) > 0 {
		t.Errorf("not listed: %v", want)
	}
	res := c.call(t, ctx, "reader", map[string]any{}, nil)
	if res.IsError || len(res.Content) < 2 || res.Content[0].Text != "out\n" || !strings.Contains(res.Content[1].Text, "stderr:\nnote") {
		t.Errorf("reader: %s", res.raw)
	}
	// A refused call: the reason is the first text.
	res = c.call(t, ctx, "netter", map[string]any{}, nil)
	if !res.IsError || len(res.Content) == 0 || strings.TrimSpace(res.Content[0].Text) == "" || !strings.Contains(res.Content[0].Text, "denied") {
		t.Errorf("netter: %s", res.raw)
	}
	if _, err := c.ListResourceTemplates(ctx, mcpgo.ListResourceTemplatesRequest{}); err != nil {
		t.Errorf("resources/templates/list: %v", err)
	}
	if _, err := c.ListPrompts(ctx, mcpgo.ListPromptsRequest{}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("prompts/list (not advertised) answered: %v", err)
	}
}

// An elevated tool asks through elicitation: it runs once accepted (for
// the session: the next call does not ask again), and does not run when
// declined.
func TestMCPElicitsApproval(t *testing.T) {
	begin(t)
	dir := workdir(t, map[string]string{
		".sandboxed/tools/root.yaml": `name: root
description: Who am I, elevated
tags: [read]
bash: id -u
security:
  isolation: process
  execution-privilege: elevated
  justification: it needs root inside its sandbox to read its own files
`,
	})
	for _, tc := range []struct {
		name   string
		answer *mcpgo.ElicitationResult
		ok     bool
	}{
		{"accepted", &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: mcpgo.ElicitationResponseActionAccept, Content: map[string]any{"approve": "this session"}}}, true},
		{"declined", &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: mcpgo.ElicitationResponseActionDecline}}, false},
		{"answered no", &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: mcpgo.ElicitationResponseActionAccept, Content: map[string]any{"approve": "no"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &elicitor{answer: tc.answer}
			c := startMCPGo(t, dir, true, []mcpclient.ClientOption{mcpclient.WithElicitationHandler(e)})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res := c.call(t, ctx, "root", map[string]any{}, nil)
			msgs := e.messages()
			if len(msgs) != 1 {
				t.Fatalf("%d elicitation requests, want 1", len(msgs))
			}
			for _, want := range []string{"elevated", "risk", "it needs root inside its sandbox"} {
				if !strings.Contains(msgs[0], want) {
					t.Errorf("the request does not say %q:\n%s", want, msgs[0])
				}
			}
			r := res.run(t)
			if tc.ok {
				if res.IsError || r.Status != "ok" || strings.TrimSpace(r.Stdout+res.text()) == "" || !strings.HasPrefix(res.Content[0].Text, "0") {
					t.Fatalf("accepted: %s", res.raw)
				}
				// This session: the next call runs without asking.
				res = c.call(t, ctx, "root", map[string]any{}, nil)
				if res.IsError || len(e.messages()) != 1 {
					t.Errorf("second call: asked %d times, %s", len(e.messages()), res.raw)
				}
				return
			}
			if !res.IsError || r.Status != "denied" || r.ExitCode != 126 || r.Error == nil || !strings.Contains(r.Error.Message, "declined") {
				t.Errorf("%s: the tool ran or the refusal is wrong: %s", tc.name, res.raw)
			}
		})
	}
	// A client without elicitation gets today's actionable refusal; so
	// does one on the stateless protocol (2026-07-28), where a server
	// cannot ask during a call.
	for _, legacy := range []bool{true, false} {
		e := &elicitor{answer: &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: mcpgo.ElicitationResponseActionAccept, Content: map[string]any{"approve": "this call"}}}}
		var opts []mcpclient.ClientOption
		if !legacy {
			opts = append(opts, mcpclient.WithElicitationHandler(e))
		}
		c := startMCPGo(t, dir, legacy, opts)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res := c.call(t, ctx, "root", map[string]any{}, nil)
		cancel()
		if !res.IsError || !strings.Contains(res.text(), "--approve elevated") || strings.Contains(res.text(), "declined") || len(e.messages()) != 0 {
			t.Errorf("legacy %v, no elicitation: %s", legacy, res.raw)
		}
	}
}

type elicitor struct {
	mu     sync.Mutex
	asked  []string
	answer *mcpgo.ElicitationResult
}

func (e *elicitor) Elicit(_ context.Context, req mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, req.Params.Message)
	return e.answer, nil
}

func (e *elicitor) messages() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.asked...)
}

// notes collects a client's notifications.
type notes struct {
	mu  sync.Mutex
	got []mcpgo.JSONRPCNotification
}

func (n *notes) add(x mcpgo.JSONRPCNotification) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, x)
}

func (n *notes) of(method string) []map[string]any {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []map[string]any
	for _, x := range n.got {
		if x.Method == method {
			b, _ := json.Marshal(x.Params)
			var m map[string]any
			json.Unmarshal(b, &m)
			out = append(out, m)
		}
	}
	return out
}

// A 4-second call with a progress token sends progress (time and output
// so far); its log lines reach the client at the level it set.
func TestMCPProgressAndLog(t *testing.T) {
	begin(t)
	dir := workdir(t, map[string]string{
		".sandboxed/tools/slow.yaml": "name: slow\ndescription: s\ntags: [read]\nbash: for i in 1 2 3 4; do echo tick $i; sleep 1; done\nsecurity:\n  isolation: process\n",
	})
	c := startMCPGo(t, dir, true, nil)
	n := &notes{}
	c.OnNotification(n.add)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.SetLevel(ctx, mcpgo.SetLevelRequest{Params: mcpgo.SetLevelParams{Level: mcpgo.LoggingLevelInfo}}); err != nil {
		t.Fatal(err)
	}
	res := c.call(t, ctx, "slow", map[string]any{}, &mcpgo.Meta{ProgressToken: "slow-1"})
	if res.IsError {
		t.Fatalf("slow: %s", res.raw)
	}
	prog := n.of("notifications/progress")
	if len(prog) < 2 {
		t.Fatalf("%d progress notifications for a 4-second call", len(prog))
	}
	last := prog[len(prog)-1]
	if last["progressToken"] != "slow-1" || !strings.Contains(fmt.Sprint(last["message"]), "output so far: stdout") || last["progress"].(float64) < 2 {
		t.Errorf("progress: %v", prog)
	}
	time.Sleep(200 * time.Millisecond) // the log line follows the result
	found := false
	for _, m := range n.of("notifications/message") {
		if strings.Contains(fmt.Sprint(m["data"]), "call slow: ok") && m["level"] == "info" {
			found = true
		}
	}
	if !found {
		t.Errorf("no log line of the call: %v", n.of("notifications/message"))
	}
}

// A definition added while serving is announced and listed, and runs; a
// server started from / with the project as a root serves its tools.
func TestMCPLiveToolsAndRoots(t *testing.T) {
	begin(t)
	shout := "name: shout\ndescription: s\ntags: [read]\nbash: echo HI\nsecurity:\n  isolation: process\n"
	dir := workdir(t, map[string]string{".sandboxed/tools/shout.yaml": shout})

	t.Run("added while serving", func(t *testing.T) {
		c := startMCPGo(t, dir, true, nil)
		n := &notes{}
		c.OnNotification(n.add)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		p := filepath.Join(dir, ".sandboxed", "tools", "whisper.yaml")
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(shout, "shout", "whisper")), 0o644); err != nil {
			t.Fatal(err)
		}
		giveToRunner(t, p)
		defer os.Remove(p)
		for deadline := time.Now().Add(15 * time.Second); len(n.of("notifications/tools/list_changed")) == 0; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no notifications/tools/list_changed after a definition was added\nstderr: %s", c.stderr.String())
			}
		}
		list, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
		if err != nil || len(list.Tools) != 2 {
			t.Fatalf("tools after the addition: %v %v", list, err)
		}
		if res := c.call(t, ctx, "whisper", map[string]any{}, nil); res.IsError || res.Content[0].Text != "HI\n" {
			t.Errorf("whisper: %s", res.raw)
		}
	})

	t.Run("started from / with the project as a root", func(t *testing.T) {
		c := startMCPGo(t, "/", true, []mcpclient.ClientOption{mcpclient.WithRootsHandler(rootsOf{dir})})
		if !strings.Contains(c.init.Instructions, "no tools yet") {
			t.Errorf("instructions of a server with no tools: %q", c.init.Instructions)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var names []string
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			list, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			names = nil
			for _, tl := range list.Tools {
				names = append(names, tl.Name)
			}
			if len(names) > 0 || time.Now().After(deadline) {
				break
			}
		}
		if strings.Join(names, ",") != "shout" {
			t.Fatalf("tools served from / with root %s: %v\nstderr: %s", dir, names, c.stderr.String())
		}
		if res := c.call(t, ctx, "shout", map[string]any{}, nil); res.IsError || res.Content[0].Text != "HI\n" {
			t.Errorf("shout: %s", res.raw)
		}
	})
}

type rootsOf struct{ dir string }

func (r rootsOf) ListRoots(context.Context, mcpgo.ListRootsRequest) (*mcpgo.ListRootsResult, error) {
	return &mcpgo.ListRootsResult{Roots: []mcpgo.Root{{URI: "file://" + r.dir, Name: "project"}}}, nil
}

// rawMCP is a bare JSON-RPC client on the server's pipes.
type rawMCP struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    io.ReadCloser
	errp   io.ReadCloser
	stderr *syncBuffer
	msgs   chan map[string]any
}

func startRawMCP(t *testing.T, dir string, args ...string) *rawMCP {
	t.Helper()
	r := &rawMCP{cmd: command(append([]string{"mcp"}, args...)...), stderr: &syncBuffer{}, msgs: make(chan map[string]any, 100)}
	r.cmd.Dir = dir
	var err error
	if r.in, err = r.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if r.out, err = r.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if r.errp, err = r.cmd.StderrPipe(); err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			r.cmd.Process.Kill()
			r.cmd.Wait()
		}
	})
	go io.Copy(r.stderr, r.errp)
	go func() {
		sc := bufio.NewScanner(r.out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				r.msgs <- m
			}
		}
		close(r.msgs)
	}()
	r.send(t, map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "e2e-raw", "version": "1"}}})
	if m := r.until(t, 0, 30*time.Second); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	r.send(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return r
}

func (r *rawMCP) send(t *testing.T, m map[string]any) {
	t.Helper()
	b, _ := json.Marshal(m)
	if _, err := r.in.Write(append(b, '\n')); err != nil {
		t.Fatalf("send %s: %v", b, err)
	}
}

// until reads messages until the response to id, failing after d.
func (r *rawMCP) until(t *testing.T, id int, d time.Duration) map[string]any {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case m, ok := <-r.msgs:
			if !ok {
				t.Fatalf("the server closed stdout before answering %d\nstderr: %s", id, r.stderr.String())
			}
			if v, ok := m["id"].(float64); ok && int(v) == id && m["method"] == nil {
				return m
			}
		case <-timeout:
			t.Fatalf("no answer to %d in %s\nstderr: %s", id, d, r.stderr.String())
		}
	}
}

// waitFiles waits until n files are in dir.
func waitFiles(t *testing.T, dir string, n int, stderr *syncBuffer) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		ents, _ := os.ReadDir(dir)
		if len(ents) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls started\nstderr: %s", len(ents), n, stderr.String())
		}
	}
}

const sleeperTool = `name: sleeper
description: Mark that it started, then sleep
tags: [read]
bash: touch marks/{N}; sleep 60
parameters:
  N: {type: string, description: call number, required: true}
security:
  isolation: process
  required-permissions: ["filesystem:write:marks"]
`

// A client killed mid-call (its stdin, stdout and stderr closed) leaves no
// cgroup, run directory or process: the server outlives its pipes long
// enough to tear every sandbox down, and exits by itself. A host that
// quits with SIGTERM gets the same.
func TestMCPClientKilledMidCall(t *testing.T) {
	for _, how := range []string{"pipes closed", "SIGTERM"} {
		t.Run(how, func(t *testing.T) {
			begin(t)
			dir := workdir(t, map[string]string{".sandboxed/tools/sleeper.yaml": sleeperTool, "marks/.keep": ""})
			os.Remove(filepath.Join(dir, "marks", ".keep"))
			r := startRawMCP(t, dir, "--approve", "filesystem:write:marks")
			const calls = 4
			for i := 1; i <= calls; i++ {
				r.send(t, map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call",
					"params": map[string]any{"name": "sleeper", "arguments": map[string]any{"N": strconv.Itoa(i)}}})
			}
			waitFiles(t, filepath.Join(dir, "marks"), calls, r.stderr)
			if how == "SIGTERM" {
				must(t, r.cmd.Process.Signal(syscall.SIGTERM))
			} else {
				// The client dies: every pipe closes at once.
				r.in.Close()
				r.errp.Close()
				r.out.Close()
			}
			done := make(chan error, 1)
			go func() { done <- r.cmd.Wait() }()
			select {
			case err := <-done:
				ws := r.cmd.ProcessState.Sys().(syscall.WaitStatus)
				if ws.Signaled() {
					t.Errorf("the server died of %v (err %v)", ws.Signal(), err)
				}
			case <-time.After(30 * time.Second):
				r.cmd.Process.Kill()
				t.Fatalf("the server did not exit within 30s (its calls sleep 60s)\nstderr: %s", r.stderr.String())
			}
		})
	}
}

// No response follows a cancellation (notifications/cancelled); the
// cancelled call's sandbox goes, and the server answers what comes next.
func TestMCPNoResponseAfterCancel(t *testing.T) {
	begin(t)
	dir := workdir(t, map[string]string{".sandboxed/tools/sleeper.yaml": sleeperTool, "marks/.keep": ""})
	os.Remove(filepath.Join(dir, "marks", ".keep"))
	r := startRawMCP(t, dir, "--approve", "filesystem:write:marks")
	r.send(t, map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
		"params": map[string]any{"name": "sleeper", "arguments": map[string]any{"N": "7"}}})
	waitFiles(t, filepath.Join(dir, "marks"), 1, r.stderr)
	r.send(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": 7, "reason": "user"}})
	// Wait until the run is over (the server logs it), then a while more.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(r.stderr.String(), "call sleeper:"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled call did not end\nstderr: %s", r.stderr.String())
		}
	}
	r.send(t, map[string]any{"jsonrpc": "2.0", "id": 8, "method": "ping"})
	timeout := time.After(2 * time.Second)
	gotPing := false
	for done := false; !done; {
		select {
		case m := <-r.msgs:
			if v, ok := m["id"].(float64); ok && v == 7 {
				t.Errorf("a response followed the cancellation: %v", m)
			}
			if v, ok := m["id"].(float64); ok && v == 8 {
				gotPing = true
			}
		case <-timeout:
			done = true
		}
	}
	if !gotPing {
		t.Errorf("no answer to a ping after the cancellation")
	}
	r.in.Close()
	if err := r.cmd.Wait(); err != nil {
		t.Errorf("server exit: %v\nstderr: %s", err, r.stderr.String())
	}
}

// mcp --review: a call of a tool with a write grant shows its change
// through elicitation and applies it only when the user accepts; declined,
// cancelled or without elicitation, the folder is untouched and the result
// says so.
func TestMCPReviewsWrites(t *testing.T) {
	begin(t)
	dir := workdir(t, map[string]string{
		"out/keep.txt": "original\n", "out/gone.txt": "gone\n",
		".sandboxed/tools/writer.yaml": `name: writer
description: Writes its notes
tags: [write]
bash: |
  printf 'by the tool\n' > out/keep.txt
  rm out/gone.txt
  echo done
security:
  isolation: process
  required-permissions:
    - "filesystem:write:./out"
`,
	})
	out := filepath.Join(dir, "out")
	before := treeDigest(t, out)
	accept := func(v string) *mcpgo.ElicitationResult {
		return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: mcpgo.ElicitationResponseActionAccept, Content: map[string]any{"apply": v}}}
	}
	for _, tc := range []struct {
		name   string
		answer *mcpgo.ElicitationResult // nil: no elicitation capability
		apply  bool
		says   string
	}{
		{"declined", &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: mcpgo.ElicitationResponseActionDecline}}, false, "declined"},
		{"cancelled", &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: mcpgo.ElicitationResponseActionCancel}}, false, "declined"},
		{"discarded", accept("discard"), false, "declined"},
		{"no elicitation", nil, false, "cannot ask its user"},
		{"accepted", accept("apply"), true, "was applied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &elicitor{answer: tc.answer}
			var opts []mcpclient.ClientOption
			if tc.answer != nil {
				opts = append(opts, mcpclient.WithElicitationHandler(e))
			}
			c := startMCPGo(t, dir, true, opts, "--review")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res := c.call(t, ctx, "writer", map[string]any{}, nil)
			if res.IsError {
				t.Fatalf("call: %s", res.raw)
			}
			var ch changesOf
			if err := json.Unmarshal(res.Structured, &ch); err != nil || ch.Changes == nil || !ch.Changes.Review || ch.Changes.Deleted != 1 || ch.Changes.Modified != 1 {
				t.Fatalf("changes: %v %s", err, res.Structured)
			}
			msgs := e.messages()
			if tc.answer != nil {
				if len(msgs) != 1 || !strings.Contains(msgs[0], "deleted   gone.txt") || !strings.Contains(msgs[0], "+|by the tool") {
					t.Fatalf("the request does not show the change: %q", msgs)
				}
				// It names the way back, which a server killed while it
				// applies could not say after.
				var run struct {
					RunID string `json:"run_id"`
				}
				if err := json.Unmarshal(res.Structured, &run); err != nil || run.RunID == "" || !strings.Contains(msgs[0], "sandboxed undo "+run.RunID+" puts it back") {
					t.Errorf("the request does not say how to undo run %q: %v %q", run.RunID, err, msgs)
				}
			} else if len(msgs) != 0 {
				t.Fatalf("asked a client without elicitation: %q", msgs)
			}
			if !strings.Contains(res.text(), tc.says) || ch.Changes.Applied != tc.apply {
				t.Errorf("the result does not say %q (applied %v):\n%s", tc.says, ch.Changes.Applied, res.text())
			}
			if !tc.apply {
				if treeDigest(t, out) != before {
					t.Fatal("an unaccepted change reached the folder")
				}
				return
			}
			if b, _ := os.ReadFile(filepath.Join(out, "keep.txt")); string(b) != "by the tool\n" {
				t.Errorf("the accepted change was not applied: keep.txt = %q", b)
			}
			if _, err := os.Lstat(filepath.Join(out, "gone.txt")); err == nil {
				t.Error("gone.txt is still there")
			}
		})
	}
}
