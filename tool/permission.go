package tool

import (
	"fmt"
	"strconv"
	"strings"
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
	Host string   `json:"host,omitempty"` // network:external; "*" or "*.example.com" allowed
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
		rest := s[len("network:external:"):]
		host, port := rest, ""
		if i := strings.LastIndex(rest, ":"); i >= 0 && !strings.HasSuffix(rest, "]") {
			host, port = rest[:i], rest[i+1:]
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if host == "" {
			return bad("empty host")
		}
		if err := checkHostPattern(host); err != nil {
			return bad(err.Error())
		}
		p.Host = strings.ToLower(host)
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

func parsePort(s string) (int, error) {
	if isPlaceholder(s) {
		return 0, fmt.Errorf("port %q must be a number, not a parameter", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return n, nil
}

// checkHostPattern accepts a DNS name, an IP literal, "*", "*.suffix", or a
// name holding {PARAM} references (checked again after substitution).
func checkHostPattern(h string) error {
	if h == "*" {
		return nil
	}
	name := strings.TrimPrefix(h, "*.")
	if strings.Contains(name, "*") {
		return fmt.Errorf("host %q: a wildcard is allowed only as a leading \"*.\"", h)
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9',
			r == '.', r == '-', r == ':', r == '{', r == '}', r == '_':
		default:
			return fmt.Errorf("host %q: character %q is not allowed in a host name", h, r)
		}
	}
	return nil
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
