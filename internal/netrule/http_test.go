package netrule

import "testing"

func TestCheckHTTPRule(t *testing.T) {
	for _, bad := range []HTTPRule{
		{Host: "*"}, {Host: ""}, {Host: "a.test", Methods: []string{"get"}}, {Host: "a.test", Methods: []string{""}},
		{Host: "a.test", Methods: []string{"GET /"}}, {Host: "a.test", Paths: []string{"a/"}}, {Host: "a.test", Paths: []string{"/a/../b"}},
		{Host: "a.test", Paths: []string{"/a/.."}}, {Host: "a.test", Paths: []string{"/a%2fb"}}, {Host: "a.test", Paths: []string{"/a%41"}},
		{Host: "a.test", Paths: []string{"/a?b"}}, {Host: "a.test", Paths: []string{"/a#b"}}, {Host: "a.test", Paths: []string{`/a\b`}},
	} {
		if _, err := CheckHTTPRule(bad); err == nil {
			t.Errorf("CheckHTTPRule(%+v) accepted", bad)
		}
	}
	r, err := CheckHTTPRule(HTTPRule{Host: "API.Example.Test.", Methods: []string{"GET"}, Paths: []string{"/repos/", "/a.b/..c"}})
	if err != nil || r.Host != "api.example.test" {
		t.Fatalf("CheckHTTPRule = %+v, %v", r, err)
	}
	if !r.Admits("GET", "/repos/x") || r.Admits("POST", "/repos/x") || r.Admits("GET", "/other") {
		t.Errorf("%s admits wrongly", r.Describe())
	}
}

func TestRequestPath(t *testing.T) {
	for in, want := range map[string]string{"": "/", "/a%20b": "/a b", "/a/b/": "/a/b/", "/a..b": "/a..b", "/a;v=1/b": "/a;v=1/b", "/a/..b;c": "/a/..b;c"} {
		if got, bad := RequestPath(in); bad || got != want {
			t.Errorf("RequestPath(%q) = %q, %v", in, got, bad)
		}
	}
	// A dot segment with path parameters ("..;", "..;x=1") is one to
	// servers that drop a segment's parameters before resolving dots
	// (Tomcat, Spring): /public/..;/admin is /admin there.
	for _, in := range []string{"/a/../b", "/a/%2e%2e/b", "/a%2fb", "/a%5Cb", `/a\b`, "/a%zz", "a", "/./",
		"/public/..;/admin", "/public/%2e%2e;x=1/admin", "/public/.;/x", "/a/..%3b/b"} {
		if _, bad := RequestPath(in); !bad {
			t.Errorf("RequestPath(%q) not ambiguous", in)
		}
	}
}

// A path prefix a rule accepts is a request path that reads as itself, so
// the proxy compares like with like.
func FuzzHTTPPath(f *testing.F) {
	for _, s := range []string{"/repos/", "/a%20b", "/a/../b", "/a..b", "/", `/a\b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if CheckHTTPPath(p) != nil {
			return
		}
		if got, bad := RequestPath(p); bad || got != p {
			t.Fatalf("rule path %q reads as request path %q (ambiguous %v)", p, got, bad)
		}
	})
}
