package sandbox

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/tool"
)

func grants(t *testing.T, perms ...string) []permissions.Grant {
	t.Helper()
	g, err := permissions.Resolve(perms, "/work", "/home/u")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestBeyondCaller(t *testing.T) {
	tests := []struct {
		caller, sub []string
		extra       string
	}{
		{[]string{"filesystem:write:./out"}, []string{"filesystem:write:./out/sub"}, ""},
		{[]string{"filesystem:write:./out"}, []string{"filesystem:read:./out"}, ""},
		{[]string{"filesystem:read:./out"}, []string{"filesystem:write:./out"}, "filesystem:write:./out"},
		{[]string{"filesystem:read:./out"}, []string{"filesystem:read:./outside"}, "filesystem:read:./outside"},
		{[]string{"filesystem:read:/"}, []string{"filesystem:read:/etc"}, ""},
		{[]string{"network:external:api.github.com"}, []string{"network:external:api.github.com"}, ""},
		{[]string{"network:external:api.github.com:443"}, []string{"network:external:api.github.com"}, "network:external:api.github.com"},
		{[]string{"network:external:*.github.com"}, []string{"network:external:api.github.com:443"}, ""},
		{[]string{"network:external:*.github.com"}, []string{"network:external:github.com"}, "network:external:github.com"},
		{[]string{"network:external:github.com"}, []string{"network:external:*.github.com"}, "network:external:*.github.com"},
		{[]string{"network:external:*"}, []string{"network:external:example.com"}, ""},
		{[]string{"network:localhost:8080"}, []string{"network:localhost:8081"}, "network:localhost:8081"},
		{[]string{"env:TOKEN"}, []string{"env:TOKEN"}, ""},
		{nil, []string{"env:TOKEN"}, "env:TOKEN"},
	}
	for _, tt := range tests {
		got := strings.Join(beyond(grants(t, tt.sub...), grants(t, tt.caller...)), ",")
		if got != tt.extra {
			t.Errorf("caller %v sub %v: beyond %q, want %q", tt.caller, tt.sub, got, tt.extra)
		}
	}
}

func TestCheckDependencies(t *testing.T) {
	tools := map[string]*tool.Definition{
		"git-clone": {Name: "git-clone", Version: "1.4.0"},
		"npm-build": {Name: "npm-build", Version: "1.0.0"},
		"nover":     {Name: "nover"},
	}
	find := func(name string, scope tool.Scope) (*tool.Definition, error) {
		if d, ok := tools[name]; ok && scope != tool.ScopeGlobal {
			return d, nil
		}
		return nil, fmt.Errorf("find %s: %w", name, tool.ErrNotFound)
	}
	def := func(deps ...tool.Dependency) *tool.Definition {
		return &tool.Definition{Name: "me", Dependencies: deps}
	}

	notes, err := checkDependencies(find, def(
		tool.Dependency{Tool: "git-clone", Version: ">=1.0.0", Required: true},
		tool.Dependency{Tool: "npm-build", Version: "^2.0.0"},
		tool.Dependency{Tool: "docker-run", Version: "1.x"},
	))
	if err != nil || len(notes) != 2 {
		t.Fatalf("notes %v err %v", notes, err)
	}
	_, err = checkDependencies(find, def(
		tool.Dependency{Tool: "git-clone", Version: "~1.2", Required: true},
		tool.Dependency{Tool: "gone", Required: true},
		tool.Dependency{Tool: "git-clone", Scope: "global", Required: true},
		tool.Dependency{Tool: "nover", Version: ">=1", Required: true},
	))
	if !errors.Is(err, ErrComposition) {
		t.Fatalf("err %v", err)
	}
	for _, want := range []string{"git-clone is version 1.4.0", "gone is not installed", "scope global", "nover has no version"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestComposeRefusesBeyondCaller(t *testing.T) {
	sub := &tool.Definition{Name: "writer", Description: "w", Exec: &tool.Exec{Kind: tool.ExecBash, Command: "true"},
		Security: tool.Security{RequiredPermissions: []string{"filesystem:write:./out"}}}
	caller := &tool.Definition{Name: "caller", Description: "c",
		Steps:    []tool.Step{{Name: "w", UseTool: "writer"}},
		Security: tool.Security{RequiredPermissions: []string{"filesystem:read:./out"}}}
	find := func(name string, _ tool.Scope) (*tool.Definition, error) { return sub, nil }
	b, err := tool.Bind(caller, tool.Input{}, tool.BindEnv{Workspace: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = compose(find, b, grants(t, caller.Security.RequiredPermissions...), tool.BindEnv{Workspace: "/work"}, "/work", "/home/u")
	if !errors.Is(err, ErrBeyondCaller) || !strings.Contains(err.Error(), "filesystem:write:./out") {
		t.Fatalf("err %v", err)
	}
	caller.Security.RequiredPermissions = []string{"filesystem:write:./out"}
	b, _ = tool.Bind(caller, tool.Input{}, tool.BindEnv{Workspace: "/work"})
	comp, err := compose(find, b, grants(t, caller.Security.RequiredPermissions...), tool.BindEnv{Workspace: "/work"}, "/work", "/home/u")
	if err != nil || comp.subs["w"] == nil {
		t.Fatalf("comp %+v err %v", comp, err)
	}
	// A tool that uses itself is refused, not looped.
	self := &tool.Definition{Name: "loop", Description: "l", Steps: []tool.Step{{Name: "again", UseTool: "loop"}}}
	b, _ = tool.Bind(self, tool.Input{}, tool.BindEnv{Workspace: "/work"})
	if _, err := compose(func(string, tool.Scope) (*tool.Definition, error) { return self, nil }, b, nil, tool.BindEnv{}, "/work", ""); !errors.Is(err, ErrComposition) {
		t.Errorf("self use: %v", err)
	}
}
