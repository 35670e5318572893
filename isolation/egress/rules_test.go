package egress

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// ParseRule is netrule's (whose tests hold the grammar); its errors are
// ErrBadRule here too.
func TestParseRuleIsNetrules(t *testing.T) {
	if r, err := ParseRule("network:external:[2001:DB8::1]:443"); err != nil || r != (Rule{Host: "2001:db8::1", Port: 443}) {
		t.Errorf("ParseRule = %+v, %v", r, err)
	}
	if _, err := ParseRule("ex*ample.com"); !errors.Is(err, ErrBadRule) {
		t.Errorf("a bad rule: %v, want ErrBadRule", err)
	}
}

func mustRules(t testing.TB, allow, deny []string, local []int) Rules {
	t.Helper()
	rs, err := ParseRules(allow, deny, local)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestDecide(t *testing.T) {
	rs := mustRules(t,
		[]string{"api.example.com", "*.cdn.example.net", "files.example.org:8443", "203.0.113.7:22", "2001:db8::5", "*"},
		[]string{"blocked.example.com", "*.evil.example", "198.51.100.66", "*:25"},
		nil)
	only := mustRules(t, []string{"api.example.com", "*.cdn.example.net"}, nil, nil)
	tests := []struct {
		rules Rules
		host  string
		port  int
		want  Verdict
		in    string // substring of the reason
	}{
		// Default ports 80 and 443 only.
		{only, "api.example.com", 443, Allow, "granted by network:external:api.example.com"},
		{only, "api.example.com", 80, Allow, ""},
		{only, "API.EXAMPLE.COM.", 443, Allow, ""},
		{only, "api.example.com", 8080, Deny, "network:external:api.example.com:8080"},
		// Wildcards match subdomains, not the apex or look-alikes.
		{only, "a.cdn.example.net", 443, Allow, ""},
		{only, "a.b.cdn.example.net", 443, Allow, ""},
		{only, "cdn.example.net", 443, Deny, "no permission grants cdn.example.net:443"},
		{only, "evilcdn.example.net", 443, Deny, ""},
		{only, "other.example.com", 443, Deny, "network:external:other.example.com:443"},
		{only, "example.com", 443, Deny, ""},
		// IP literals need their own grant; "*" covers names only.
		{rs, "203.0.113.7", 22, Allow, ""},
		{rs, "203.0.113.7", 443, Deny, "needs a grant of its own"},
		{rs, "[::ffff:203.0.113.7]", 22, Allow, ""},
		{rs, "203.0.113.8", 443, Deny, "network:external:203.0.113.8:443"},
		{rs, "2001:db8::5", 443, Allow, ""},
		{rs, "[2001:db8::5]", 80, Allow, ""},
		{rs, "2001:db8::6", 443, Deny, "network:external:[2001:db8::6]:443"},
		{rs, "anything.example", 443, Allow, "granted by network:external:*"},
		{rs, "anything.example", 8443, Deny, ""},
		// Deny wins over allow, including over "*" and exact grants.
		{rs, "blocked.example.com", 443, Deny, "denied by the operator's policy"},
		{rs, "blocked.example.com", 8443, Deny, "denied by the operator's policy"}, // portless deny: every port
		{rs, "198.51.100.66", 22, Deny, "denied by the operator's policy"},
		{rs, "x.evil.example", 443, Deny, "deny network:external:*.evil.example"},
		{rs, "evil.example", 443, Allow, ""},
		{rs, "198.51.100.66", 443, Deny, "denied by the operator's policy"},
		{rs, "files.example.org", 8443, Allow, ""},
		{rs, "mail.example.org", 25, Deny, "deny network:external:*:25"},
		{rs, "203.0.113.7", 25, Deny, "denied by the operator's policy"}, // deny "*" covers IPs
		// Garbage.
		{rs, "bad host", 443, Deny, "invalid target"},
		{rs, "api.example.com", 0, Deny, "invalid port"},
		{rs, "api.example.com", 70000, Deny, "invalid port"},
		{rs, "fe80::1%eth0", 443, Deny, "invalid target"},
		{Rules{}, "api.example.com", 443, Deny, "no permission grants"},
		// A refused address is not offered a grant that could not work.
		{Rules{}, "127.0.0.1", 443, Deny, "refused address (loopback)"},
		{Rules{}, "169.254.169.254", 80, Deny, "refused address (cloud metadata)"},
	}
	for _, tt := range tests {
		v, why := tt.rules.Decide(tt.host, tt.port)
		if v != tt.want || !strings.Contains(why, tt.in) {
			t.Errorf("Decide(%q, %d) = %s, %q; want %s containing %q", tt.host, tt.port, v, why, tt.want, tt.in)
		}
	}
}

func TestParseRulesAndDescribe(t *testing.T) {
	rs := mustRules(t, []string{"a.example", "b.example:8080"}, []string{"c.example"}, []int{5432, 6379})
	want := []string{
		"deny network:external:c.example",
		"allow network:external:a.example",
		"allow network:external:b.example:8080",
		"allow network:localhost:5432",
		"allow network:localhost:6379",
	}
	if got := rs.Describe(); !reflect.DeepEqual(got, want) {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	for _, bad := range []struct {
		allow, deny []string
		local       []int
	}{
		{allow: []string{"bad host"}},
		{deny: []string{"x:0"}},
		{local: []int{0}},
		{local: []int{65536}},
	} {
		if _, err := ParseRules(bad.allow, bad.deny, bad.local); !errors.Is(err, ErrBadRule) {
			t.Errorf("ParseRules(%v) error = %v, want ErrBadRule", bad, err)
		}
	}
}

// FuzzParseRule: parsing never panics, a parsed rule round-trips through
// its String form, and Decide never panics on any host.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"a.example", "*.a.example:443", "*", "[::1]:80", "2001:db8::1", "1.2.3.4:0", "network:external:x:1", "[", "*.", ":::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err == nil {
			back, err := ParseRule(r.String())
			if err != nil || back != r {
				t.Fatalf("%q: %+v -> %q -> %+v, %v", s, r, r.String(), back, err)
			}
		}
		rs := Rules{Allow: []Rule{{Host: "*"}}, Deny: []Rule{{Host: "*.x"}}}
		rs.Decide(s, 443)
	})
}
