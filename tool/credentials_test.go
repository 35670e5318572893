package tool

import (
	"reflect"
	"testing"
)

var credentialCases = []struct {
	name string
	src  string
	want []string
}{
	{"no source", "description: d\nbash: echo\nsandboxed:\n  credentials:\n    - name: T\n      hosts: [a.test]\n",
		[]string{"5:7: credential has no source"}},
	{"two sources", "description: d\nbash: echo\nsandboxed:\n  credentials:\n    - env: T\n      file: /t\n      hosts: [a.test]\n",
		[]string{"6:7: credential has two sources (env and file)"}},
	{"no hosts", "description: d\nbash: echo\nsandboxed:\n  credentials:\n    - env: T\n",
		[]string{"5:7: credential has no hosts"}},
	{"every host", "description: d\nbash: echo\nsandboxed:\n  credentials:\n    - env: T\n      hosts: [\"*\"]\n",
		[]string{"6:15: host \"*\": name a host"}},
	{"parameter host", "description: d\nbash: echo\nsandboxed:\n  credentials:\n    - env: T\n      hosts: [\"{H}\"]\n",
		[]string{"6:15: host \"{H}\": parameters are not substituted here"}},
	{"file needs a name", "description: d\nbash: echo\nsandboxed:\n  credentials:\n    - file: /etc/t\n      hosts: [a.test]\n",
		[]string{"5:7: a credential from a file needs a name"}},
	{"relative file", "description: d\nbash: echo\nsandboxed:\n  credentials:\n    - name: T\n      file: t\n      hosts: [a.test]\n",
		[]string{"6:13: credential file \"t\" is not an absolute path"}},
	{"command as a string", "description: d\nbash: echo\nsandboxed:\n  credentials:\n    - name: T\n      command: pass show t\n      hosts: [a.test]\n",
		[]string{"6:16: credential command must be a list"}},
	{"value in the definition", "description: d\nbash: echo\nsandboxed:\n  credentials:\n    - name: T\n      value: abc\n      hosts: [a.test]\n",
		[]string{"6:7: unknown key value in a credential (hint: a credential's value never appears in a definition"}},
	{"twice", "description: d\nbash: echo\nsandboxed:\n  credentials:\n    - env: T\n      hosts: [a.test]\n    - env: T\n      hosts: [b.test]\n",
		[]string{"7:7: credential T is declared twice"}},
	{"also an env grant", "description: d\nbash: echo\nsecurity:\n  required-permissions: [\"env:T\"]\nsandboxed:\n  credentials:\n    - env: T\n      hosts: [a.test]\n",
		[]string{"7:7: credential T is also granted as env:T"}},
	{"source also an env grant", "description: d\nbash: echo\nsecurity:\n  required-permissions: [\"env:SRC\"]\nsandboxed:\n  credentials:\n    - name: T\n      env: SRC\n      hosts: [a.test]\n",
		[]string{"7:7: credential T is also granted as env:SRC"}},
	{"also a variable", "description: d\nbash: echo\nenvironment:\n  variables:\n    T: x\nsandboxed:\n  credentials:\n    - env: T\n      hosts: [a.test]\n",
		[]string{"8:7: credential T is also set as an environment variable"}},
	{"http rule bad method and path", "description: d\nbash: echo\nsandboxed:\n  http:\n    - host: a.test\n      methods: [get]\n      paths: [a/, /b/../c]\n",
		[]string{"6:16: http rule method \"get\" is not an HTTP method", "7:14: http rule path \"a/\" is not a plain path prefix",
			"7:14: http rule path \"/b/../c\" is not a plain path prefix"}},
	{"http rule query, fragment and bad host", "description: d\nbash: echo\nsandboxed:\n  http:\n    - host: a..test\n      paths: [\"/a?b=1\", \"/a#x\"]\n",
		[]string{"5:13: host \"a..test\": empty label: invalid network rule (hint: name the host the rule narrows, such as api.example.com or *.example.com)",
			"6:14: http rule path \"/a?b=1\" is not a plain path prefix (hint: write path prefixes such as /repos/: starting with /, without %-escapes, a query (?), a fragment (#)",
			"6:14: http rule path \"/a#x\" is not a plain path prefix"}},
	{"http rule without host", "description: d\nbash: echo\nsandboxed:\n  http:\n    - methods: [GET]\n",
		[]string{"5:7: HTTP rule has no host"}},
}

func TestParseCredentials(t *testing.T) {
	for _, c := range credentialCases {
		t.Run(c.name, func(t *testing.T) {
			parseErr(t, c.src, c.want...)
		})
	}
	def, err := Parse([]byte("description: d\nbash: echo\nsandboxed:\n  credentials:\n    - env: GITHUB_TOKEN\n      hosts: [API.github.com]\n    - name: K\n      command: [pass, show, k]\n      hosts: [\"*.example.com\"]\n  http:\n    - host: api.github.com\n      methods: [GET]\n      paths: [/repos/]\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []Credential{{Env: "GITHUB_TOKEN", Hosts: []string{"API.github.com"}}, {Name: "K", Command: []string{"pass", "show", "k"}, Hosts: []string{"*.example.com"}}}
	if !reflect.DeepEqual(def.Sandboxed.Credentials, want) {
		t.Errorf("credentials = %+v", def.Sandboxed.Credentials)
	}
	if c := def.Sandboxed.Credentials[1]; c.VarName() != "K" || c.SourceKind() != "command" {
		t.Errorf("VarName, SourceKind = %s, %s", c.VarName(), c.SourceKind())
	}
	if r := def.Sandboxed.HTTP; len(r) != 1 || r[0].Host != "api.github.com" || r[0].Paths[0] != "/repos/" {
		t.Errorf("http = %+v", r)
	}
}
