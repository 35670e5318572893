package tool

import (
	"fmt"
	"strings"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
)

// PermKind is the kind of a required permission.
type PermKind string

const (
	PermFSRead       PermKind = "filesystem:read"
	PermFSWrite      PermKind = "filesystem:write"
	PermNetExternal  PermKind = "network:external"
	PermNetLocalhost PermKind = "network:localhost"
	PermEnv          PermKind = "env"
)

// PermissionGrammar is shown in every error about a permission string.
const PermissionGrammar = "filesystem:read:PATH, filesystem:write:PATH, network:external:HOST[:PORT], network:localhost:PORT, env:NAME"

// Permission is one parsed `security.required-permissions` entry. It is
// syntax only: PATH and HOST may still hold {PARAM} references, which are
// substituted at bind time, and nothing is resolved on the host.
type Permission struct {
	Raw  string   `json:"raw"`
	Kind PermKind `json:"kind"`
	Path string   `json:"path,omitempty"` // filesystem kinds
	Host string   `json:"host,omitempty"` // network:external: as netrule.ParseHost returns it, or as written while it holds {PARAM}
	Port int      `json:"port,omitempty"` // network kinds; 0 means 80 and 443 for external
	Name string   `json:"name,omitempty"` // env
}

// ParsePermission parses one permission string against the grammar in
// PermissionGrammar.
func ParsePermission(s string) (Permission, error) {
	p := Permission{Raw: s}
	bad := func(why string) (Permission, error) {
		return Permission{}, fmt.Errorf("permission %q: %s (grammar: %s)", s, why, PermissionGrammar)
	}
	switch {
	case strings.HasPrefix(s, "filesystem:read:"), strings.HasPrefix(s, "filesystem:write:"):
		i := strings.Index(s[len("filesystem:"):], ":") + len("filesystem:")
		p.Kind = PermKind(s[:i])
		p.Path = s[i+1:]
		if strings.TrimSpace(p.Path) == "" {
			return bad("empty path")
		}
		if strings.ContainsRune(p.Path, 0) {
			return bad("path contains a NUL byte")
		}
	case strings.HasPrefix(s, "network:external:"):
		p.Kind = PermNetExternal
		host, port, err := netrule.SplitRule(s)
		if err != nil {
			return bad(err.Error())
		}
		if p.Host, err = checkHostPattern(host); err != nil {
			return bad(err.Error())
		}
		if port != "" {
			n, err := parsePort(port)
			if err != nil {
				return bad(err.Error())
			}
			p.Port = n
		}
	case strings.HasPrefix(s, "network:localhost:"):
		p.Kind = PermNetLocalhost
		n, err := parsePort(s[len("network:localhost:"):])
		if err != nil {
			return bad(err.Error())
		}
		p.Port = n
	case strings.HasPrefix(s, "env:"):
		p.Kind = PermEnv
		p.Name = s[len("env:"):]
		if !validEnvName(p.Name) {
			return bad("not an environment variable name (letters, digits and _, not starting with a digit)")
		}
	default:
		return bad("unknown kind")
	}
	return p, nil
}

// parsePort reads a port of a network permission (netrule.ParsePort).
func parsePort(s string) (int, error) {
	if isPlaceholder(s) {
		return 0, fmt.Errorf("port %q must be a number, not a parameter", s)
	}
	return netrule.ParsePort(s)
}

// hostParams are the {PARAM} references a host may hold.
var hostParams = lazyRegexp(`\{[^{}]*\}`)

// checkHostPattern checks a host as netrule.ParseHost does and returns its
// canonical form. A host holding {PARAM} references is checked with each
// reference read as one label, and returned as written: it is checked
// again, in full, after substitution.
func checkHostPattern(h string) (string, error) {
	if hostParams().MatchString(h) {
		if _, err := netrule.ParseHost(hostParams().ReplaceAllString(h, "x")); err != nil {
			return "", err
		}
		return h, nil
	}
	return netrule.ParseHost(h)
}

func isPlaceholder(s string) bool {
	return strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}")
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
