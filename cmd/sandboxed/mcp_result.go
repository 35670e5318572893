package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxed-dev/sandboxed/internal/units"
	"github.com/sandboxed-dev/sandboxed/isolation/egress"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// defaultOutputBudget is how much of a call's output (stdout and stderr
// together) the model gets in a result by default: enough for most
// answers, a small part of a context window. The rest stays in the run
// record, behind a resource link.
const defaultOutputBudget = 64 << 10

// minOutputBudget is the least --output-budget: room for the status, the
// refusals and a useful excerpt.
const minOutputBudget = 1 << 10

// maxBlockedLines bounds the "blocked by the sandbox" lines of a result.
const maxBlockedLines = 10

// linkLines is room kept in the budget for the lines that say where the
// rest of the output is.
const linkLines = 768

// recordedOutput is where a run's captured output is kept, as the client
// reads it (resources/read), and how much of it there is.
type recordedOutput struct {
	URI   string `json:"uri,omitempty"`
	Bytes int64  `json:"bytes"`
}

// mcpRunResult is a call's structured content: the run result without
// its output, which reaches the model as text (bounded by the output
// budget) and the client through the links in Output.
type mcpRunResult struct {
	sandbox.Result
	// The output is not repeated here: these shadow Result's fields and
	// are always omitted.
	Stdout *struct{} `json:"stdout,omitempty"`
	Stderr *struct{} `json:"stderr,omitempty"`
	// Output says where the captured stdout and stderr are kept.
	Output map[string]recordedOutput `json:"output,omitempty"`
	// Blocked are the sandbox's refusals of what the tool tried, each
	// with the permission that would have allowed it, when one would.
	Blocked []string `json:"blocked,omitempty"`
}

// runResultSchema is the outputSchema of every tool: that of
// mcpRunResult, without the output fields it never has.
var runResultSchema = sync.OnceValue(func() *jsonschema.Schema {
	s, err := jsonschema.For[mcpRunResult](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of a run result: %v", err)) // a type that cannot change at run time
	}
	delete(s.Properties, "stdout")
	delete(s.Properties, "stderr")
	return s
})

// outputLinks finds the record of a run's streams: the URI a client
// reads a stream of a run by and its size in the record (ok false when
// the record has none).
type outputLinks func(runID, stream string) (uri string, size int64, ok bool)

// callResult renders a run for the model within budget bytes of output:
// stdout first (so that a tool's answer is the first text), then, when
// there is more to say, one text with the status, what the sandbox
// blocked, the error and its hint and stderr; then a resource link to
// each stream the text shows only in part.
func callResult(res *sandbox.Result, budget int, links outputLinks) *mcp.CallToolResult {
	if budget < minOutputBudget {
		budget = minOutputBudget
	}
	st := &mcpRunResult{Result: *res, Blocked: blockedBySandbox(res.Egress)}
	// The result must not keep the output alive: it goes with res once
	// the answer is written (a flood's 10 MB would stay as long as the
	// SDK holds the result).
	st.Result.Stdout, st.Result.Stderr = "", ""
	r := &mcp.CallToolResult{StructuredContent: st, IsError: res.Status != sandbox.StatusOK}

	var head strings.Builder // status, refusals, error and hint
	if r.IsError || len(st.Blocked) > 0 || len(res.Stdout)+len(res.Stderr) > budget || res.StdoutTruncated || res.StderrTruncated {
		fmt.Fprintf(&head, "status %s, exit code %d", res.Status, res.ExitCode)
		if res.Error != nil {
			fmt.Fprintf(&head, ": %s", res.Error.Message)
		}
		head.WriteByte('\n')
	}
	for _, b := range st.Blocked {
		fmt.Fprintf(&head, "%s\n", b)
	}
	if res.Error != nil && res.Error.Hint != "" {
		fmt.Fprintf(&head, "hint: %s\n", mcpHint(res.Error.Hint))
	}
	reviewLine(&head, res)
	// The output gets what the rest leaves of the budget (the lines that
	// point at the record take at most linkLines); stderr at most a
	// quarter of that, stdout the rest.
	room := max(budget-head.Len()-linkLines, minOutputBudget/2)
	errShare := min(len(res.Stderr), room/4)
	out := excerptOf(res.Stdout, room-errShare)
	errOut := excerptOf(res.Stderr, errShare)

	summary := &head
	if s := strings.TrimRight(errOut.text, "\n"); strings.TrimSpace(s) != "" {
		fmt.Fprintf(summary, "stderr:\n%s\n", s)
	}

	streams := []struct {
		name      string
		ex        excerpt
		truncated bool // the capture itself dropped output (buffer-limit)
	}{{"stdout", out, res.StdoutTruncated}, {"stderr", errOut, res.StderrTruncated}}
	var linked []mcp.Content
	for _, s := range streams {
		if links == nil {
			break
		}
		uri, size, ok := links(res.RunID, s.name)
		if !ok {
			continue
		}
		if st.Output == nil {
			st.Output = map[string]recordedOutput{}
		}
		st.Output[s.name] = recordedOutput{URI: uri, Bytes: size}
		if !s.ex.cut && !s.truncated {
			continue
		}
		fmt.Fprintf(summary, "%s: %s kept in the run record", s.name, units.FormatSize(size))
		if s.truncated {
			summary.WriteString(" (the tool wrote more; the capture keeps up to its buffer limit)")
		}
		if s.ex.cut {
			fmt.Fprintf(summary, "; shown here: the first %d and the last %d bytes; read the rest with resources/read %s?offset=%d&length=%d",
				s.ex.head, s.ex.tail, uri, s.ex.head, budget)
		}
		summary.WriteByte('\n')
		sz := size
		linked = append(linked, &mcp.ResourceLink{
			URI: uri, Name: res.RunID + "-" + s.name, MIMEType: "text/plain", Size: &sz,
			Title:       fmt.Sprintf("%s of run %s (%s)", s.name, res.RunID, res.Tool),
			Description: fmt.Sprintf("the %s of the call, as the run record keeps it; append ?offset=N&length=M to read a part", s.name),
		})
	}

	if out.text != "" {
		r.Content = append(r.Content, &mcp.TextContent{Text: out.text})
	}
	if summary.Len() > 0 {
		r.Content = append(r.Content, &mcp.TextContent{Text: summary.String()})
	}
	if len(r.Content) == 0 {
		// A successful call that printed nothing still says so.
		r.Content = append(r.Content, &mcp.TextContent{Text: fmt.Sprintf("status %s, exit code %d, no output", res.Status, res.ExitCode)})
	}
	r.Content = append(r.Content, linked...)
	return r
}

// reviewLine says what became of a reviewed call's change (mcp --review):
// applied, or not and why, and what the policy's protection left out.
func reviewLine(w io.Writer, res *sandbox.Result) {
	ch := res.Changes
	if ch == nil || !ch.Review {
		return
	}
	n := ch.Created + ch.Modified + ch.Deleted
	switch {
	case ch.Applied:
		fmt.Fprintf(w, "review: the change (%d path(s)) was applied to the host; sandboxed undo %s puts it back\n", n, res.RunID)
	case ch.PartlyApplied:
		// An apply that failed midway: its record, written before the
		// first change, is kept.
		fmt.Fprintf(w, "review: the change (%d path(s)) was only partly applied: %s; sandboxed undo %s puts back what was\n", n, ch.Unavailable, res.RunID)
	case n > 0 && ch.Unavailable != "":
		fmt.Fprintf(w, "review: the change (%d path(s)) was not applied: %s\n", n, ch.Unavailable)
	case n > 0:
		fmt.Fprintf(w, "review: the change (%d path(s)) was not applied, nothing reached the host: %s\n", n, ch.NotApplied)
	}
	if len(ch.Refused) > 0 {
		fmt.Fprintf(w, "review: %d change(s) to paths the policy protects were left out and are never applied (changes.refused)\n", len(ch.Refused))
	}
}

// excerpt is at most n bytes of an output: all of it, or its head and
// tail around a line that says how much was left out.
type excerpt struct {
	text       string
	cut        bool
	head, tail int // bytes of the output shown from its start and its end
}

// excerptOf is s in at most n bytes (and the line that marks the cut).
// The head and tail are substrings of s, cut at rune boundaries: no copy
// of the output is made.
func excerptOf(s string, n int) excerpt {
	if len(s) <= n {
		return excerpt{text: s, head: len(s)}
	}
	head := runeStart(s, n/2)
	tail := runeStart(s, len(s)-(n-n/2))
	if tail < head {
		tail = head
	}
	skipped := tail - head
	text := s[:head] + fmt.Sprintf("\n[sandboxed: %d bytes not shown]\n", skipped) + s[tail:]
	return excerpt{text: text, cut: true, head: head, tail: len(s) - tail}
}

// runeStart is the start of the rune at or before byte i of s.
func runeStart(s string, i int) int {
	if i <= 0 {
		return 0
	}
	if i >= len(s) {
		return len(s)
	}
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// permissionHint is how the egress proxy words the permission that would
// allow a refused connection, at the end of its reason.
const permissionHint = "; the permission that would allow it is "

// blockedBySandbox says, for each connection the sandbox refused, what
// was blocked and which permission would have allowed it (the proxy's
// reason), so that the model asks for that permission rather than tries
// to get around the sandbox.
func blockedBySandbox(entries []sandbox.EgressEntry) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range entries {
		if e.Verdict == string(egress.Allow) {
			continue
		}
		target := e.Host
		if e.Port != 0 {
			target = fmt.Sprintf("%s:%d", e.Host, e.Port)
		}
		var line string
		why, perm, named := strings.Cut(e.Reason, permissionHint)
		switch {
		case e.Verdict == string(egress.QuotaExceeded):
			line = fmt.Sprintf("blocked by the sandbox: a connection to %s: over the operator's quota: %s (no permission lifts a quota)", target, orDash(e.Reason))
		case named:
			line = fmt.Sprintf("blocked by the sandbox: a connection to %s: %s (permission that would allow it: %s)", target, why, perm)
		default:
			line = fmt.Sprintf("blocked by the sandbox: a connection to %s: %s (no permission allows it)", target, orDash(e.Reason))
		}
		if seen[line] {
			continue
		}
		seen[line] = true
		if len(out) == maxBlockedLines {
			out = append(out, "blocked by the sandbox: more connections (see the run record)")
			break
		}
		out = append(out, line)
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// mcpHint says where --approve goes when sandboxed serves MCP: on the
// server's command line, since a call cannot carry it.
func mcpHint(h string) string {
	if strings.Contains(h, "--approve") {
		return h + "\n(restart `sandboxed mcp` with that --approve flag, or allow it in the policy)"
	}
	return h
}

// errorResult is a call that did not get as far as a run: its one text
// says what was wrong.
func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}, IsError: true}
}
