package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxed-dev/sandboxed/sandbox"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// watchEvery is how often the server looks at its scopes' directories for
// definitions added, changed or removed.
const watchEvery = time.Second

// mcpTools keeps the tools a server lists in step with the definitions
// in its scopes: the project's (--project, else the client's roots, else
// the server's working directory), the other roots', the user's and the
// global one. A change is applied to the server, which tells the client
// (notifications/tools/list_changed).
type mcpTools struct {
	h       *mcpHandler
	scope   tool.Scope
	project string // --project; "" when not given
	cwd     string // the server's working directory
	home    string
	log     *mcpLog

	mu    sync.Mutex
	srv   *mcp.Server
	roots []string // the client's file roots
	// clientRoots is set when the client declared the roots capability.
	clientRoots atomic.Bool
	served      map[string]servedTool // by MCP name
	skipped     map[string]bool       // what was reported skipped (path and digest)
	sig         uint64                // of the scope directories at the last scan
}

// servedTool is one listed tool: its definition's file and digest and the
// directory its calls run in.
type servedTool struct {
	path, sha, cwd string
}

// scanned is one tool found by a scan, ready to be served.
type scanned struct {
	tool *mcp.Tool
	def  *tool.Definition
	servedTool
}

// projects are the directories whose .sandboxed/tools are the local
// scope, the working directory of calls first.
func (m *mcpTools) projects() []string {
	var out []string
	if m.project != "" {
		out = append(out, m.project)
	}
	out = append(out, m.roots...)
	if len(out) == 0 {
		out = append(out, m.cwd)
	}
	var uniq []string
	for _, d := range out {
		if !slices.Contains(uniq, d) {
			uniq = append(uniq, d)
		}
	}
	return uniq
}

// scopes are the tool scopes of projects: the local scope of each
// project, then the user's and the global scope.
func (m *mcpTools) scopes(projects []string) tool.Scopes {
	s := sandbox.ToolScopes(projects[0], m.home)
	for _, p := range projects[1:] {
		s.Dirs[tool.ScopeLocal] = append(s.Dirs[tool.ScopeLocal], tool.DefaultScopes(p, "").Dirs[tool.ScopeLocal]...)
	}
	return s
}

// scan lists the tools of the scopes; each definition that cannot be
// served is reported once on the log (until it changes).
func (m *mcpTools) scan() (map[string]scanned, tool.Scopes, []string) {
	projects := m.projects()
	s := m.scopes(projects)
	entries, err := s.List(m.scope)
	if err != nil {
		m.log.logf("warning", "list tools: %v", err)
	}
	want := map[string]scanned{}
	for _, e := range entries {
		skip := func(format string, args ...any) {
			key := e.Path + "\x00" + format
			if e.Def != nil {
				key += e.Def.Source.SHA256
			}
			if !m.skipped[key] {
				m.skipped[key] = true
				m.log.logf("warning", "skip %s: %s", e.Path, fmt.Sprintf(format, args...))
			}
		}
		switch {
		case e.Err != nil:
			skip("%v", e.Err)
			continue
		case e.Shadowed:
			continue
		}
		def, err := s.WithBase(e.Def)
		if err != nil {
			skip("%v", err)
			continue
		}
		t, err := mcpTool(def)
		if err != nil {
			skip("%v", err)
			continue
		}
		if other, dup := want[t.Name]; dup {
			skip("function name %s is already served for %s", t.Name, other.path)
			continue
		}
		want[t.Name] = scanned{tool: t, def: def, servedTool: servedTool{path: e.Path, sha: def.Source.SHA256, cwd: projectOf(e.Path, projects)}}
	}
	return want, s, projects
}

// projectOf is the project whose local scope holds path, else the first
// project (a tool of the user or global scope runs there).
func projectOf(path string, projects []string) string {
	for _, p := range projects {
		for _, d := range tool.DefaultScopes(p, "").Dirs[tool.ScopeLocal] {
			if strings.HasPrefix(path, d+string(filepath.Separator)) {
				return p
			}
		}
	}
	return projects[0]
}

// apply makes the server list want: tools gone are removed, tools new or
// changed (another file, digest or directory) are added; the SDK tells
// the client the list changed. It returns how many are served.
func (m *mcpTools) apply(want map[string]scanned) int {
	var gone []string
	for name := range m.served {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		m.srv.RemoveTools(gone...)
		for _, name := range gone {
			delete(m.served, name)
			m.log.logf("info", "tool %s is gone", name)
		}
	}
	for name, w := range want {
		if m.served[name] == w.servedTool {
			continue
		}
		_, had := m.served[name]
		m.srv.AddTool(w.tool, m.h.handler(w.def, w.cwd))
		m.served[name] = w.servedTool
		if had {
			m.log.logf("info", "tool %s changed (%s)", name, w.path)
		} else if m.sig != 0 {
			m.log.logf("info", "tool %s added (%s)", name, w.path)
		}
	}
	return len(m.served)
}

// refresh scans the scopes again when their directories changed (or
// always, when force), and applies what it found.
func (m *mcpTools) refresh(force bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	projects := m.projects()
	sig := dirsSignature(m.scopes(projects), m.scope)
	if !force && sig == m.sig {
		return
	}
	want, _, _ := m.scan()
	m.apply(want)
	m.sig = sig
}

// watch refreshes the tools every watchEvery until ctx ends.
func (m *mcpTools) watch(ctx context.Context) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.refresh(false)
		}
	}
}

// dirsSignature is a digest of the names, sizes, times and inodes of the
// entries of the scope directories (what a definition added, edited,
// renamed or removed changes), and of the directories themselves.
func dirsSignature(s tool.Scopes, scope tool.Scope) uint64 {
	h := fnv.New64a()
	var dirs []string
	for sc, ds := range s.Dirs {
		if scope == "" || scope == tool.ScopeAny || scope == sc {
			dirs = append(dirs, ds...)
		}
	}
	slices.Sort(dirs)
	for _, d := range dirs {
		fmt.Fprintf(h, "%s\x00", d)
		ents, err := os.ReadDir(d)
		if err != nil {
			fmt.Fprintf(h, "-\x00")
			continue
		}
		for _, e := range ents {
			fi, err := os.Stat(filepath.Join(d, e.Name())) // the target of a link
			if err != nil {
				fmt.Fprintf(h, "%s\x00!\x00", e.Name())
				continue
			}
			fmt.Fprintf(h, "%s\x00%d\x00%d\x00%v\x00", e.Name(), fi.Size(), fi.ModTime().UnixNano(), inodeOf(fi))
		}
	}
	return h.Sum64() | 1 // never 0: 0 is "not scanned yet"
}

// setRoots takes the client's roots (file URIs; others are ignored) and
// serves the tools of their projects.
func (m *mcpTools) setRoots(roots []*mcp.Root) {
	var dirs []string
	for _, r := range roots {
		u, err := url.Parse(r.URI)
		if err != nil || u.Scheme != "file" || !filepath.IsAbs(u.Path) {
			continue
		}
		dirs = append(dirs, filepath.Clean(u.Path))
	}
	m.mu.Lock()
	changed := !slices.Equal(dirs, m.roots)
	m.roots = dirs
	m.mu.Unlock()
	if changed {
		m.log.logf("info", "the client's roots: %s", strings.Join(dirs, ", "))
		m.refresh(true)
	}
}

// initializeParams notes from the client's initialize parameters
// whether it has roots.
func (m *mcpTools) initializeParams(raw json.RawMessage) {
	var p struct {
		Capabilities struct {
			Roots json.RawMessage `json:"roots"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(raw, &p) == nil {
		r := string(p.Capabilities.Roots)
		m.clientRoots.Store(r != "" && r != "null")
	}
}

// askRoots asks the client for its roots, when it has them.
func (m *mcpTools) askRoots(ctx context.Context, ss *mcp.ServerSession) {
	if ss == nil {
		return
	}
	if !m.clientRoots.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := ss.ListRoots(ctx, nil)
	if err != nil {
		m.log.logf("warning", "ask the client for its roots: %v", err)
		return
	}
	m.setRoots(res.Roots)
}

// instructions are the initialize instructions: how results and output
// work, and, for a server with no tools, why it has none and what to do.
func instructions(n int, s tool.Scopes, scope tool.Scope, projects []string, budget int) string {
	var b strings.Builder
	if n == 0 {
		var dirs []string
		for sc, ds := range s.Dirs {
			if scope == "" || scope == tool.ScopeAny || scope == sc {
				dirs = append(dirs, ds...)
			}
		}
		slices.Sort(dirs)
		fmt.Fprintf(&b, "This sandboxed server has no tools yet: no loadable tool definition in %s (scope %s). ",
			strings.Join(dirs, ", "), scope)
		fmt.Fprintf(&b, "It looks for the project's tools in %s; start it with --project DIR (or give the project as a root) to serve another project's, "+
			"or add a definition there (`sandboxed tool add`): new definitions are listed as they appear (notifications/tools/list_changed). "+
			"The server's stderr names each definition it skipped and why.\n", filepath.Join(projects[0], ".sandboxed", "tools"))
	}
	fmt.Fprintf(&b, "Every tool runs in a sandbox with only the permissions its definition declares, as far as the operator's policy allows. "+
		"A result shows at most %d bytes of the tool's output; the rest stays in the run record, which the result links to "+
		"(resources/read sandboxed://runs/RUN/stdout?offset=N&length=M reads it piece by piece). "+
		"When the sandbox blocked something the tool tried, the result says so and names the permission that would allow it: "+
		"ask the user for that permission rather than trying another way around the sandbox.", budget)
	return b.String()
}

// mcpTool is the MCP declaration of def: its function schema, a title,
// hints derived from what the sandbox will let it do, and the schema of
// the structured content of its results.
func mcpTool(def *tool.Definition) (*mcp.Tool, error) {
	fs, err := tool.FunctionSchema(def, tool.SchemaMCP)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(fs)
	if err != nil {
		return nil, fmt.Errorf("export schema of %s: %w", def.Name, err)
	}
	var decl struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal(data, &decl); err != nil {
		return nil, fmt.Errorf("export schema of %s: %w", def.Name, err)
	}
	title := def.Name + " (sandboxed)"
	hints := toolHints(def)
	hints.Title = title
	return &mcp.Tool{Name: decl.Name, Title: title, Description: decl.Description, InputSchema: decl.InputSchema,
		Annotations: hints, OutputSchema: runResultSchema()}, nil
}

// toolHints are a tool's annotations, derived from what its sandbox will
// let it do, never from its tags alone (a host may approve a read-only
// tool without asking): a tool is read-only when it gets no write grant
// and runs sandboxed; it reaches an open world when it gets a network
// grant or a credential, or runs unsandboxed. Tags only make the hints
// more careful: a tool tagged write is not called read-only.
func toolHints(def *tool.Definition) *mcp.ToolAnnotations {
	write, network := false, false
	for _, p := range def.Security.RequiredPermissions {
		perm, err := tool.ParsePermission(p)
		if err != nil {
			write, network = true, true // what it asks is unclear: assume the worst
			continue
		}
		switch perm.Kind {
		case tool.PermFSWrite:
			write = true
		case tool.PermNetExternal, tool.PermNetLocalhost:
			network = true
		}
	}
	if def.Sandboxed != nil && len(def.Sandboxed.Credentials) > 0 {
		network = true
	}
	if def.Security.Isolation == tool.IsolationNone {
		write, network = true, true
	}
	for _, t := range def.Tags {
		if strings.EqualFold(t, "write") {
			write = true
		}
	}
	destructive := write
	return &mcp.ToolAnnotations{ReadOnlyHint: !write, DestructiveHint: &destructive, OpenWorldHint: &network}
}

// inodeOf is fi's inode number (0 where the system has none).
func inodeOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
