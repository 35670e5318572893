package egress

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
)

// RefusedCredential is the verdict of a request that carried a credential's
// stand-in to a host the credential is not meant for.
const RefusedCredential Verdict = "refused-credential"

// Credential is a host secret the proxy puts into requests in place of its
// stand-in, only on requests to Hosts. The sandbox holds StandIn alone.
//
// Where a stand-in is looked for and replaced (see inspectRequest): every
// request header value, the user:password inside "Authorization: Basic"
// (decoded, replaced, encoded again), and the request target's path and
// query. Bodies are not read: a stand-in in a body reaches the server as
// it is (to a listed host the API sees the stand-in, not the secret; to
// any other host it is a meaningless string).
type Credential struct {
	// Name names the credential in records and messages.
	Name string
	// StandIn is what the sandbox holds instead of Value.
	StandIn string
	// Value is the real secret.
	Value string
	// Hosts are the host patterns (as Rule.Host: a name, "*.suffix" or an
	// IP literal; not "*") whose requests may carry Value.
	Hosts []string
}

// HTTPRule narrows what requests a host admits (netrule owns its checks
// and its matching).
type HTTPRule = netrule.HTTPRule

// CheckInspectHost checks a host pattern of a credential or an HTTP rule
// (netrule.ParseNamedHost): a name, "*.suffix" or an IP literal; "*" is
// refused (the proxy would terminate every host's TLS).
func CheckInspectHost(h string) (string, error) { return netrule.ParseNamedHost(h) }

// CheckHTTPRule checks and normalises a rule (netrule.CheckHTTPRule).
func CheckHTTPRule(r HTTPRule) (HTTPRule, error) { return netrule.CheckHTTPRule(r) }

// hostMatch reports whether pattern (normalised) covers t.
func hostMatch(pattern string, t target) bool {
	return Rule{Host: pattern}.MatchTarget(t, false)
}

// inspects reports whether the proxy looks inside connections to t: a
// credential may go there or an HTTP rule names it. Such connections are
// read request by request (TLS terminated with the run CA).
func (p *Proxy) inspects(t target) bool {
	for _, c := range p.cfg.Credentials {
		for _, h := range c.Hosts {
			if hostMatch(h, t) {
				return true
			}
		}
	}
	for _, r := range p.cfg.HTTPRules {
		if hostMatch(r.Host, t) {
			return true
		}
	}
	return false
}

// refusal is a request the proxy refused after reading it.
type refusal struct {
	verdict Verdict
	reason  string
}

// inspectRequest checks one request to t against the HTTP rules and the
// credentials, and puts the real value of each credential meant for t
// where its stand-in is. It returns the names of the credentials it put
// in, or why the request is refused: a stand-in of a credential not meant
// for t (RefusedCredential), or a method or path no rule of t admits
// (Deny). The request is modified only when it is not refused.
func (p *Proxy) inspectRequest(req *http.Request, t target) ([]string, *refusal) {
	if r := p.checkHTTPRules(req, t); r != nil {
		return nil, r
	}
	creds := append([]Credential(nil), p.cfg.Credentials...)
	// Longer stand-ins first, so no stand-in is replaced inside another.
	sort.SliceStable(creds, func(i, j int) bool { return len(creds[i].StandIn) > len(creds[j].StandIn) })
	var use []Credential
	for _, c := range creds {
		if c.StandIn == "" || !carries(req, c.StandIn) {
			continue
		}
		meant := false
		for _, h := range c.Hosts {
			meant = meant || hostMatch(h, t)
		}
		if !meant {
			return nil, &refusal{RefusedCredential, fmt.Sprintf("the request carries the stand-in of credential %s, which may go only to %s, not %s; refused",
				c.Name, strings.Join(c.Hosts, ", "), t.String())}
		}
		use = append(use, c)
	}
	var names []string
	for _, c := range use {
		substitute(req, c.StandIn, c.Value)
		names = append(names, c.Name)
	}
	return names, nil
}

// carries reports whether s appears in a place of req the proxy looks
// at: header values (Basic credentials decoded), the target's path and
// query, and the Host.
func carries(req *http.Request, s string) bool {
	for _, vs := range req.Header {
		for _, v := range vs {
			if strings.Contains(v, s) {
				return true
			}
			if dec, ok := basicCredentials(v); ok && strings.Contains(dec, s) {
				return true
			}
		}
	}
	u := req.URL
	return strings.Contains(req.Host, s) || strings.Contains(u.Path, s) || strings.Contains(u.RawPath, s) ||
		strings.Contains(u.RawQuery, s) || strings.Contains(u.Host, s) || strings.Contains(u.Fragment, s) ||
		(u.User != nil && strings.Contains(u.User.String(), s)) || strings.Contains(u.Opaque, s)
}

// substitute replaces standIn with value in the places carries looks at,
// but the host names: a host is never rewritten. Query values are
// percent-encoded as a query needs them; a path gets the value escaped as
// a path segment.
func substitute(req *http.Request, standIn, value string) {
	for name, vs := range req.Header {
		for i, v := range vs {
			if dec, ok := basicCredentials(v); ok && strings.Contains(dec, standIn) {
				scheme, _, _ := strings.Cut(v, " ")
				v = scheme + " " + base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(dec, standIn, value)))
			}
			vs[i] = strings.ReplaceAll(v, standIn, value)
		}
		req.Header[name] = vs
	}
	u := req.URL
	if strings.Contains(u.Path, standIn) || strings.Contains(u.RawPath, standIn) {
		raw := strings.ReplaceAll(u.EscapedPath(), standIn, url.PathEscape(value))
		if p, err := url.PathUnescape(raw); err == nil {
			u.Path, u.RawPath = p, raw
		}
	}
	u.RawQuery = strings.ReplaceAll(u.RawQuery, standIn, url.QueryEscape(value))
	u.Fragment = strings.ReplaceAll(u.Fragment, standIn, value)
	if u.User != nil {
		name := strings.ReplaceAll(u.User.Username(), standIn, value)
		if pw, ok := u.User.Password(); ok {
			u.User = url.UserPassword(name, strings.ReplaceAll(pw, standIn, value))
		} else {
			u.User = url.User(name)
		}
	}
}

// basicCredentials decodes the user:password of an "Authorization: Basic"
// value.
func basicCredentials(v string) (string, bool) {
	scheme, rest, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(rest))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// checkHTTPRules refuses a request to t that the HTTP rules naming t do
// not admit; hosts no rule names admit every request.
func (p *Proxy) checkHTTPRules(req *http.Request, t target) *refusal {
	var rules []HTTPRule
	for _, r := range p.cfg.HTTPRules {
		if hostMatch(r.Host, t) {
			rules = append(rules, r)
		}
	}
	if len(rules) == 0 {
		return nil
	}
	path, bad := netrule.RequestPath(req.URL.EscapedPath())
	if bad {
		return &refusal{Deny, fmt.Sprintf("%s %s: the path has . or .. segments, an escaped / or a backslash, which the HTTP rules of %s cannot judge; refused",
			req.Method, req.URL.EscapedPath(), t.String())}
	}
	var allowed []string
	for _, r := range rules {
		if r.Admits(req.Method, path) {
			return nil
		}
		allowed = append(allowed, r.Describe())
	}
	return &refusal{Deny, fmt.Sprintf("%s %s is not allowed on %s: the HTTP rules allow only %s; add a rule under sandboxed.http to allow it",
		req.Method, path, t.String(), strings.Join(allowed, "; "))}
}
