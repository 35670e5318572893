package netrule

import (
	"fmt"
	"net/url"
	"strings"
)

// HTTPRule narrows what requests a host admits: a request to a host some
// rule names must match the methods and path prefixes of one of them. A
// plan carries rules in this form; the egress proxy applies them.
type HTTPRule struct {
	// Host is a pattern as ParseNamedHost returns it (not "*").
	Host string `json:"host"`
	// Methods are upper-case request methods; empty admits any.
	Methods []string `json:"methods,omitempty"`
	// Paths are path prefixes, each starting with "/"; empty admits any.
	// A prefix matches the request's path with its percent-escapes
	// decoded (RequestPath); a request path with "." or ".." segments (a
	// segment's ";" parameters aside), an
	// escaped "/" or a backslash is refused wherever rules apply, as
	// servers disagree on what it names.
	Paths []string `json:"paths,omitempty"`
}

// CheckHTTPRule checks a rule and returns it normalised (its host in
// canonical form).
func CheckHTTPRule(r HTTPRule) (HTTPRule, error) {
	h, err := ParseNamedHost(r.Host)
	if err != nil {
		return HTTPRule{}, err
	}
	out := HTTPRule{Host: h}
	for _, m := range r.Methods {
		if err := CheckHTTPMethod(m); err != nil {
			return HTTPRule{}, err
		}
		out.Methods = append(out.Methods, m)
	}
	for _, p := range r.Paths {
		if err := CheckHTTPPath(p); err != nil {
			return HTTPRule{}, err
		}
		out.Paths = append(out.Paths, p)
	}
	return out, nil
}

// CheckHTTPMethod accepts an upper-case HTTP method: letters A to Z.
func CheckHTTPMethod(m string) error {
	if m == "" || strings.Trim(m, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return fmt.Errorf("method %q: write an upper-case HTTP method such as GET: %w", m, ErrBadRule)
	}
	return nil
}

// CheckHTTPPath accepts a plain path prefix: starting with "/", without
// percent-escapes, a query, a fragment, a backslash, or "." or ".."
// segments. A rule's prefix is compared with the decoded request path, so
// an escape in it could never match, and a dot segment is refused in
// every request the rules judge.
func CheckHTTPPath(p string) error {
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "%\\?#") {
		return fmt.Errorf("path %q: write a path prefix such as /repos/: starting with /, without %%-escapes, a query (?), a fragment (#) or backslashes: %w", p, ErrBadRule)
	}
	if _, bad := RequestPath(p); bad {
		return fmt.Errorf("path %q: write a plain path without . or .. segments: %w", p, ErrBadRule)
	}
	return nil
}

// RequestPath decodes an escaped request path and reports whether servers
// could read it as another path: "." or ".." segments (plain or escaped,
// with or without ";" parameters), an escaped "/" or "\", a backslash, or
// an escape that does not decode.
func RequestPath(escaped string) (path string, ambiguous bool) {
	if escaped == "" {
		escaped = "/"
	}
	lower := strings.ToLower(escaped)
	if strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") || strings.Contains(escaped, `\`) {
		return "", true
	}
	path, err := url.PathUnescape(escaped)
	if err != nil || !strings.HasPrefix(path, "/") {
		return "", true
	}
	for _, seg := range strings.Split(path, "/") {
		// Servers that drop a segment's parameters before resolving
		// dots (Tomcat, Spring) read "..;x" as "..".
		if seg, _, _ = strings.Cut(seg, ";"); seg == "." || seg == ".." {
			return "", true
		}
	}
	return path, false
}

// MatchTarget reports whether the rule names the target's host.
func (r HTTPRule) MatchTarget(t Target) bool { return Rule{Host: r.Host}.MatchTarget(t, false) }

// Admits reports whether the rule admits a request of method on path (a
// decoded path, RequestPath's).
func (r HTTPRule) Admits(method, path string) bool {
	okMethod := len(r.Methods) == 0
	for _, m := range r.Methods {
		okMethod = okMethod || m == method
	}
	if !okMethod {
		return false
	}
	if len(r.Paths) == 0 {
		return true
	}
	for _, pre := range r.Paths {
		if strings.HasPrefix(path, pre) {
			return true
		}
	}
	return false
}

// Describe renders the rule as plans and explanations show it.
func (r HTTPRule) Describe() string {
	m, p := "any method", "any path"
	if len(r.Methods) > 0 {
		m = strings.Join(r.Methods, ",")
	}
	if len(r.Paths) > 0 {
		p = strings.Join(r.Paths, ",")
	}
	return r.Host + ": " + m + " " + p
}
