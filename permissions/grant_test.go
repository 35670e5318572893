package permissions

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/tool"
)

const (
	cwd  = "/home/u/project"
	home = "/home/u"
)

func TestResolve(t *testing.T) {
	tests := []struct {
		perm string
		want Grant
		str  string
		desc string
	}{
		{
			perm: "filesystem:read:.",
			want: Grant{Kind: KindMount, Mount: &Mount{HostPath: cwd, Target: cwd}},
			str:  "filesystem:read:/home/u/project",
			desc: "may read files under /home/u/project",
		},
		{
			perm: "filesystem:write:out/../build/",
			want: Grant{Kind: KindMount, Mount: &Mount{HostPath: cwd + "/build", Target: cwd + "/build", Write: true}},
			str:  "filesystem:write:/home/u/project/build",
			desc: "may read, create, change and delete files under /home/u/project/build",
		},
		{
			perm: "filesystem:read:~",
			want: Grant{Kind: KindMount, Mount: &Mount{HostPath: home, Target: home}},
			str:  "filesystem:read:/home/u",
		},
		{
			perm: "filesystem:read:~/.config/app",
			want: Grant{Kind: KindMount, Mount: &Mount{HostPath: home + "/.config/app", Target: home + "/.config/app"}},
			str:  "filesystem:read:/home/u/.config/app",
		},
		{
			perm: "filesystem:read:/etc//hosts",
			want: Grant{Kind: KindMount, Mount: &Mount{HostPath: "/etc/hosts", Target: "/etc/hosts"}},
			str:  "filesystem:read:/etc/hosts",
		},
		{
			perm: "network:external:API.GitHub.com",
			want: Grant{Kind: KindEgress, Egress: &Egress{Host: "api.github.com"}},
			str:  "network:external:api.github.com",
			desc: "may connect to api.github.com on ports 80 and 443",
		},
		{
			perm: "network:external:example.com.:8443",
			want: Grant{Kind: KindEgress, Egress: &Egress{Host: "example.com", Port: 8443}},
			str:  "network:external:example.com:8443",
			desc: "may connect to example.com on port 8443",
		},
		{
			perm: "network:external:*.example.com",
			want: Grant{Kind: KindEgress, Egress: &Egress{Host: "*.example.com", Wildcard: true}},
			str:  "network:external:*.example.com",
			desc: "may connect to any subdomain of example.com (not example.com itself) on ports 80 and 443",
		},
		{
			perm: "network:external:*",
			want: Grant{Kind: KindEgress, Egress: &Egress{Host: "*", Wildcard: true}},
			str:  "network:external:*",
			desc: "may connect to any public host by name (an IP address needs a grant of its own) on ports 80 and 443",
		},
		{
			perm: "network:external:[2001:db8::1]:443",
			want: Grant{Kind: KindEgress, Egress: &Egress{Host: "2001:db8::1", Port: 443}},
			str:  "network:external:[2001:db8::1]:443",
		},
		{
			perm: "network:external:https://Jira.Example.com/rest/api",
			want: Grant{Kind: KindEgress, Egress: &Egress{Host: "jira.example.com"}},
			str:  "network:external:jira.example.com",
		},
		{
			perm: "network:external:http://[2001:db8::2]:8080/",
			want: Grant{Kind: KindEgress, Egress: &Egress{Host: "2001:db8::2", Port: 8080}},
			str:  "network:external:[2001:db8::2]:8080",
		},
		{
			perm: "network:localhost:5432",
			want: Grant{Kind: KindLocalhost, Localhost: &Localhost{Port: 5432}},
			str:  "network:localhost:5432",
			desc: "may connect to the host's 127.0.0.1 port 5432 (a service on this machine)",
		},
		{
			perm: "env:GITHUB_TOKEN",
			want: Grant{Kind: KindEnv, Env: &Env{Name: "GITHUB_TOKEN"}},
			str:  "env:GITHUB_TOKEN",
			desc: "may read the host environment variable GITHUB_TOKEN",
		},
	}
	for _, tt := range tests {
		t.Run(tt.perm, func(t *testing.T) {
			gs, err := Resolve([]string{tt.perm}, cwd, home)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if len(gs) != 1 {
				t.Fatalf("got %d grants, want 1", len(gs))
			}
			tt.want.Permission = tt.perm
			if !reflect.DeepEqual(gs[0], tt.want) {
				t.Errorf("grant = %+v, want %+v", gs[0], tt.want)
			}
			if got := gs[0].String(); got != tt.str {
				t.Errorf("String() = %q, want %q", got, tt.str)
			}
			if tt.desc != "" {
				if got := gs[0].Describe(); got != tt.desc {
					t.Errorf("Describe() = %q, want %q", got, tt.desc)
				}
			}
			if gs[0].Mechanism() == "" {
				t.Error("Mechanism() is empty")
			}
			// The canonical string resolves to the same grant.
			again, err := Resolve([]string{gs[0].String()}, "/elsewhere", "/nowhere")
			if err != nil {
				t.Fatalf("Resolve(canonical): %v", err)
			}
			if again[0].String() != tt.str {
				t.Errorf("canonical form is not stable: %q -> %q", tt.str, again[0].String())
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		perm      string
		cwd, home string
		want      string // substring of the message
	}{
		{"filesystem:read:", cwd, home, "empty path"},
		{"filesystem:exec:/x", cwd, home, "unknown kind"},
		{"network:external:", cwd, home, "empty host"},
		{"network:external:*.", cwd, home, "empty host after"},
		{"network:external:a*b.com", cwd, home, "wildcard"},
		{"network:localhost:0", cwd, home, "1 to 65535"},
		{"network:localhost:{PORT}", cwd, home, "not a parameter"},
		{"env:1BAD", cwd, home, "environment variable name"},
		{"filesystem:read:{DIR}/x", cwd, home, "{DIR} was not substituted"},
		{"network:external:{HOST}.example.com", cwd, home, "{HOST} was not substituted"},
		{"filesystem:read:~other/x", cwd, home, "~user"},
		{"filesystem:read:~/x", cwd, "", "home directory is unknown"},
		{"filesystem:read:x", "relative", home, "not absolute"},
		{"network:external:https://user:pw@example.com", cwd, home, "not allowed in a host name"},
	}
	for _, tt := range tests {
		t.Run(tt.perm, func(t *testing.T) {
			_, err := Resolve([]string{"env:OK", tt.perm}, tt.cwd, tt.home)
			if err == nil {
				t.Fatal("Resolve succeeded, want an error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			var pe *PermissionError
			if !errors.As(err, &pe) || pe.Index != 1 || pe.Permission != tt.perm {
				t.Errorf("error %#v does not name permission 1 %q", err, tt.perm)
			}
			msg := err.Error()
			for _, s := range []string{tt.want, tool.PermissionGrammar, "required-permissions[1]"} {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not contain %q", msg, s)
				}
			}
		})
	}
}

func TestResolveDedup(t *testing.T) {
	gs, err := Resolve([]string{"filesystem:read:.", "filesystem:read:" + cwd, "env:A", "env:A", "filesystem:write:."}, cwd, home)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range gs {
		got = append(got, g.String())
	}
	want := []string{"filesystem:read:" + cwd, "env:A", "filesystem:write:" + cwd}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if gs[2].Index != 4 {
		t.Errorf("Index = %d, want 4", gs[2].Index)
	}
}

func TestDescribeResolved(t *testing.T) {
	g := Grant{Kind: KindMount, Mount: &Mount{HostPath: "/p/link", Resolved: "/home/u/.ssh", Target: "/p/link"}}
	want := "may read files under /p/link (which resolves to /home/u/.ssh)"
	if got := g.Describe(); got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
}

func TestEgressMatches(t *testing.T) {
	tests := []struct {
		host  string
		port  int
		grant Egress
		want  bool
	}{
		{"api.github.com", 443, Egress{Host: "api.github.com"}, true},
		{"API.GITHUB.COM.", 80, Egress{Host: "api.github.com"}, true},
		{"api.github.com", 8080, Egress{Host: "api.github.com"}, false},
		{"api.github.com", 8080, Egress{Host: "api.github.com", Port: 8080}, true},
		{"api.github.com", 443, Egress{Host: "api.github.com", Port: 8080}, false},
		{"github.com", 443, Egress{Host: "api.github.com"}, false},
		{"a.example.com", 443, Egress{Host: "*.example.com", Wildcard: true}, true},
		{"a.b.example.com", 443, Egress{Host: "*.example.com", Wildcard: true}, true},
		{"example.com", 443, Egress{Host: "*.example.com", Wildcard: true}, false},
		{"badexample.com", 443, Egress{Host: "*.example.com", Wildcard: true}, false},
		{"anything.org", 443, Egress{Host: "*", Wildcard: true}, true},
		{"anything.org", 22, Egress{Host: "*", Wildcard: true}, false},
	}
	for _, tt := range tests {
		if got := tt.grant.Matches(tt.host, tt.port); got != tt.want {
			t.Errorf("%+v.Matches(%q, %d) = %v, want %v", tt.grant, tt.host, tt.port, got, tt.want)
		}
	}
}
