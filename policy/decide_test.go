package policy

import (
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/tool"
)

const (
	home = "/home/u"
	cwd  = "/home/u/project"
)

// grants resolves permission strings; "PERM=>RESOLVED" sets Mount.Resolved.
func grants(t *testing.T, perms ...string) []permissions.Grant {
	t.Helper()
	var raw, resolved []string
	for _, p := range perms {
		perm, res, _ := strings.Cut(p, "=>")
		raw, resolved = append(raw, perm), append(resolved, res)
	}
	gs, err := permissions.Resolve(raw, cwd, home)
	if err != nil {
		t.Fatal(err)
	}
	for i := range gs {
		if gs[i].Kind == permissions.KindMount {
			if r := resolved[gs[i].Index]; r != "" {
				gs[i].Mount.Resolved = r
			} else {
				gs[i].Mount.Resolved = gs[i].Mount.HostPath
			}
		}
	}
	return gs
}

// baseRequest is a tool tagged read, from the user scope, asking for the
// process tier and nothing else.
func baseRequest() Request {
	return Request{
		Tool: "t", Version: "1.0", Tags: []string{"read"}, Scope: tool.ScopeUser,
		DefinitionPath: home + "/.config/sandboxed/tools/t.yaml",
		Isolation:      tool.IsolationProcess, Privilege: tool.PrivilegeSameAsUser,
		Cwd: cwd, Home: home,
	}
}

func item(d Decision, subject string) (Item, bool) {
	for _, it := range d.Items {
		if it.Subject == subject {
			return it, true
		}
	}
	return Item{}, false
}

func mutate(p *Policy, f func(*Policy)) *Policy { f(p); return p }

func TestDecideRules(t *testing.T) {
	tests := []struct {
		name    string
		policy  *Policy // nil: Default()
		perms   []string
		req     func(*Request)
		subject string
		verdict Verdict
		rule    string // substring of Item.Rule
		flag    string // Item.ApproveFlag
		reason  string // substring of Item.Reason
	}{
		// The tool's security tier.
		{name: "tagged read is auto-approved", subject: "tool", verdict: Allow, rule: "approval.auto-approve[0] tier:read_only"},
		{name: "tagged run is auto-approved", req: func(r *Request) { r.Tags = []string{"run"} }, subject: "tool", verdict: Allow, rule: "tier:execute"},
		{name: "untagged needs approval", req: func(r *Request) { r.Tags = nil }, subject: "tool", verdict: NeedsApproval,
			rule: "no security tag", flag: "tier:unknown"},
		{name: "only non-security tags is untagged", req: func(r *Request) { r.Tags = []string{"weather", "api"} }, subject: "tool",
			verdict: NeedsApproval, flag: "tier:unknown"},
		{name: "security tags are case-insensitive", req: func(r *Request) { r.Tags = []string{"READ"} }, subject: "tool", verdict: Allow},
		{name: "auto-deny wins over auto-approve", policy: mutate(Default(), func(p *Policy) { p.Approval.AutoDeny = []Matcher{"tool:deploy"} }),
			req: func(r *Request) { r.Tags = []string{"read", "deploy"} }, subject: "tool", verdict: Deny, rule: "approval.auto-deny[0] tool:deploy"},
		{name: "tier not auto-approved needs approval", policy: mutate(Default(), func(p *Policy) { p.Approval.AutoApprove = []Matcher{"tool:read"} }),
			perms: []string{"filesystem:write:out"}, subject: "tool", verdict: Allow, rule: "approval.auto-approve[0] tool:read"},
		{name: "write grant raises the tier", policy: mutate(Default(), func(p *Policy) { p.Approval.AutoApprove = []Matcher{"tier:read_only"} }),
			perms: []string{"filesystem:write:out"}, subject: "tool", verdict: NeedsApproval, flag: "tier:write", rule: "not matched"},
		{name: "name matcher", policy: mutate(Default(), func(p *Policy) { p.Approval.AutoApprove = []Matcher{"name:t"} }),
			req: func(r *Request) { r.Tags = nil }, subject: "tool", verdict: Allow, rule: "approval.auto-approve[0] name:t"},

		// Isolation.
		{name: "process is allowed", subject: "isolation", verdict: Allow, rule: "sources[0].isolation.allowed"},
		{name: "empty isolation is process", req: func(r *Request) { r.Isolation = "" }, subject: "isolation", verdict: Allow, reason: "process"},
		{name: "container is allowed", req: func(r *Request) { r.Isolation = tool.IsolationContainer }, subject: "isolation", verdict: Allow},
		{name: "none from a trusted source needs approval", req: func(r *Request) { r.Isolation = tool.IsolationNone }, subject: "isolation",
			verdict: NeedsApproval, flag: "isolation-none", rule: "isolation none needs approval"},
		{name: "none from a path is raised to process", req: func(r *Request) { r.Isolation = tool.IsolationNone; r.Scope = tool.ScopePath },
			subject: "isolation", verdict: Allow, rule: "sources[3].isolation.minimum process", reason: "requested none, runs in process"},
		{name: "none from an unknown source is raised", req: func(r *Request) { r.Isolation = tool.IsolationNone; r.Scope = "" },
			subject: "isolation", verdict: Allow, rule: "sources[4].isolation.minimum process"},
		{name: "a tier not allowed is raised",
			policy:  mutate(Default(), func(p *Policy) { p.Sources[0].Isolation.Allowed = []tool.Isolation{tool.IsolationContainer} }),
			subject: "isolation", verdict: Allow, rule: "sources[0].isolation.allowed", reason: "runs in container"},
		{name: "no allowed tier at or above the request is a denial",
			policy: mutate(Default(), func(p *Policy) { p.Sources[0].Isolation.Allowed = []tool.Isolation{tool.IsolationProcess} }),
			req:    func(r *Request) { r.Isolation = tool.IsolationContainer }, subject: "isolation", verdict: Deny, rule: "sources[0].isolation.allowed"},
		{name: "unknown isolation is denied", req: func(r *Request) { r.Isolation = "vm" }, subject: "isolation", verdict: Deny, rule: "unknown isolation"},
		{name: "path glob source rule",
			policy: mutate(Default(), func(p *Policy) {
				p.Sources = append([]SourceRule{{Path: "~/tools/**", Trusted: true, Isolation: IsolationRule{
					Allowed: []tool.Isolation{tool.IsolationNone, tool.IsolationProcess}, Minimum: tool.IsolationNone}}}, p.Sources...)
			}),
			req: func(r *Request) {
				r.Scope, r.DefinitionPath, r.Isolation = tool.ScopePath, home+"/tools/a/b.yaml", tool.IsolationNone
			},
			subject: "isolation", verdict: NeedsApproval, flag: "isolation-none"},
		{name: "no source rule matches: built-in untrusted",
			policy:  mutate(Default(), func(p *Policy) { p.Sources = p.Sources[:1] }),
			req:     func(r *Request) { r.Scope = tool.ScopeLocal; r.Isolation = tool.IsolationNone },
			subject: "isolation", verdict: Allow, rule: "built-in untrusted source.minimum process"},

		// Execution privilege.
		{name: "same-as-user is allowed", subject: "execution-privilege", verdict: Allow},
		{name: "reduced is allowed", req: func(r *Request) { r.Privilege = tool.PrivilegeReduced }, subject: "execution-privilege", verdict: Allow},
		{name: "elevated needs approval", req: func(r *Request) { r.Privilege = tool.PrivilegeElevated }, subject: "execution-privilege",
			verdict: NeedsApproval, flag: "elevated", rule: "elevated needs approval"},
		{name: "elevated without a sandbox is denied", req: func(r *Request) { r.Privilege = tool.PrivilegeElevated; r.Isolation = tool.IsolationNone },
			subject: "execution-privilege", verdict: Deny, rule: "isolation none is denied"},
		{name: "unknown privilege is denied", req: func(r *Request) { r.Privilege = "root" }, subject: "execution-privilege", verdict: Deny},

		// environment.inherit.
		{name: "inherit needs approval", req: func(r *Request) { r.InheritEnv = true }, subject: "environment.inherit",
			verdict: NeedsApproval, flag: "env-inherit"},

		// Filesystem.
		{name: "read of the working directory", perms: []string{"filesystem:read:."}, subject: "filesystem:read:" + cwd,
			verdict: Allow, rule: "default: reads are allowed", reason: "inside the working directory"},
		{name: "read outside the working directory", perms: []string{"filesystem:read:/usr/share/dict"}, subject: "filesystem:read:/usr/share/dict",
			verdict: Allow, reason: "outside the working directory"},
		{name: "read ~/.ssh", perms: []string{"filesystem:read:~/.ssh"}, subject: "filesystem:read:/home/u/.ssh",
			verdict: Deny, rule: "paths.deny[0] ~/.ssh"},
		{name: "read a key under ~/.ssh", perms: []string{"filesystem:read:~/.ssh/id_ed25519"}, subject: "filesystem:read:/home/u/.ssh/id_ed25519",
			verdict: Deny, rule: "paths.deny[0] ~/.ssh"},
		{name: "symlink into ~/.ssh", perms: []string{"filesystem:read:keys=>/home/u/.ssh/id_rsa"}, subject: "filesystem:read:/home/u/project/keys",
			verdict: Deny, rule: "paths.deny[0] ~/.ssh", reason: "/home/u/project/keys resolves to /home/u/.ssh/id_rsa"},
		{name: "write the docker socket", perms: []string{"filesystem:write:/var/run/docker.sock"}, subject: "filesystem:write:/var/run/docker.sock",
			verdict: Deny, rule: "/var/run/docker.sock"},
		{name: "read /run/docker.sock", perms: []string{"filesystem:read:/run/docker.sock"}, subject: "filesystem:read:/run/docker.sock",
			verdict: Deny, rule: "/run/docker.sock"},
		{name: "symlink to the docker socket", perms: []string{"filesystem:read:/tmp/s=>/run/docker.sock"}, subject: "filesystem:read:/tmp/s",
			verdict: Deny, rule: "/run/docker.sock"},
		{name: "write ~/.bashrc", perms: []string{"filesystem:write:~/.bashrc"}, subject: "filesystem:write:/home/u/.bashrc",
			verdict: Deny, rule: "~/.bashrc"},
		{name: "read fish config", perms: []string{"filesystem:read:~/.config/fish/config.fish"}, subject: "filesystem:read:/home/u/.config/fish/config.fish",
			verdict: Deny, rule: "~/.config/fish"},
		{name: "read /etc/shadow", perms: []string{"filesystem:read:/etc/shadow"}, subject: "filesystem:read:/etc/shadow", verdict: Deny, rule: "/etc"},
		{name: "write .git/hooks", perms: []string{"filesystem:write:.git/hooks"}, subject: "filesystem:write:/home/u/project/.git/hooks",
			verdict: Deny, rule: "paths.deny-write[0] **/.git/hooks"},
		{name: "write a nested .git/config", perms: []string{"filesystem:write:/srv/x/.git/config"}, subject: "filesystem:write:/srv/x/.git/config",
			verdict: Deny, rule: "paths.deny-write[1] **/.git/config"},
		{name: "write a submodule's hooks", perms: []string{"filesystem:write:.git/modules/lib/hooks"}, subject: "filesystem:write:/home/u/project/.git/modules/lib/hooks",
			verdict: Deny, rule: "paths.deny-write[7] **/.git/modules/**/hooks"},
		{name: "read .git/config", perms: []string{"filesystem:read:.git/config"}, subject: "filesystem:read:/home/u/project/.git/config", verdict: Allow},
		{name: "write the working directory", perms: []string{"filesystem:write:."}, subject: "filesystem:write:" + cwd,
			verdict: Allow, rule: "writes inside the working directory are allowed"},
		{name: "read of home holds denied paths", perms: []string{"filesystem:read:~"}, subject: "filesystem:read:/home/u",
			verdict: NeedsApproval, rule: "paths.deny[0] ~/.ssh (inside the granted path)", flag: "filesystem:read:/home/u"},
		{name: "read of / holds denied paths", perms: []string{"filesystem:read:/"}, subject: "filesystem:read:/",
			verdict: NeedsApproval, flag: "filesystem:read:/"},
		{name: "read of /var/run: sockets are connectable through a read-only bind", perms: []string{"filesystem:read:/var/run"}, subject: "filesystem:read:/var/run",
			verdict: Deny, rule: "paths.deny[27] /var/run"},
		{name: "read of /run/user: the session bus", perms: []string{"filesystem:read:/run/user/1000"}, subject: "filesystem:read:/run/user/1000",
			verdict: Deny, rule: "paths.deny[26] /run"},
		{name: "read of another home's keys", perms: []string{"filesystem:read:/home/alice/.ssh"}, subject: "filesystem:read:/home/alice/.ssh",
			verdict: Deny, rule: "/home/*/.ssh"},
		{name: "read of the X socket dir", perms: []string{"filesystem:read:/tmp/.X11-unix"}, subject: "filesystem:read:/tmp/.X11-unix",
			verdict: Deny, rule: "/tmp/.X11-unix"},
		{name: "write outside the working directory", perms: []string{"filesystem:write:/tmp/out"}, subject: "filesystem:write:/tmp/out",
			verdict: NeedsApproval, rule: "writes outside the working directory need approval", flag: "filesystem:write:/tmp/out"},
		{name: "write through a symlink out of the working directory", perms: []string{"filesystem:write:out=>/srv/data"},
			subject: "filesystem:write:/home/u/project/out", verdict: NeedsApproval, reason: "resolved /srv/data",
			flag: "filesystem:write:/home/u/project/out"},
		{name: "write under a resolved working directory",
			perms: []string{"filesystem:write:out=>/data/project/out"}, req: func(r *Request) { r.CwdResolved = "/data/project" },
			subject: "filesystem:write:/home/u/project/out", verdict: Allow},
		{name: "allow-write", policy: mutate(Default(), func(p *Policy) { p.Paths.AllowWrite = []PathPattern{"/tmp"} }),
			perms: []string{"filesystem:write:/tmp/out"}, subject: "filesystem:write:/tmp/out", verdict: Allow, rule: "paths.allow-write[0] /tmp"},
		{name: "approve rule", policy: mutate(Default(), func(p *Policy) { p.Paths.Approve = []PathPattern{"~/Documents"} }),
			perms: []string{"filesystem:read:~/Documents/a"}, subject: "filesystem:read:/home/u/Documents/a",
			verdict: NeedsApproval, rule: "paths.approve[0] ~/Documents", flag: "filesystem:read:/home/u/Documents/a"},
		{name: "glob deny rule", policy: mutate(Default(), func(p *Policy) { p.Paths.Deny = []PathPattern{"**/.env"} }),
			perms: []string{"filesystem:read:.env"}, subject: "filesystem:read:/home/u/project/.env", verdict: Deny, rule: "paths.deny[0] **/.env"},
		{name: "deny wins over allow-write", policy: mutate(Default(), func(p *Policy) { p.Paths.AllowWrite = []PathPattern{"/"} }),
			perms: []string{"filesystem:write:/etc/cron.d"}, subject: "filesystem:write:/etc/cron.d", verdict: Deny, rule: "/etc"},

		{name: "working directory / does not count", perms: []string{"filesystem:write:/usr/local"}, req: func(r *Request) { r.Cwd = "/" },
			subject: "filesystem:write:/usr/local", verdict: NeedsApproval, flag: "filesystem:write:/usr/local", reason: "is / or holds the home directory"},
		{name: "working directory ~ does not count", perms: []string{"filesystem:write:notes"}, req: func(r *Request) { r.Cwd = home },
			subject: "filesystem:write:/home/u/project/notes", verdict: NeedsApproval, reason: "holds the home directory",
			flag: "filesystem:write:/home/u/project/notes"},
		{name: "resolved home matches ~ rules", perms: []string{"filesystem:read:/tmp/k=>/data/home/u/.ssh/id_rsa"},
			req: func(r *Request) { r.HomeResolved = "/data/home/u" }, subject: "filesystem:read:/tmp/k", verdict: Deny, rule: "paths.deny[0] ~/.ssh"},

		{name: "unknown home directory fails closed", perms: []string{"filesystem:read:/srv/x"}, req: func(r *Request) { r.Home = "" },
			subject: "home directory", verdict: Deny, rule: "need a known home directory"},

		// Network.
		{name: "loopback by external grant", perms: []string{"network:external:127.0.0.1:8080"}, subject: "network:external:127.0.0.1:8080",
			verdict: Deny, rule: "cannot reach this machine"},
		{name: "private network by external grant", perms: []string{"network:external:10.1.2.3"}, subject: "network:external:10.1.2.3", verdict: Deny},
		{name: "localhost name by external grant", perms: []string{"network:external:localhost"}, subject: "network:external:localhost", verdict: Deny},
		{name: "documentation range is public", perms: []string{"network:external:192.0.2.10"}, subject: "network:external:192.0.2.10", verdict: Allow},
		{name: "named host from a trusted source", perms: []string{"network:external:api.github.com"},
			subject: "network:external:api.github.com", verdict: Allow, rule: "allowed for trusted sources"},
		{name: "named host from a path", perms: []string{"network:external:api.github.com"}, req: func(r *Request) { r.Scope = tool.ScopePath },
			subject: "network:external:api.github.com", verdict: NeedsApproval, rule: "untrusted source", flag: "network:external:api.github.com"},
		{name: "any host", perms: []string{"network:external:*"}, subject: "network:external:*", verdict: NeedsApproval,
			rule: "any host (*) needs approval", flag: "network:external:*"},
		// What the proxy always refuses is denied with that reason, before
		// the policy's own deny list (whose fix would not help).
		{name: "metadata host is denied", perms: []string{"network:external:169.254.169.254"}, subject: "network:external:169.254.169.254",
			verdict: Deny, rule: "cloud metadata service"},
		{name: "metadata name is denied", perms: []string{"network:external:metadata.google.internal"}, subject: "network:external:metadata.google.internal",
			verdict: Deny, rule: "cloud metadata service"},
		{name: "a reserved address is denied", perms: []string{"network:external:0.1.2.3"}, subject: "network:external:0.1.2.3",
			verdict: Deny, rule: "reserved network"},
		{name: "network.allow covers an untrusted source", policy: mutate(Default(), func(p *Policy) { p.Network.Allow = []HostPattern{"*.example.com"} }),
			perms: []string{"network:external:api.example.com:8443"}, req: func(r *Request) { r.Scope = tool.ScopePath },
			subject: "network:external:api.example.com:8443", verdict: Allow, rule: "network.allow[0] *.example.com"},
		{name: "deny wildcard covers a narrower wildcard", policy: mutate(Default(), func(p *Policy) { p.Network.Deny = []HostPattern{"*.evil.com"} }),
			perms: []string{"network:external:*.a.evil.com"}, subject: "network:external:*.a.evil.com", verdict: Deny, rule: "network.deny[0] *.evil.com"},
		{name: "localhost needs approval", perms: []string{"network:localhost:5432"}, subject: "network:localhost:5432",
			verdict: NeedsApproval, flag: "network:localhost:5432"},
		{name: "localhost-allow", policy: mutate(Default(), func(p *Policy) { p.Network.LocalhostAllow = []int{5432} }),
			perms: []string{"network:localhost:5432"}, subject: "network:localhost:5432", verdict: Allow, rule: "network.localhost-allow"},

		// Environment grants.
		{name: "plain env grant", perms: []string{"env:LANGUAGE"}, subject: "env:LANGUAGE", verdict: Allow},
		{name: "secret env from a trusted source", perms: []string{"env:GITHUB_TOKEN"}, subject: "env:GITHUB_TOKEN", verdict: Allow, rule: "trusted"},
		{name: "secret env from a path", perms: []string{"env:GITHUB_TOKEN"}, req: func(r *Request) { r.Scope = tool.ScopePath },
			subject: "env:GITHUB_TOKEN", verdict: NeedsApproval, flag: "env:GITHUB_TOKEN"},
		{name: "denied env", perms: []string{"env:SSH_AUTH_SOCK"}, subject: "env:SSH_AUTH_SOCK", verdict: Deny, rule: "environment.deny[3] SSH_AUTH_SOCK"},

		// Limits.
		{name: "memory above the cap is clamped", req: func(r *Request) { r.Memory = 64 * gib }, subject: "limits.memory",
			verdict: Allow, rule: "limits.memory.max", reason: "requested 64GiB, clamped to the cap 8GiB"},
		{name: "timeout above the cap is clamped", req: func(r *Request) { r.Timeout = 48 * time.Hour }, subject: "limits.timeout",
			verdict: Allow, reason: "requested 2d, clamped to the cap 1h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.policy
			if p == nil {
				p = Default()
			}
			req := baseRequest()
			req.Grants = grants(t, tt.perms...)
			if tt.req != nil {
				tt.req(&req)
			}
			d := p.Decide(req)
			it, ok := item(d, tt.subject)
			if !ok {
				t.Fatalf("no item %q in %+v", tt.subject, d.Items)
			}
			if it.Verdict != tt.verdict {
				t.Errorf("verdict = %s, want %s (%+v)", it.Verdict, tt.verdict, it)
			}
			if !strings.Contains(it.Rule, tt.rule) {
				t.Errorf("rule = %q, want it to contain %q", it.Rule, tt.rule)
			}
			if it.ApproveFlag != tt.flag {
				t.Errorf("approve flag = %q, want %q", it.ApproveFlag, tt.flag)
			}
			if !strings.Contains(it.Reason, tt.reason) {
				t.Errorf("reason = %q, want it to contain %q", it.Reason, tt.reason)
			}
			if it.Risk == "" || it.Description == "" || it.Rule == "" || it.Reason == "" {
				t.Errorf("item is missing a risk, description, rule or reason: %+v", it)
			}
			if it.Verdict == NeedsApproval && it.PolicyFix == "" {
				t.Errorf("approval item has no policy fix: %+v", it)
			}
			// The overall verdict follows the items.
			want := Allow
			for _, it := range d.Items {
				if it.Verdict == Deny {
					want = Deny
				} else if it.Verdict == NeedsApproval && want == Allow {
					want = NeedsApproval
				}
			}
			if d.Verdict != want {
				t.Errorf("overall verdict = %s, want %s", d.Verdict, want)
			}
		})
	}
}

// TestDefaultPolicy is the promise of the built-in policy: it refuses or
// asks approval for what could hurt the host, and lets the ordinary run go.
func TestDefaultPolicy(t *testing.T) {
	p := Default()
	tests := []struct {
		name  string
		perms []string
		req   func(*Request)
		want  Verdict
	}{
		{"read of the working directory", []string{"filesystem:read:."}, nil, Allow},
		{"write of the working directory", []string{"filesystem:write:."}, nil, Allow},
		{"untrusted read of the working directory", []string{"filesystem:read:."}, func(r *Request) { r.Scope = tool.ScopePath }, Allow},
		{"elevated", nil, func(r *Request) { r.Privilege = tool.PrivilegeElevated }, NeedsApproval},
		{"isolation none", nil, func(r *Request) { r.Isolation = tool.IsolationNone }, NeedsApproval},
		{"docker.sock", []string{"filesystem:write:/var/run/docker.sock"}, nil, Deny},
		{"~/.ssh", []string{"filesystem:read:~/.ssh"}, nil, Deny},
		{"symlink into ~/.ssh", []string{"filesystem:read:link=>/home/u/.ssh"}, nil, Deny},
		{"* egress", []string{"network:external:*"}, nil, NeedsApproval},
		{"env inherit", nil, func(r *Request) { r.InheritEnv = true }, NeedsApproval},
		{"untagged tool", nil, func(r *Request) { r.Tags = nil }, NeedsApproval},
		{"write of home", []string{"filesystem:write:~"}, nil, NeedsApproval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := baseRequest()
			req.Grants = grants(t, tt.perms...)
			if tt.req != nil {
				tt.req(&req)
			}
			d := p.Decide(req)
			if d.Verdict != tt.want {
				t.Errorf("verdict = %s, want %s\n%s", d.Verdict, tt.want, d.Hint())
			}
			if tt.want == Allow && d.Hint() != "" {
				t.Errorf("allowed decision has a hint: %q", d.Hint())
			}
		})
	}
}

func TestApprovals(t *testing.T) {
	risky := func() Request {
		r := baseRequest()
		r.Tags = nil
		r.Privilege = tool.PrivilegeElevated
		r.InheritEnv = true
		r.Isolation = tool.IsolationNone
		return r
	}
	t.Run("missing approvals and hint", func(t *testing.T) {
		r := risky()
		r.Isolation = tool.IsolationProcess
		r.Grants = grants(t, "filesystem:write:/tmp/out dir", "network:external:*")
		d := Default().Decide(r)
		want := []string{"tier:unknown", "elevated", "env-inherit", "filesystem:write:/tmp/out dir", "network:external:*"}
		if got := d.MissingApprovals(); !reflect.DeepEqual(got, want) {
			t.Errorf("MissingApprovals = %q, want %q", got, want)
		}
		h := d.Hint()
		for _, s := range []string{
			"--approve tier:unknown --approve elevated --approve env-inherit --approve 'filesystem:write:/tmp/out dir' --approve 'network:external:*'",
			"approval.auto-approve: [tier:unknown]", "paths.allow-write: [/tmp/out dir]", "approval.standing: [elevated]",
		} {
			if !strings.Contains(h, s) {
				t.Errorf("hint does not contain %q:\n%s", s, h)
			}
		}
		r.Approvals = want
		if d := Default().Decide(r); d.Verdict != Allow {
			t.Errorf("with the missing approvals, verdict = %s\n%s", d.Verdict, d.Hint())
		}
	})
	t.Run("all approves everything but a denial", func(t *testing.T) {
		r := risky()
		r.Grants = grants(t, "filesystem:write:/tmp/out", "network:external:*", "network:localhost:22")
		r.Approvals = []string{"all"}
		r.Privilege = tool.PrivilegeSameAsUser
		d := Default().Decide(r)
		if d.Verdict != Allow {
			t.Fatalf("verdict = %s\n%s", d.Verdict, d.Hint())
		}
		for _, it := range d.Items {
			if it.ApproveFlag != "" && it.ApprovedBy != "--approve all" {
				t.Errorf("%s approved by %q", it.Subject, it.ApprovedBy)
			}
		}
		r.Grants = grants(t, "filesystem:read:~/.ssh")
		if d := Default().Decide(r); d.Verdict != Deny {
			t.Errorf("--approve all overrode a denial: %s", d.Verdict)
		}
		r.Grants = nil
		r.Privilege = tool.PrivilegeElevated // with isolation none: denied
		if d := Default().Decide(r); d.Verdict != Deny {
			t.Errorf("--approve all allowed elevated without a sandbox: %s", d.Verdict)
		}
	})
	t.Run("a path approval covers paths under it", func(t *testing.T) {
		r := baseRequest()
		r.Grants = grants(t, "filesystem:write:/tmp/a/b", "filesystem:write:/srv/x")
		r.Approvals = []string{"filesystem:write:/tmp"}
		d := Default().Decide(r)
		if it, _ := item(d, "filesystem:write:/tmp/a/b"); it.Verdict != Allow || it.ApprovedBy != "--approve filesystem:write:/tmp" {
			t.Errorf("/tmp/a/b: %+v", it)
		}
		if it, _ := item(d, "filesystem:write:/srv/x"); it.Verdict != NeedsApproval {
			t.Errorf("/srv/x: %+v", it)
		}
		// Read approval does not cover a write; relative approvals resolve
		// against the working directory.
		r.Grants = grants(t, "filesystem:write:../other")
		r.Approvals = []string{"filesystem:read:/home/u/other"}
		if d := Default().Decide(r); d.Verdict != NeedsApproval {
			t.Errorf("a read approval allowed a write")
		}
		r.Approvals = []string{"filesystem:write:../other"}
		if d := Default().Decide(r); d.Verdict != Allow {
			t.Errorf("relative approval: %s", d.Verdict)
		}
	})
	t.Run("standing approvals", func(t *testing.T) {
		p := Default()
		p.Approval.Standing = []Approval{"elevated"}
		r := baseRequest()
		r.Privilege = tool.PrivilegeElevated
		d := p.Decide(r)
		it, _ := item(d, "execution-privilege")
		if d.Verdict != Allow || it.ApprovedBy != "approval.standing[0] elevated" {
			t.Errorf("standing approval: %s %+v", d.Verdict, it)
		}
	})
	t.Run("unknown and unused approvals are noted", func(t *testing.T) {
		r := baseRequest()
		r.Approvals = []string{"sudo", "elevated"}
		d := Default().Decide(r)
		notes := strings.Join(d.Notes, "\n")
		if !strings.Contains(notes, `ignored --approve sudo`) || !strings.Contains(notes, "--approve elevated matched nothing") {
			t.Errorf("notes = %q", d.Notes)
		}
	})
}

func TestDenyHint(t *testing.T) {
	r := baseRequest()
	r.Grants = grants(t, "filesystem:read:~/.aws/credentials")
	d := Default().Decide(r)
	h := d.Hint()
	for _, s := range []string{"denied by the built-in policy", "filesystem:read:/home/u/.aws/credentials", "paths.deny[1] ~/.aws",
		"approvals cannot override a denial"} {
		if !strings.Contains(h, s) {
			t.Errorf("hint does not contain %q:\n%s", s, h)
		}
	}
	if len(d.MissingApprovals()) != 0 {
		t.Errorf("MissingApprovals = %q", d.MissingApprovals())
	}
}

func TestDecideIsolationNotes(t *testing.T) {
	r := baseRequest()
	r.Scope = tool.ScopePath
	r.Isolation = tool.IsolationNone
	d := Default().Decide(r)
	if d.Isolation != tool.IsolationProcess {
		t.Errorf("isolation = %s, want process", d.Isolation)
	}
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "isolation raised from none to process") {
		t.Errorf("notes = %q", d.Notes)
	}
	// The raise is a field too, for what acts on it (a failed run's hint).
	if d.RaisedFrom != tool.IsolationNone || len(d.Notes) != 1 || d.RaiseNote != d.Notes[0] {
		t.Errorf("raised from %q (%q), want none and the note", d.RaisedFrom, d.RaiseNote)
	}
	r.Isolation = tool.IsolationContainer
	if d := Default().Decide(r); d.RaisedFrom != "" || d.RaiseNote != "" {
		t.Errorf("not raised, yet raised from %q (%q)", d.RaisedFrom, d.RaiseNote)
	}
	r.Isolation = tool.IsolationNone
	if d.Source.Trusted || d.Source.Rule != "sources[3]" {
		t.Errorf("source = %+v", d.Source)
	}
	// Approvals never lower the minimum.
	r.Approvals = []string{"isolation-none"}
	if d := Default().Decide(r); d.Isolation != tool.IsolationProcess {
		t.Errorf("--approve isolation-none lowered the minimum: %s", d.Isolation)
	}
}

func TestDecideMasks(t *testing.T) {
	r := baseRequest()
	r.Grants = grants(t, "filesystem:write:.", "filesystem:read:~")
	r.Approvals = []string{"filesystem:read:~"}
	d := Default().Decide(r)
	if d.Verdict != Allow {
		t.Fatalf("verdict = %s\n%s", d.Verdict, d.Hint())
	}
	has := func(m PathMask) bool { return slices.Contains(d.Masks, m) }
	for _, m := range []PathMask{
		{Path: cwd + "/**/.git/hooks", Under: cwd, Hide: false, Rule: "paths.deny-write[0] **/.git/hooks"},
		{Path: cwd + "/**/.git/config", Under: cwd, Hide: false, Rule: "paths.deny-write[1] **/.git/config"},
		{Path: home + "/.ssh", Under: home, Hide: true, Rule: "paths.deny[0] ~/.ssh"},
		{Path: home + "/.bashrc", Under: home, Hide: true, Rule: "paths.deny[12] ~/.bashrc"},
	} {
		if !has(m) {
			t.Errorf("no mask %+v in %+v", m, d.Masks)
		}
	}
	for _, m := range d.Masks {
		if m.Under == home && !m.Hide {
			t.Errorf("read grant got a read-only mask: %+v", m)
		}
		if strings.HasPrefix(m.Path, "/etc") {
			t.Errorf("mask outside its mount: %+v", m)
		}
	}
	// A mount whose resolved path holds a denied path is masked in the
	// sandbox's coordinates.
	r.Grants = grants(t, "filesystem:read:/data/h=>/home/u")
	r.Approvals = []string{"all"}
	d = Default().Decide(r)
	if !slices.Contains(d.Masks, PathMask{Path: "/data/h/.ssh", Under: "/data/h", Hide: true, Rule: "paths.deny[0] ~/.ssh"}) {
		t.Errorf("masks = %+v", d.Masks)
	}
	if len(d.EgressDeny) != 3 {
		t.Errorf("egress deny = %q", d.EgressDeny)
	}
}

func TestIsolationNoneNote(t *testing.T) {
	r := baseRequest()
	r.Isolation = tool.IsolationNone
	r.Approvals = []string{"isolation-none"}
	d := Default().Decide(r)
	if d.Verdict != Allow || d.Isolation != tool.IsolationNone || len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "not enforced") {
		t.Errorf("decision = %s %s %q", d.Verdict, d.Isolation, d.Notes)
	}
}

func TestEffectiveJSON(t *testing.T) {
	e := Effective{MemoryBytes: 1, Timeout: 1500 * time.Millisecond, Pids: 2, OutputBytes: 3, CPUs: 0.5, TmpfsBytes: 4}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"memory_bytes":1,"timeout_ms":1500,"pids":2,"output_bytes":3,"cpus":0.5,"tmpfs_bytes":4}` {
		t.Errorf("JSON = %s", b)
	}
	var back Effective
	if err := json.Unmarshal(b, &back); err != nil || back != e {
		t.Errorf("round trip = %+v, %v", back, err)
	}
}

func TestDecideLimits(t *testing.T) {
	defaults := Effective{MemoryBytes: 512 * mib, Timeout: 5 * time.Minute, Pids: 256, OutputBytes: 10 * mib, TmpfsBytes: 64 * mib}
	with := func(f func(*Effective)) Effective { e := defaults; f(&e); return e }
	cpus := func(def, max CPUs) *Policy {
		return mutate(Default(), func(p *Policy) { p.Limits.CPUs = CPULimit{Default: def, Max: max} })
	}
	type clamp struct{ subject, description, reason, fix string }
	tests := []struct {
		name   string
		policy *Policy
		req    func(*Request)
		want   Effective
		clamps []clamp
	}{
		{name: "nothing asked: the defaults, no CPU quota", want: defaults},
		{name: "asked within the caps", req: func(r *Request) {
			r.Memory, r.Timeout, r.Pids, r.Output, r.CPUs, r.Tmpfs = 1*gib, time.Minute, 1000, 20*mib, 2.5, 256*mib
		}, want: Effective{MemoryBytes: 1 * gib, Timeout: time.Minute, Pids: 1000, OutputBytes: 20 * mib, CPUs: 2.5, TmpfsBytes: 256 * mib}},
		{name: "asked below the defaults", req: func(r *Request) { r.Pids, r.Tmpfs = 16, 16*mib },
			want: with(func(e *Effective) { e.Pids, e.TmpfsBytes = 16, 16*mib })},
		{name: "asked above the caps: clamped, and said so", req: func(r *Request) {
			r.Memory, r.Timeout, r.Pids, r.Output, r.Tmpfs = 64*gib, 48*time.Hour, 5000, 200*mib, 2*gib
		}, want: Effective{MemoryBytes: 8 * gib, Timeout: time.Hour, Pids: 4096, OutputBytes: 100 * mib, TmpfsBytes: 1 * gib},
			clamps: []clamp{
				{"limits.memory", "may use 8GiB of memory", "requested 64GiB, clamped to the cap 8GiB", "limits.memory.max: 64GiB"},
				{"limits.timeout", "may use 1h0m0s of timeout", "requested 2d, clamped to the cap 1h0m0s", "limits.timeout.max: 2d"},
				{"limits.pids", "may use 4096 of pids", "requested 5000, clamped to the cap 4096", "limits.pids.max: 5000"},
				{"limits.output", "may use 100MiB of output", "requested 200MiB, clamped to the cap 100MiB", "limits.output.max: 200MiB"},
				{"limits.tmpfs", "may use 1GiB of tmpfs", "requested 2GiB, clamped to the cap 1GiB", "limits.tmpfs.max: 2GiB"},
			}},
		{name: "a tmpfs cap of 0 is none", policy: mutate(Default(), func(p *Policy) { p.Limits.Tmpfs.Max = 0 }),
			req: func(r *Request) { r.Tmpfs = 4 * gib }, want: with(func(e *Effective) { e.TmpfsBytes = 4 * gib })},
		{name: "a lower tmpfs default", policy: mutate(Default(), func(p *Policy) { p.Limits.Tmpfs.Default = 8 * mib }),
			want: with(func(e *Effective) { e.TmpfsBytes = 8 * mib })},
		{name: "cpus asked with no cap", req: func(r *Request) { r.CPUs = 512 }, want: with(func(e *Effective) { e.CPUs = 512 })},
		{name: "cpus: the policy's default", policy: cpus(1, 0), want: with(func(e *Effective) { e.CPUs = 1 })},
		{name: "cpus: the default under a cap", policy: cpus(1, 4), want: with(func(e *Effective) { e.CPUs = 1 })},
		{name: "cpus: no default under a cap is the cap", policy: cpus(0, 2), want: with(func(e *Effective) { e.CPUs = 2 })},
		{name: "cpus asked below the cap", policy: cpus(0, 2), req: func(r *Request) { r.CPUs = 0.5 },
			want: with(func(e *Effective) { e.CPUs = 0.5 })},
		{name: "cpus asked at the cap", policy: cpus(1, 2), req: func(r *Request) { r.CPUs = 2 },
			want: with(func(e *Effective) { e.CPUs = 2 })},
		{name: "cpus asked above the cap: clamped, and said so", policy: cpus(0, 2), req: func(r *Request) { r.CPUs = 8.5 },
			want:   with(func(e *Effective) { e.CPUs = 2 }),
			clamps: []clamp{{"limits.cpus", "may use 2 CPUs' worth of time", "requested 8.5, clamped to the cap 2", "limits.cpus.max: 8.5"}}},
		{name: "reduced privilege: a lower pids default", req: func(r *Request) { r.Privilege = tool.PrivilegeReduced },
			want: with(func(e *Effective) { e.Pids = ReducedPids })},
		{name: "reduced privilege under a lower default keeps it", policy: mutate(Default(), func(p *Policy) { p.Limits.Pids.Default = 32 }),
			req: func(r *Request) { r.Privilege = tool.PrivilegeReduced }, want: with(func(e *Effective) { e.Pids = 32 })},
		{name: "reduced privilege may ask for more pids", req: func(r *Request) { r.Privilege, r.Pids = tool.PrivilegeReduced, 200 },
			want: with(func(e *Effective) { e.Pids = 200 })},
		{name: "reduced privilege's default within a lower cap", policy: mutate(Default(), func(p *Policy) { p.Limits.Pids.Max = 40 }),
			req: func(r *Request) { r.Privilege = tool.PrivilegeReduced }, want: with(func(e *Effective) { e.Pids = 40 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.policy
			if p == nil {
				p = Default()
			}
			r := baseRequest()
			if tt.req != nil {
				tt.req(&r)
			}
			d := p.Decide(r)
			if d.Limits != tt.want {
				t.Errorf("limits = %+v, want %+v", d.Limits, tt.want)
			}
			if d.Verdict != Allow {
				t.Errorf("verdict %s, want allow: a limit never refuses a run", d.Verdict)
			}
			var got []clamp
			for _, it := range d.Items {
				if it.Kind == ItemLimit {
					if it.Verdict != Allow || it.Risk != RiskLow || it.Rule != it.Subject+".max" {
						t.Errorf("limit item %+v: want allow, low risk, rule SUBJECT.max", it)
					}
					got = append(got, clamp{it.Subject, it.Description, it.Reason, it.PolicyFix})
				}
			}
			if !reflect.DeepEqual(got, tt.clamps) {
				t.Errorf("limit items\n%q\nwant\n%q", got, tt.clamps)
			}
		})
	}
}

// TestLimitFixesLoad checks that a clamp's PolicyFix is a line the policy
// file takes, and that it then lets the run have what it asked for.
func TestLimitFixesLoad(t *testing.T) {
	r := baseRequest()
	r.Memory, r.Timeout, r.Pids, r.Output, r.CPUs, r.Tmpfs = 64*gib, 48*time.Hour, 5000, 200*mib, 8.5, 2*gib
	p := mutate(Default(), func(p *Policy) { p.Limits.CPUs.Max = 2 })
	d := p.Decide(r)
	if len(d.Items) == 0 {
		t.Fatal("no items")
	}
	file := "limits:\n"
	seen := map[string]bool{}
	for _, it := range d.Items {
		if it.Kind != ItemLimit {
			continue
		}
		seen[it.Subject] = true
		key, val, _ := strings.Cut(it.PolicyFix, ": ") // limits.NAME.max: VALUE
		file += "  " + strings.TrimSuffix(strings.TrimPrefix(key, "limits."), ".max") + ": {max: " + val + "}\n"
	}
	if len(seen) != 6 {
		t.Fatalf("clamped %v, want all six limits", seen)
	}
	fixed, err := Parse([]byte(file), "p.yaml")
	if err != nil {
		t.Fatalf("the fixes do not load: %v\n%s", err, file)
	}
	want := Effective{MemoryBytes: 64 * gib, Timeout: 48 * time.Hour, Pids: 5000, OutputBytes: 200 * mib, CPUs: 8.5, TmpfsBytes: 2 * gib}
	if d := fixed.Decide(r); d.Limits != want {
		t.Errorf("under the fixes: %+v, want %+v", d.Limits, want)
	}
}

func TestToolTier(t *testing.T) {
	tests := []struct {
		tags  []string
		perms []string
		want  Tier
	}{
		{nil, nil, TierUnknown},
		{[]string{"api"}, []string{"network:external:x.com"}, TierUnknown},
		{[]string{"read"}, nil, TierReadOnly},
		{[]string{"read", "write"}, nil, TierWrite},
		{[]string{"Run", "read"}, nil, TierExecute},
		{[]string{"read"}, []string{"filesystem:write:."}, TierWrite},
		{[]string{"run"}, []string{"filesystem:write:."}, TierExecute},
		{[]string{"read"}, []string{"network:external:x.com"}, TierExternalAPI},
		{[]string{"read"}, []string{"network:localhost:80", "env:A", "filesystem:read:."}, TierReadOnly},
	}
	for _, tt := range tests {
		if got := ToolTier(tt.tags, grants(t, tt.perms...)); got != tt.want {
			t.Errorf("ToolTier(%q, %q) = %s, want %s", tt.tags, tt.perms, got, tt.want)
		}
	}
}

func TestNewRequest(t *testing.T) {
	def := &tool.Definition{
		Name: "w", Version: "2", Tags: []string{"read"},
		Metadata:    &tool.Metadata{Tags: []string{"weather"}},
		Environment: &tool.Environment{Inherit: true},
		Security:    tool.Security{Isolation: tool.IsolationContainer, ExecutionPrivilege: tool.PrivilegeReduced},
		Resources:   &tool.Resources{MaxMemory: 1 << 30, Timeout: time.Minute},
		Timeout:     time.Hour,
		Sandboxed:   &tool.SandboxedExt{PidsLimit: 99, CPUs: 1.5, TmpfsSize: 32 << 20},
		Steps:       []tool.Step{{Name: "a", Output: &tool.Output{BufferLimit: 1 << 20}}},
		Source:      tool.Source{Path: "/x/w.yaml", Scope: tool.ScopeGlobal},
	}
	r := NewRequest(def, nil, cwd, home)
	want := Request{Tool: "w", Version: "2", Tags: []string{"read", "weather"}, Scope: tool.ScopeGlobal, DefinitionPath: "/x/w.yaml",
		Isolation: tool.IsolationContainer, Privilege: tool.PrivilegeReduced, InheritEnv: true,
		Memory: 1 << 30, Timeout: time.Minute, Pids: 99, Output: 1 << 20, CPUs: 1.5, Tmpfs: 32 << 20, Cwd: cwd, Home: home}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("NewRequest =\n%+v\nwant\n%+v", r, want)
	}
}

func TestValidateApprovals(t *testing.T) {
	good := []string{"all", "elevated", "isolation-none", "env-inherit", "tier:unknown", "tier:execute",
		"filesystem:write:/x", "network:external:api.github.com", "network:localhost:5432", "env:TOKEN"}
	if err := ValidateApprovals(good); err != nil {
		t.Errorf("ValidateApprovals(%q) = %v", good, err)
	}
	for _, bad := range []string{"", "sudo", "tier:root", "filesystem:exec:/x", "everything"} {
		if err := ValidateApprovals([]string{bad}); err == nil {
			t.Errorf("ValidateApprovals(%q) succeeded", bad)
		}
	}
}

func TestDecisionErr(t *testing.T) {
	r := baseRequest()
	if err := Default().Decide(r).Err(); err != nil {
		t.Errorf("allowed decision: Err = %v", err)
	}
	r.Privilege = tool.PrivilegeElevated
	err := Default().Decide(r).Err()
	var de *DecisionError
	if !errors.Is(err, ErrApprovalRequired) || !errors.As(err, &de) || de.Code != CodePermissionDenied || de.Hint == "" {
		t.Errorf("approval: Err = %#v", err)
	}
	if err.Error() != "run t: needs approval: execution-privilege" {
		t.Errorf("message = %q", err)
	}
	r.Grants = grants(t, "filesystem:read:~/.kube/config")
	err = Default().Decide(r).Err()
	if !errors.Is(err, ErrDenied) || err.Error() != "run t: denied by policy: filesystem:read:/home/u/.kube/config" {
		t.Errorf("deny: Err = %v", err)
	}
}

func TestInvalidPatternsFailClosed(t *testing.T) {
	p := Default()
	p.Paths.Deny = []PathPattern{"relative"}
	p.Paths.AllowWrite = []PathPattern{""}
	r := baseRequest()
	r.Grants = grants(t, "filesystem:read:/srv/a")
	if d := p.Decide(r); d.Verdict != Deny {
		t.Errorf("invalid deny pattern: %s", d.Verdict)
	}
	p.Paths.Deny = nil
	r.Grants = grants(t, "filesystem:write:/srv/a")
	if d := p.Decide(r); d.Verdict != NeedsApproval {
		t.Errorf("invalid allow-write pattern: %s", d.Verdict)
	}
}

func TestGlobDenyInsideGrant(t *testing.T) {
	p := Default()
	p.Paths.Deny = []PathPattern{"~/.config/*/token"}
	r := baseRequest()
	r.Grants = grants(t, "filesystem:read:~/.config")
	d := p.Decide(r)
	it, _ := item(d, "filesystem:read:/home/u/.config")
	if it.Verdict != NeedsApproval || it.Rule != "paths.deny[0] ~/.config/*/token (inside the granted path)" {
		t.Errorf("item = %+v", it)
	}
	want := PathMask{Path: "/home/u/.config/*/token", Under: "/home/u/.config", Hide: true, Rule: "paths.deny[0] ~/.config/*/token"}
	if !slices.Contains(d.Masks, want) {
		t.Errorf("masks = %+v", d.Masks)
	}
	r.Grants = grants(t, "filesystem:read:~/.config/app/token")
	if d := p.Decide(r); d.Verdict != Deny {
		t.Errorf("glob deny: %s", d.Verdict)
	}
	r.Grants = grants(t, "filesystem:read:~/.config/app/other")
	if d := p.Decide(r); d.Verdict != Allow {
		t.Errorf("glob deny matched a sibling: %s", d.Verdict)
	}
}

func TestHostCovers(t *testing.T) {
	tests := []struct {
		pattern, grant string
		want           bool
	}{
		{"*", "*", true},
		{"*", "a.com", true},
		{"a.com", "*", false},
		{"*.a.com", "*", false},
		{"a.com", "a.com", true},
		{"A.com", "a.COM", true},
		{"a.com", "b.a.com", false},
		{"*.a.com", "b.a.com", true},
		{"*.a.com", "a.com", false},
		{"*.a.com", "*.a.com", true},
		{"*.a.com", "*.b.a.com", true},
		{"*.b.a.com", "*.a.com", false},
		{"a.com", "*.a.com", false},
	}
	for _, tt := range tests {
		if got := hostCovers(tt.pattern, tt.grant); got != tt.want {
			t.Errorf("hostCovers(%q, %q) = %v, want %v", tt.pattern, tt.grant, got, tt.want)
		}
	}
}

func TestDecideRequireLandlock(t *testing.T) {
	r := baseRequest()
	r.Scope = tool.ScopePath
	if d := Default().Decide(r); d.RequireLandlock {
		t.Errorf("built-in policy requires Landlock")
	}
	p, err := Parse([]byte("sources:\n  - scope: any\n    isolation:\n      landlock: required\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Decide(r); !d.RequireLandlock {
		t.Errorf("isolation.landlock: required did not reach the decision")
	}
	if p.Sources[0].Isolation.Landlock != LandlockRequired {
		t.Errorf("landlock = %q", p.Sources[0].Isolation.Landlock)
	}
	p, err = Parse([]byte("sources:\n  - scope: any\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Sources[0].Isolation.Landlock; got != LandlockBestEffort {
		t.Errorf("omitted landlock = %q, want best-effort", got)
	}
}

// A cap and a request written alike are the same bytes and the same time:
// the policy reads sizes and durations with the tool's grammar
// (internal/units). Before, a cap "max: 512MB" (read as 10^6-based)
// clamped a tool asking for "512MB" (2^20-based) to 512000000 bytes.
func TestCapAndRequestWrittenAlikeAgree(t *testing.T) {
	for _, c := range []struct {
		toolMem, capMem string
		toolTmo, capTmo string
		wantMem         int64
		wantTmo         time.Duration
	}{
		{"512MB", "512MB", "90s", "90s", 512 << 20, 90 * time.Second},
		{"512MB", "512MB", "1w", "1w", 512 << 20, 7 * 24 * time.Hour},
		{"512MiB", "512MB", "1000", `"1000"`, 512 << 20, time.Second},
		{"512M", "512MiB", `"90000"`, "90s", 512 << 20, 90 * time.Second},
		{"1GB", "512MB", "2h", "1h", 512 << 20, time.Hour},
		{"1.5KB", "2K", "1500", "1.5s", 1536, 1500 * time.Millisecond},
	} {
		def, err := tool.Parse([]byte("name: m\ndescription: d\nbash: echo\ntags: [read]\nresources:\n  max-memory: "+c.toolMem+
			"\n  timeout: "+c.toolTmo+"\n"), "m.yaml")
		if err != nil {
			t.Fatal(err)
		}
		p, err := Parse([]byte("limits:\n  memory:\n    max: "+c.capMem+"\n  timeout:\n    max: "+c.capTmo+"\n"), "p.yaml")
		if err != nil {
			t.Errorf("cap %s/%s: %v", c.capMem, c.capTmo, err)
			continue
		}
		d := p.Decide(NewRequest(def, nil, cwd, home))
		if d.Limits.MemoryBytes != c.wantMem || d.Limits.Timeout != c.wantTmo {
			t.Errorf("tool %s/%s under cap %s/%s: memory %d, timeout %v; want %d, %v",
				c.toolMem, c.toolTmo, c.capMem, c.capTmo, d.Limits.MemoryBytes, d.Limits.Timeout, c.wantMem, c.wantTmo)
		}
		memClamped := c.wantMem != def.Resources.MaxMemory
		for _, it := range d.Items {
			if it.Subject == "limits.memory" && !memClamped {
				t.Errorf("tool %s under cap %s: %q, but the request is not above the cap", c.toolMem, c.capMem, it.Reason)
			}
		}
	}
}

// '[' in a path rule is literal, in the deny check, in the protected paths
// found inside a grant, and in a source path: a directory named "[x]" is
// what the rule names, never a class of letters. Before, the prefix of a
// rule stopped at '[', so a grant of /data/[x] did not see the rule
// /data/[x]/secret inside it: no mask, no approval, the secret readable.
func TestBracketInPathRulesIsLiteral(t *testing.T) {
	p := mutate(Default(), func(p *Policy) {
		p.Paths.Deny = []PathPattern{"/data/[x]/secret", "/data/[ab]"}
		p.Secrets.Mask = nil // path rules only
		p.Sources = []SourceRule{{Scope: SourceAny, Path: "/defs/[team]/*.yaml", Trusted: true,
			Isolation: IsolationRule{Allowed: []tool.Isolation{tool.IsolationProcess}, Minimum: tool.IsolationProcess}}}
	})
	decide := func(perm string) (Item, Decision) {
		r := baseRequest()
		r.Grants = grants(t, perm)
		d := p.Decide(r)
		it, ok := item(d, perm)
		if !ok {
			t.Fatalf("%s: no item in %+v", perm, d.Items)
		}
		return it, d
	}
	if it, d := decide("filesystem:read:/data/[x]"); it.Verdict != NeedsApproval || len(d.Masks) != 1 ||
		d.Masks[0].Path != "/data/[x]/secret" || !d.Masks[0].Hide {
		t.Errorf("grant of /data/[x]: %s (%s), masks %+v; want needs approval and /data/[x]/secret hidden", it.Verdict, it.Reason, d.Masks)
	}
	if it, _ := decide("filesystem:read:/data/[ab]/f"); it.Verdict != Deny {
		t.Errorf("grant under /data/[ab]: %s, want denied", it.Verdict)
	}
	if it, d := decide("filesystem:read:/data/a"); it.Verdict == Deny || len(d.Masks) != 0 {
		t.Errorf("grant of /data/a: %s (%s), masks %+v; want it not denied by /data/[ab]", it.Verdict, it.Rule, d.Masks)
	}
	for path, trusted := range map[string]bool{"/defs/[team]/t.yaml": true, "/defs/t/t.yaml": false} {
		r := baseRequest()
		r.DefinitionPath = path
		if got := p.source(r).match.Trusted; got != trusted {
			t.Errorf("source of %s: trusted %v, want %v", path, got, trusted)
		}
	}
}

// A rule written with a trailing slash names the directory: a grant of
// the directory itself exposes everything under it, so it is denied like
// a grant of something inside. Before, "/data/secret/" matched only what
// was strictly under the directory, and a grant of /data/secret was
// allowed with no mask: the contents the rule denied were readable.
func TestTrailingSlashRuleCoversTheDirectory(t *testing.T) {
	for _, pat := range []string{"/data/secret/", "/data/se*/"} {
		p := mutate(Default(), func(p *Policy) { p.Paths.Deny = []PathPattern{PathPattern(pat)} })
		for _, perm := range []string{"filesystem:read:/data/secret", "filesystem:read:/data/secret/x", "filesystem:write:/data/secret"} {
			r := baseRequest()
			r.Grants = grants(t, perm)
			d := p.Decide(r)
			if it, _ := item(d, perm); it.Verdict != Deny {
				t.Errorf("deny %q, %s: %s (%s), masks %+v; want denied", pat, perm, it.Verdict, it.Reason, d.Masks)
			}
		}
	}
}

// A glob rule whose literal prefix is above a grant still protects what
// it matches inside the grant. Before, a rule was looked for inside a
// grant only when its literal prefix (the directory before the first
// glob) was the grant or under it: the default rule /home/*/.ssh masked
// /home/*/.ssh in a grant of /home, but a grant of /home/v was allowed
// with no mask and /home/v/.ssh was readable.
func TestGlobRuleAboveGrantIsMaskedInside(t *testing.T) {
	for _, c := range []struct {
		rule, grant string
		masks       []string // relative to the grant; nil: the grant is denied
	}{
		{"/home/*/.ssh", "/home/v", []string{".ssh"}},
		{"/data/*/secret", "/data/a", []string{"secret"}},
		{"/data/a*/secret", "/data/ab", []string{"secret"}},
		{"/data/**/secret", "/data/a/b", []string{"**/secret"}},
		{"/data/*/*/secret", "/data/a/b", []string{"secret"}},
		{"/data/*/x/*/secret", "/data/a/x", []string{"*/secret"}},
		{"/data/**.pem", "/data/a", nil},
	} {
		p := mutate(Default(), func(p *Policy) { p.Paths.Deny, p.Secrets.Mask = []PathPattern{PathPattern(c.rule)}, nil })
		perm := "filesystem:read:" + c.grant
		r := baseRequest()
		r.Grants = grants(t, perm)
		d := p.Decide(r)
		it, _ := item(d, perm)
		if c.masks == nil {
			if it.Verdict != Deny {
				t.Errorf("rule %s, grant %s: %s, masks %+v; want denied", c.rule, c.grant, it.Verdict, d.Masks)
			}
			continue
		}
		var got []string
		for _, m := range d.Masks {
			if m.Under == c.grant && m.Hide {
				rel, _ := filepath.Rel(c.grant, m.Path)
				got = append(got, rel)
			}
		}
		slices.Sort(got)
		if it.Verdict != NeedsApproval || !slices.Equal(got, c.masks) {
			t.Errorf("rule %s, grant %s: %s (%s), masks %v; want needs approval and masks %v", c.rule, c.grant, it.Verdict, it.Reason, got, c.masks)
		}
	}
	// A rule that cannot match under the grant leaves it alone.
	for rule, grant := range map[string]string{"/data/*/secret": "/srv/a", "/data/x**": "/data/y", "/data/a/x**.pem": "/data/b"} {
		p := mutate(Default(), func(p *Policy) { p.Paths.Deny, p.Secrets.Mask = []PathPattern{PathPattern(rule)}, nil })
		r := baseRequest()
		r.Grants = grants(t, "filesystem:read:"+grant)
		if d := p.Decide(r); d.Verdict != Allow || len(d.Masks) != 0 {
			t.Errorf("rule %s, grant of %s: %s, masks %+v", rule, grant, d.Verdict, d.Masks)
		}
	}
}

// environment.deny has one matcher, which the decision and the plan's
// scrubbing of an inherited environment share (EnvDenied), and a pattern
// it cannot read is an error at load. Before, both matched with
// filepath.Match, which reads '[' as a class and returns an error on a
// pattern such as "AWS_[": the deny then matched nothing, silently.
func TestEnvDenyPatterns(t *testing.T) {
	for _, bad := range []string{"AWS_[", "AWS_[A-Z]*", `A\B`, "A/B", ""} {
		if _, err := Parse([]byte("environment:\n  deny: ['"+bad+"']\n"), "p.yaml"); err == nil {
			t.Errorf("environment.deny %q loads; want an error", bad)
		}
	}
	deny := []string{"LD_*", "*TOKEN*", "A?C"}
	for name, want := range map[string]int{"LD_PRELOAD": 0, "GH_TOKEN": 1, "X/TOKEN": 1, "ABC": 2, "AC": -1, "HOME": -1} {
		if got := EnvDenied(deny, name); got != want {
			t.Errorf("EnvDenied(%q) = %d, want %d", name, got, want)
		}
	}
}

func TestDecideForcesRuntime(t *testing.T) {
	p, err := Parse([]byte("sources:\n  - scope: any\n    isolation:\n      minimum: container\n      runtime: runsc\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := baseRequest()
	r.Scope = tool.ScopePath
	d := p.Decide(r)
	if d.Isolation != tool.IsolationContainer || d.Runtime != "runsc" {
		t.Fatalf("isolation %q runtime %q, want container runsc", d.Isolation, d.Runtime)
	}
	if !strings.Contains(strings.Join(d.Notes, "\n"), "container runtime runsc: forced") {
		t.Errorf("no note of the forced runtime: %q", d.Notes)
	}
	// A process-tier run keeps no runtime; the built-in policy forces none.
	q, err := Parse([]byte("sources:\n  - scope: any\n    isolation:\n      runtime: runsc\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d := q.Decide(r); d.Runtime != "" {
		t.Errorf("process-tier run got runtime %q", d.Runtime)
	}
	r.Isolation = tool.IsolationContainer
	if d := Default().Decide(r); d.Runtime != "" {
		t.Errorf("built-in policy forces runtime %q", d.Runtime)
	}
	if _, err := Parse([]byte("sources:\n  - scope: any\n    isolation:\n      runtime: crun\n"), "p.yaml"); err == nil {
		t.Errorf("runtime crun was accepted")
	}
}

// The reason of a grant holding protected paths says what the masks
// hold: a path that exists when the run starts stays masked; one that
// does not is not (nothing is mounted over a missing path), and a write
// grant may create it, which the run reports. It claimed they stay hidden
// whatever happens.
func TestHoldsProtectedReasonSaysWhatTheMasksHold(t *testing.T) {
	r := baseRequest()
	r.Grants = grants(t, "filesystem:write:~")
	d := Default().Decide(r)
	it, ok := item(d, "filesystem:write:/home/u")
	if !ok || !strings.HasSuffix(it.Rule, "(inside the granted path)") {
		t.Fatalf("item = %+v", it)
	}
	for _, want := range []string{"those that exist when the run starts stay masked", "one created during the run is not masked but reported"} {
		if !strings.Contains(it.Reason, want) {
			t.Errorf("reason %q does not say %q", it.Reason, want)
		}
	}
	if strings.Contains(it.Reason, "stay hidden even when approved") {
		t.Errorf("reason %q claims the masks hold what does not exist yet", it.Reason)
	}
}

// A CPU request that is not a number never passes the cap.
func TestCPUsNaNIsCapped(t *testing.T) {
	p := Default()
	p.Limits.CPUs = CPULimit{Default: 0, Max: 2}
	r := baseRequest()
	r.CPUs = math.NaN()
	if d := p.Decide(r); d.Limits.CPUs != 2 {
		t.Fatalf("NaN under a cap of 2: %v CPUs", d.Limits.CPUs)
	}
	p.Limits.CPUs = CPULimit{}
	if d := p.Decide(r); d.Limits.CPUs != 0 {
		t.Fatalf("NaN without a cap: %v CPUs, want none", d.Limits.CPUs)
	}
}
