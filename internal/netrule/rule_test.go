package netrule

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		in   string
		want Rule
		err  bool
	}{
		{in: "api.example.com", want: Rule{Host: "api.example.com"}},
		{in: "API.Example.COM.", want: Rule{Host: "api.example.com"}},
		{in: "api.example.com:8443", want: Rule{Host: "api.example.com", Port: 8443}},
		{in: "network:external:api.example.com:443", want: Rule{Host: "api.example.com", Port: 443}},
		{in: "*.example.com", want: Rule{Host: "*.example.com"}},
		{in: "*.Example.com.", want: Rule{Host: "*.example.com"}},
		{in: "*", want: Rule{Host: "*"}},
		{in: "*:8080", want: Rule{Host: "*", Port: 8080}},
		{in: "203.0.113.7", want: Rule{Host: "203.0.113.7"}},
		{in: "203.0.113.7:22", want: Rule{Host: "203.0.113.7", Port: 22}},
		{in: "2001:db8::1", want: Rule{Host: "2001:db8::1"}},
		{in: "[2001:DB8::1]:443", want: Rule{Host: "2001:db8::1", Port: 443}},
		{in: "[2001:db8::1]", want: Rule{Host: "2001:db8::1"}},
		{in: "[::ffff:203.0.113.7]", want: Rule{Host: "203.0.113.7"}},
		{in: "", err: true},
		{in: " example.com", err: true},
		{in: ":443", err: true},
		{in: "example.com:", err: true},
		{in: "example.com:0", err: true},
		{in: "example.com:0443", err: true},
		{in: "example.com:+443", err: true},
		{in: "example.com:65536", err: true},
		{in: "example.com:http", err: true},
		{in: "ex*ample.com", err: true},
		{in: "*.*.example.com", err: true},
		{in: "*.", err: true},
		{in: "a..b", err: true},
		{in: "exa mple.com", err: true},
		{in: "[example.com]:443", err: true},
		{in: "[2001:db8::1]x", err: true},
		{in: "[2001:db8::1]:", err: true},
		{in: "fe80::1%eth0", err: true},
		{in: "{HOST}", err: true},
		{in: strings.Repeat("a", 64) + ".com", err: true},
		// IPv4 addresses in the forms inet_aton reads (a resolver or a
		// tool's library may), which are no DNS names: no top-level
		// label is all digits or hexadecimal 0x.
		{in: "127.1", err: true},
		{in: "0x7f.1", err: true},
		{in: "2130706433", err: true},
		{in: "0177.0.0.1", err: true},
		{in: "10.0.0.0x1", err: true},
		{in: "*.10", err: true},
		// Letters only of ASCII: the Kelvin sign lower-cases to "k".
		{in: "\u212aexample.com", err: true},
		{in: "192.0.2.1.", want: Rule{Host: "192.0.2.1"}},
		{in: "1.example.com", want: Rule{Host: "1.example.com"}},
		{in: "example.0x1z", want: Rule{Host: "example.0x1z"}},
	}
	for _, tt := range tests {
		got, err := ParseRule(tt.in)
		if tt.err {
			if !errors.Is(err, ErrBadRule) {
				t.Errorf("ParseRule(%q) = %v, %v; want ErrBadRule", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

// A rule's string and JSON forms read back to the same rule.
func TestRuleStringAndJSON(t *testing.T) {
	for in, want := range map[string]string{
		"example.com":       "network:external:example.com",
		"example.com:8080":  "network:external:example.com:8080",
		"2001:db8::1":       "network:external:2001:db8::1",
		"[2001:db8::1]:443": "network:external:[2001:db8::1]:443",
		"*.example.com":     "network:external:*.example.com",
	} {
		r, err := ParseRule(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.String(); got != want {
			t.Errorf("%q.String() = %q, want %q", in, got, want)
		}
		b, err := json.Marshal([]Rule{r})
		if err != nil || string(b) != `["`+want+`"]` {
			t.Errorf("json of %q = %s, %v", in, b, err)
		}
		var back []Rule
		if err := json.Unmarshal(b, &back); err != nil || len(back) != 1 || back[0] != r {
			t.Errorf("json round trip of %q: %+v, %v", in, back, err)
		}
	}
	var r Rule
	if err := json.Unmarshal([]byte(`"network:external:ex*ample.com"`), &r); !errors.Is(err, ErrBadRule) {
		t.Errorf("a bad rule in JSON: %v", err)
	}
}

func TestRulePortsAndCovers(t *testing.T) {
	for _, c := range []struct {
		r, o   string
		covers bool
	}{
		{"example.com", "example.com", true},
		{"example.com", "example.com:443", true},
		{"example.com:443", "example.com", false},
		{"example.com", "example.com:22", false},
		{"*", "example.com:443", true},
		{"*:22", "example.com", false},
		{"*.example.com", "a.example.com", true},
		{"*.example.com", "*.a.example.com:80", true},
		{"*", "192.0.2.1", false},
		{"*", "*.example.com", true},
	} {
		r, o := mustRule(t, c.r), mustRule(t, c.o)
		if got := r.Covers(o); got != c.covers {
			t.Errorf("%s covers %s = %v, want %v", r, o, got, c.covers)
		}
	}
	g := mustRule(t, "example.com")
	if !g.Allows("example.com", 80) || !g.Allows("example.com", 443) || g.Allows("example.com", 22) {
		t.Error("a rule without a port allows 80 and 443 only")
	}
	d := mustRule(t, "example.com")
	if !d.DeniesPort(22) || !mustRule(t, "example.com:22").DeniesPort(22) || mustRule(t, "example.com:22").DeniesPort(443) {
		t.Error("a deny without a port covers every port")
	}
}

func TestParseNamedHost(t *testing.T) {
	for in, ok := range map[string]bool{"api.example.com": true, "*.example.com": true, "192.0.2.1": true, "*": false, "": false} {
		if _, err := ParseNamedHost(in); (err == nil) != ok {
			t.Errorf("ParseNamedHost(%q): %v", in, err)
		}
	}
}

func mustRule(t *testing.T, s string) Rule {
	t.Helper()
	r, err := ParseRule(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Whatever ParseRule accepts, its String reads back to the same rule, and
// a canonical host parses to itself.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"example.com", "*.example.com:8443", "[::1]:443", "2001:db8::1", "::ffff:1.2.3.4", "*", "a..b", "[1.2.3.4]:80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		back, err := ParseRule(r.String())
		if err != nil || back != r {
			t.Fatalf("%q: %+v reads back as %+v, %v", s, r, back, err)
		}
		if h, err := ParseHost(r.Host); err != nil || h != r.Host {
			t.Fatalf("%q: host %q is not canonical: %q, %v", s, r.Host, h, err)
		}
	})
}

// A port refused for its spelling says which spelling is wanted.
func TestParsePortSaysTheSpelling(t *testing.T) {
	for _, in := range []string{"0443", "+443", "99999", "0", "x"} {
		_, err := ParsePort(in)
		if err == nil || !strings.Contains(err.Error(), `"`+in+`" is not a number from 1 to 65535 written without a sign or leading zeros`) {
			t.Errorf("port %q: %v", in, err)
		}
	}
}
