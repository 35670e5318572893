package permissions

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// Kind is the kind of a grant.
type Kind string

const (
	KindMount     Kind = "mount"     // a host path bound into the sandbox
	KindEgress    Kind = "egress"    // outbound connections through the proxy
	KindLocalhost Kind = "localhost" // one port of the host's loopback
	KindEnv       Kind = "env"       // one host environment variable
)

// Grant is one thing a tool may use, resolved from one required-permissions
// entry. Exactly one of Mount, Egress, Localhost and Env is set, matching
// Kind.
type Grant struct {
	Kind      Kind       `json:"kind"`
	Mount     *Mount     `json:"mount,omitempty"`
	Egress    *Egress    `json:"egress,omitempty"`
	Localhost *Localhost `json:"localhost,omitempty"`
	Env       *Env       `json:"env,omitempty"`
	// Index is the position of the permission in required-permissions, so
	// callers can point at it (tool.DefPositions.Permissions).
	Index int `json:"index"`
	// Permission is the permission string as given, after substitution.
	Permission string `json:"permission"`
}

// Mount is a filesystem grant.
type Mount struct {
	// HostPath is the declared path: `~` expanded, made absolute against the
	// working directory, cleaned. Symlinks are not resolved.
	HostPath string `json:"host_path"`
	// Resolved is HostPath with every symlink resolved on the host. The
	// host controller fills it before the policy decides; it is empty until
	// then. The mount source is Resolved, never HostPath.
	Resolved string `json:"resolved,omitempty"`
	// Target is where the path appears inside the sandbox: the declared
	// path, so commands see the paths they were given.
	Target string `json:"target"`
	// Write is true for filesystem:write (the mount is read-write).
	Write bool `json:"write"`
}

// Egress is a network:external grant.
type Egress struct {
	// Host is a lower-case DNS name or IP literal; "*" is any public host
	// name (no IP literal);
	// with Wildcard set, "*.example.com" is any subdomain of example.com
	// (not example.com itself).
	Host string `json:"host"`
	// Port is the one port allowed; 0 means 80 and 443.
	Port int `json:"port,omitempty"`
	// Wildcard is true when Host is "*" or starts with "*.".
	Wildcard bool `json:"wildcard,omitempty"`
}

// Localhost is a network:localhost grant: 127.0.0.1:Port inside the
// sandbox reaches 127.0.0.1:Port on the host, and nothing else on the
// host's loopback.
type Localhost struct {
	Port int `json:"port"`
}

// Env is an env grant: the host's value of Name is passed in.
type Env struct {
	Name string `json:"name"`
}

// Rule is the grant as the egress proxy's rule: the plan carries it as is.
func (e *Egress) Rule() netrule.Rule { return netrule.Rule{Host: e.Host, Port: e.Port} }

// Any reports whether the grant allows any public host ("*").
func (e *Egress) Any() bool { return e.Rule().Any() }

// Ports returns the ports the grant allows: Port, or 80 and 443.
func (e *Egress) Ports() []int { return e.Rule().Ports() }

// Matches reports whether a connection to host:port is within the grant,
// as the proxy's rule decides it (netrule.Rule.Allows): host is compared
// case-insensitively, a trailing dot is ignored, and "*" does not cover an
// IP literal.
func (e *Egress) Matches(host string, port int) bool { return e.Rule().Allows(host, port) }

// String returns the canonical permission string of the grant: the form
// Resolve accepts and `--approve` matches.
func (g Grant) String() string {
	switch g.Kind {
	case KindMount:
		if g.Mount.Write {
			return string(tool.PermFSWrite) + ":" + g.Mount.HostPath
		}
		return string(tool.PermFSRead) + ":" + g.Mount.HostPath
	case KindEgress:
		return g.Egress.Rule().String()
	case KindLocalhost:
		return string(tool.PermNetLocalhost) + ":" + strconv.Itoa(g.Localhost.Port)
	case KindEnv:
		return string(tool.PermEnv) + ":" + g.Env.Name
	}
	return "unknown:" + g.Permission
}

// Describe says in plain words what the grant lets the tool do, e.g.
// "may read files under /home/u/project".
func (g Grant) Describe() string {
	switch g.Kind {
	case KindMount:
		where := g.Mount.HostPath
		if g.Mount.Resolved != "" && g.Mount.Resolved != g.Mount.HostPath {
			where += " (which resolves to " + g.Mount.Resolved + ")"
		}
		if g.Mount.Write {
			return "may read, create, change and delete files under " + where
		}
		return "may read files under " + where
	case KindEgress:
		var who string
		switch {
		case g.Egress.Any():
			who = "any public host by name (an IP address needs a grant of its own)"
		case g.Egress.Wildcard:
			apex := g.Egress.Rule().Domain()
			who = "any subdomain of " + apex + " (not " + apex + " itself)"
		default:
			who = g.Egress.Host
			if refused, why := netrule.RefusedHost(g.Egress.Host); refused {
				return "can never connect: " + why
			}
		}
		return "may connect to " + who + " on " + DescribePorts(g.Egress.Ports())
	case KindLocalhost:
		return fmt.Sprintf("may connect to the host's 127.0.0.1 port %d (a service on this machine)", g.Localhost.Port)
	case KindEnv:
		return "may read the host environment variable " + g.Env.Name
	}
	return "unknown grant " + g.Permission
}

// Mechanism says what enforces the grant.
func (g Grant) Mechanism() string {
	switch g.Kind {
	case KindMount:
		if g.Mount.Write {
			return "read-write bind mount of the resolved path; nothing else of the host is writable"
		}
		return "read-only bind mount of the resolved path"
	case KindEgress:
		return "egress proxy allow rule; the sandbox has no other route out"
	case KindLocalhost:
		return "loopback forward over the egress bridge to this one port"
	case KindEnv:
		return "environment passthrough of this one variable; the rest is scrubbed"
	}
	return ""
}

// DescribePorts says which ports a network grant allows, in words:
// "ports 80 and 443" or "port 8080".
func DescribePorts(ports []int) string {
	if len(ports) == 2 {
		return fmt.Sprintf("ports %d and %d", ports[0], ports[1])
	}
	return fmt.Sprintf("port %d", ports[0])
}

// placeholder matches a {PARAM} reference left after substitution.
var placeholder = regexp.MustCompile(`\{[A-Za-z_][A-Za-z0-9_.-]*\}`)

// PermissionParams returns the parameters referenced by a permission
// string ({DIR} in filesystem:write:{DIR}).
func PermissionParams(perm string) []string {
	var out []string
	for _, m := range placeholder.FindAllString(perm, -1) {
		n := strings.Trim(m, "{}")
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Resolve turns required-permissions, after parameter substitution, into
// grants. cwd is the working directory relative paths are resolved
// against and must be absolute; home is the invoking user's home directory
// for `~` and must be absolute when a path uses `~`.
//
// Resolve makes no syscalls: symlinks are not resolved (the host
// controller fills Mount.Resolved) and nothing is checked for existence.
// Identical grants are kept once, in first-seen order. Errors are
// *PermissionError and wrap ErrInvalid.
func Resolve(perms []string, cwd, home string) ([]Grant, error) {
	var out []Grant
	seen := make(map[string]bool)
	for i, raw := range perms {
		g, err := resolveOne(i, raw, cwd, home)
		if err != nil {
			return nil, err
		}
		key := g.String()
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, g)
	}
	return out, nil
}

func resolveOne(i int, raw, cwd, home string) (Grant, error) {
	bad := func(reason string) (Grant, error) {
		return Grant{}, &PermissionError{Index: i, Permission: raw, Reason: reason}
	}
	p, err := tool.ParsePermission(urlToHost(raw))
	if err != nil {
		return Grant{}, &PermissionError{Index: i, Permission: raw, Err: err}
	}
	if m := placeholder.FindString(raw); m != "" {
		return bad("parameter " + m + " was not substituted; pass it as NAME=VALUE")
	}
	g := Grant{Index: i, Permission: raw}
	switch p.Kind {
	case tool.PermFSRead, tool.PermFSWrite:
		abs, reason := absPath(p.Path, cwd, home)
		if reason != "" {
			return bad(reason)
		}
		g.Kind = KindMount
		g.Mount = &Mount{HostPath: abs, Target: abs, Write: p.Kind == tool.PermFSWrite}
	case tool.PermNetExternal:
		// p.Host is netrule.ParseHost's canonical form: no placeholder is
		// left (checked above).
		r := netrule.Rule{Host: p.Host, Port: p.Port}
		g.Kind = KindEgress
		g.Egress = &Egress{Host: r.Host, Port: r.Port, Wildcard: r.Wildcard()}
	case tool.PermNetLocalhost:
		g.Kind = KindLocalhost
		g.Localhost = &Localhost{Port: p.Port}
	case tool.PermEnv:
		g.Kind = KindEnv
		g.Env = &Env{Name: p.Name}
	default:
		return bad("unknown kind")
	}
	return g, nil
}

// urlToHost rewrites network:external:SCHEME://HOST[:PORT][/PATH] as
// network:external:HOST[:PORT] (netrule.URLRule). Definitions often
// substitute a URL parameter ({JIRA_URL}) into a network grant; the grant
// is still for that one host.
func urlToHost(raw string) string {
	rest, ok := strings.CutPrefix(raw, string(tool.PermNetExternal)+":")
	if !ok {
		return raw
	}
	if r, isURL, err := netrule.URLRule(rest); isURL && err == nil {
		return r.String()
	}
	return raw
}

// absPath expands `~`, makes p absolute against cwd and cleans it. It
// returns a reason when it cannot.
func absPath(p, cwd, home string) (string, string) {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		if !filepath.IsAbs(home) {
			return "", "path starts with ~ but the home directory is unknown (set HOME)"
		}
		p = filepath.Join(home, p[1:])
	case strings.HasPrefix(p, "~"):
		return "", "~user paths are not supported; write the absolute path"
	case !filepath.IsAbs(p):
		if !filepath.IsAbs(cwd) {
			return "", "relative path but the working directory " + quote(cwd) + " is not absolute"
		}
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p), ""
}

func quote(s string) string { return strconv.Quote(s) }
