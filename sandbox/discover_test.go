package sandbox

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/tool"
)

func TestProbePlan(t *testing.T) {
	s := tool.Script{File: "greet.py", Path: "/srv/tools/greet.py", Argv: []string{"/srv/tools/greet.py"}}
	p, err := ProbePlan("20260101T000000-abcdef", "/run/sandboxed", s, DefaultProbeLimits, ProbeAccess{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Tier != isolation.TierProcess || p.Privilege != privilege.Reduced || p.Egress != nil {
		t.Errorf("tier %s privilege %s egress %v", p.Tier, p.Privilege, p.Egress)
	}
	if u := p.Spec.Process.User; u.UID != privilege.NobodyID || u.GID != privilege.NobodyID {
		t.Errorf("user = %+v, want nobody", u)
	}
	if p.Limits.Timeout != 5*time.Second || p.Limits.MemoryBytes != 256<<20 || p.Limits.Pids != 64 {
		t.Errorf("limits = %+v", p.Limits)
	}
	if m := p.Spec.Linux.Resources.Memory; m == nil || *m.Limit != 256<<20 {
		t.Errorf("spec memory = %+v", m)
	}
	var netns bool
	for _, ns := range p.Spec.Linux.Namespaces {
		if ns.Type == "network" && ns.Path == "" {
			netns = true
		}
	}
	if !netns {
		t.Error("a probe must get an empty network namespace")
	}
	var binds []string
	for _, m := range p.Spec.Mounts {
		if m.Type == "bind" && m.Source != "/dev/null" {
			binds = append(binds, m.Source+"->"+m.Destination+" "+strings.Join(m.Options, ","))
			if !slices.Contains(m.Options, "ro") {
				t.Errorf("bind %s is not read-only", m.Destination)
			}
		}
	}
	// The script alone: nothing else of its directory (a probe of a script
	// in ~ must not read ~/.ssh).
	if len(binds) != 1 || !strings.HasPrefix(binds[0], "/srv/tools/greet.py->/srv/tools/greet.py ") {
		t.Errorf("binds = %v, want the script alone, read-only", binds)
	}
	if p.Spec.Process.Cwd != "/srv/tools" || !slices.Contains(p.Spec.Process.Env, "HOME=/tmp") {
		t.Errorf("cwd %s env %v", p.Spec.Process.Cwd, p.Spec.Process.Env)
	}
}

// probeBackend answers probes from a table keyed by script file and probe
// argument; "hang" blocks until the run is killed.
type probeBackend struct {
	mu         sync.Mutex
	failStarts int               // the first failStarts starts fail
	answers    map[string]string // "file arg" -> stdout, or "hang"
	seen       []string
	plans      []*isolation.Plan
}

func (b *probeBackend) Tier() isolation.Tier                         { return isolation.TierProcess }
func (b *probeBackend) Check(context.Context, *isolation.Plan) error { return nil }
func (b *probeBackend) GC(context.Context, func(string) bool) ([]string, error) {
	return nil, nil
}
func (b *probeBackend) Start(_ context.Context, p *isolation.Plan) (isolation.Sandbox, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.plans = append(b.plans, p)
	if b.failStarts > 0 {
		b.failStarts--
		return nil, errors.New("sandbox init gone")
	}
	return &probeSandbox{b: b, killed: make(chan struct{})}, nil
}

type probeSandbox struct {
	b      *probeBackend
	once   sync.Once
	killed chan struct{}
}

func (s *probeSandbox) Exec(ctx context.Context, c isolation.Command, io_ isolation.Stdio) (isolation.Exit, error) {
	key := filepath.Base(c.Args[len(c.Args)-2]) + " " + c.Args[len(c.Args)-1]
	s.b.mu.Lock()
	s.b.seen = append(s.b.seen, key)
	ans, ok := s.b.answers[key]
	s.b.mu.Unlock()
	switch {
	case ans == "hang":
		select {
		case <-ctx.Done():
			return isolation.Exit{Code: 143, Signal: 15}, ctx.Err()
		case <-s.killed:
			return isolation.Exit{Code: 137, Signal: 9}, nil
		}
	case !ok:
		io.WriteString(io_.Stderr, "usage: no\n")
		return isolation.Exit{Code: 2}, nil
	}
	io.WriteString(io_.Stdout, ans)
	return isolation.Exit{}, nil
}
func (s *probeSandbox) Kill(context.Context, time.Duration) error {
	s.once.Do(func() { close(s.killed) })
	return nil
}
func (s *probeSandbox) Stats(context.Context) (isolation.Stats, error) { return isolation.Stats{}, nil }
func (s *probeSandbox) Close(context.Context) error                    { return nil }

func TestDiscoverDir(t *testing.T) {
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{"greet.py": 0o755, "hangs.sh": 0o755, "dup.py": 0o755} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	ping := `{"success": true, "_simple": true}`
	b := &probeBackend{answers: map[string]string{
		"greet.py " + tool.PingArg:               `{"success": true, "_simple": true}`,
		"greet.py --fractalic-dump-schema":       `{"name":"greet","parameters":{"type":"object","properties":{"name":{"type":"string"}}}}`,
		"dup.py " + tool.PingArg:                 ping,
		"dup.py --fractalic-dump-schema":         `{"name":"greet","parameters":{"type":"object"}}`,
		"hangs.sh " + tool.PingArg:               "hang",
		"hangs.sh --fractalic-dump-multi-schema": "hang",
		"hangs.sh --fractalic-dump-schema":       "hang",
		"hangs.sh --help":                        "hang",
	}}
	c := &Controller{RuntimeDir: t.TempDir(), Backends: map[isolation.Tier]isolation.Backend{isolation.TierProcess: b}}
	lim := DefaultProbeLimits
	lim.Timeout = 50 * time.Millisecond
	found, err := c.DiscoverDir(context.Background(), dir, DiscoverOptions{Limits: lim, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*tool.Discovery{}
	for _, d := range found {
		got[d.File] = d
	}
	// dup.py sorts first, so it keeps the name and greet.py is refused.
	if d := got["dup.py"]; d == nil || d.Result != tool.ResultRegistered || len(d.Tools) != 1 || d.Tools[0].Name != "greet" {
		t.Errorf("dup.py = %+v", d)
	}
	if d := got["greet.py"]; d == nil || d.Result != tool.ResultSkipped || !strings.Contains(d.Why, "already taken by greet of dup.py") {
		t.Errorf("greet.py = %+v", d)
	}
	if d := got["hangs.sh"]; d == nil || d.Result != tool.ResultSkipped || !strings.Contains(d.Why, "timed out") {
		t.Errorf("hangs.sh = %+v", d)
	} else if len(d.Probes) != 2 || !d.Probes[0].TimedOut {
		t.Errorf("hangs.sh probes = %+v", d.Probes)
	}
	for _, p := range b.plans {
		if p.Privilege != privilege.Reduced || p.Limits.Timeout != lim.Timeout || p.Egress != nil {
			t.Errorf("probe plan %s: privilege %s timeout %v", p.Tool, p.Privilege, p.Limits.Timeout)
		}
	}
}

// TestProbeRetriesStart: a sandbox that did not start is tried again; a
// script that fails is not.
func TestProbeRetriesStart(t *testing.T) {
	s := tool.Script{File: "greet.py", Path: "/srv/tools/greet.py", Argv: []string{"/srv/tools/greet.py"}}
	for _, tc := range []struct {
		failStarts int
		wantStarts int
		wantError  bool
	}{
		{0, 1, false},
		{2, 3, false},
		{5, probeAttempts, true},
	} {
		b := &probeBackend{failStarts: tc.failStarts, answers: map[string]string{"greet.py " + tool.PingArg: "pong"}}
		c := &Controller{RuntimeDir: t.TempDir(), Backends: map[isolation.Tier]isolation.Backend{isolation.TierProcess: b}}
		out := c.Probe(context.Background(), s, tool.ProbePing, DefaultProbeLimits, ProbeAccess{})
		if len(b.plans) != tc.wantStarts || (out.Error != "") != tc.wantError {
			t.Errorf("failStarts %d: %d starts, error %q", tc.failStarts, len(b.plans), out.Error)
		}
		if !tc.wantError && out.Stdout != "pong" {
			t.Errorf("failStarts %d: stdout %q", tc.failStarts, out.Stdout)
		}
	}
	// A script that exits non-zero ran: one start only.
	b := &probeBackend{answers: map[string]string{}}
	c := &Controller{RuntimeDir: t.TempDir(), Backends: map[isolation.Tier]isolation.Backend{isolation.TierProcess: b}}
	if out := c.Probe(context.Background(), s, tool.ProbeHelp, DefaultProbeLimits, ProbeAccess{}); out.ExitCode != 2 || len(b.plans) != 1 {
		t.Errorf("failing script: exit %d, %d starts", out.ExitCode, len(b.plans))
	}
}

func TestDiscoverDirWithoutSandbox(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Controller{RuntimeDir: t.TempDir(), Backends: map[isolation.Tier]isolation.Backend{}}
	if _, err := c.DiscoverDir(context.Background(), dir, DiscoverOptions{Limits: DefaultProbeLimits, Parallel: 1}); !errors.Is(err, ErrNoProbeSandbox) {
		t.Errorf("err = %v, want ErrNoProbeSandbox", err)
	}
}

// TestMarkDuplicates: "_ls" and "ls" in two scripts both become the tool
// ls; the later file is skipped, and the reason names both.
func TestMarkDuplicates(t *testing.T) {
	decl := func(name string) tool.FunctionDecl {
		return tool.FunctionDecl{Name: name, Input: map[string]any{"type": "object"}}
	}
	var ds []*tool.Discovery
	for _, f := range []struct{ file, name string }{{"_ls.py", "_ls"}, {"ls.py", "ls"}, {"other.py", "other"}} {
		s := tool.Script{File: f.file, Path: "/t/" + f.file, Argv: []string{"/t/" + f.file}}
		def, err := tool.DefinitionFor(s, decl(f.name), f.name, "")
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, &tool.Discovery{File: f.file, Result: tool.ResultRegistered, Tools: []*tool.Definition{def}, Names: []string{def.Name}})
	}
	markDuplicates(ds)
	if ds[0].Result != tool.ResultRegistered || ds[2].Result != tool.ResultRegistered {
		t.Errorf("first and unrelated files: %s, %s", ds[0].Result, ds[2].Result)
	}
	if want := "tool name ls (ls of ls.py) is already taken by _ls of _ls.py"; ds[1].Result != tool.ResultSkipped || !strings.Contains(ds[1].Why, want) {
		t.Errorf("ls.py: %s %q, want skipped with %q", ds[1].Result, ds[1].Why, want)
	}
}

// TestProbePlanReadsAndGrants: a probe reads the script's folder (so the
// modules beside it import) and the grants given to discover, read-only
// unless a write grant is approved.
func TestProbePlanReadsAndGrants(t *testing.T) {
	s := tool.Script{File: "os/shell.py", Path: "/srv/tools/os/shell.py", Argv: []string{"/srv/tools/os/shell.py"}, Reads: []string{"/srv/tools/os"}}
	p, err := ProbePlan("20260101T000000-abcdef", "/run/sandboxed", s, DefaultProbeLimits, ProbeAccess{Read: []string{"/data"}, Write: []string{"/out"}})
	if err != nil {
		t.Fatal(err)
	}
	binds := map[string]bool{}
	for _, m := range p.Spec.Mounts {
		if m.Type == "bind" && m.Source != "/dev/null" {
			binds[m.Source+" "+strings.Join(m.Options, ",")] = slices.Contains(m.Options, "ro")
		}
	}
	ro := func(src string) (bool, bool) {
		for k, v := range binds {
			if strings.HasPrefix(k, src+" ") {
				return v, true
			}
		}
		return false, false
	}
	for src, wantRO := range map[string]bool{"/srv/tools/os": true, "/data": true, "/out": false} {
		if got, ok := ro(src); !ok || got != wantRO {
			t.Errorf("%s: bound %v, read-only %v; want read-only %v (binds %v)", src, ok, got, wantRO, binds)
		}
	}

	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "in"), 0o755)
	os.Mkdir(filepath.Join(dir, "out"), 0o755)
	grants := []string{"filesystem:read:in", "filesystem:write:out", "filesystem:write:later", "network:external:example.com"}
	real, _ := filepath.EvalSymlinks(dir)
	for _, c := range []struct {
		approve   bool
		read, rwr []string
	}{
		{false, []string{filepath.Join(real, "in"), filepath.Join(real, "out")}, nil},
		{true, []string{filepath.Join(real, "in")}, []string{filepath.Join(real, "out")}},
	} {
		acc, err := probeAccess(DiscoverOptions{Grants: grants, ApproveWrite: c.approve, Cwd: dir, Home: "/home/u"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(acc.Read, c.read) || !slices.Equal(acc.Write, c.rwr) {
			t.Errorf("approve %v: read %v write %v, want %v %v", c.approve, acc.Read, acc.Write, c.read, c.rwr)
		}
	}
	if _, err := probeAccess(DiscoverOptions{Grants: []string{"filesystem:read:missing"}, Cwd: dir}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing read grant: %v", err)
	}
}
