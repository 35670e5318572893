package learn

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// fakeHost is a host of a few paths; a path ending in / is a directory.
type fakeHost []string

func (h fakeHost) Stat(path string) (bool, bool) {
	for _, p := range h {
		if p == path {
			return true, false
		}
		if p == path+"/" {
			return true, true
		}
	}
	return false, false
}

func rd(p string) isolation.Access { return isolation.Access{Op: isolation.AccessRead, Path: p} }
func ls(p string) isolation.Access {
	return isolation.Access{Op: isolation.AccessRead, Path: p, Dir: true}
}
func wr(p string) isolation.Access { return isolation.Access{Op: isolation.AccessWrite, Path: p} }
func mk(p string) isolation.Access {
	return isolation.Access{Op: isolation.AccessWrite, Path: p, Dir: true}
}
func ex(p string) isolation.Access { return isolation.Access{Op: isolation.AccessExec, Path: p} }
func sysGiven(p string) bool {
	return within(p, "/usr") || within(p, "/tmp") || within(p, "/etc/ssl/certs")
}
func conn(h string, port int, v string) sandbox.EgressEntry {
	return sandbox.EgressEntry{Host: h, Port: port, Verdict: v}
}

func TestMakeDraft(t *testing.T) {
	host := fakeHost{
		"/data/in/", "/data/in/a.txt", "/data/in/b.txt", "/data/in/sub/", "/data/in/sub/c.txt",
		"/data/out/", "/data/out/old.txt", "/home/u/", "/home/u/.config/", "/home/u/.config/tool.conf",
		"/home/u/.ssh/id_rsa", "/usr/bin/cat", "/work/", "/work/notes.txt", "/work/bin/run",
	}
	params := []Param{{Name: "IN", Path: "/data/in"}, {Name: "OUT", Path: "/data/out"}, {Name: "SUB", Path: "/data/in/sub"}}
	sc := Scene{View: []string{"/data/in", "/data/out", "/work", "/home/u/.config"}, Params: params, Cwd: "/work", Home: "/home/u", Given: sysGiven, Host: host}
	cases := []struct {
		name    string
		acc     []isolation.Access
		conns   []sandbox.EgressEntry
		want    []string
		hidden  []string
		refused []string
	}{
		{name: "one file read is the file, parameterised",
			acc: []isolation.Access{rd("/data/in/a.txt"), ex("/usr/bin/cat")}, want: []string{"filesystem:read:{IN}/a.txt"}},
		{name: "two files of one directory fold to it",
			acc: []isolation.Access{rd("/data/in/a.txt"), rd("/data/in/b.txt")}, want: []string{"filesystem:read:{IN}"}},
		{name: "a listing is the directory",
			acc: []isolation.Access{ls("/data/in")}, want: []string{"filesystem:read:{IN}"}},
		{name: "the longest parameter names the path",
			acc: []isolation.Access{rd("/data/in/sub/c.txt")}, want: []string{"filesystem:read:{SUB}/c.txt"}},
		{name: "a created file grants its directory",
			acc: []isolation.Access{wr("/data/out/result.txt")}, want: []string{"filesystem:write:{OUT}"}},
		{name: "an existing file written is the file",
			acc: []isolation.Access{wr("/data/out/old.txt")}, want: []string{"filesystem:write:{OUT}/old.txt"}},
		{name: "a directory made is the directory, and covers what is created in it",
			acc: []isolation.Access{mk("/data/out/new"), wr("/data/out/new/x")}, want: []string{"filesystem:write:{OUT}/new"}},
		{name: "read and written: the write only",
			acc: []isolation.Access{rd("/data/out/old.txt"), wr("/data/out/old.txt")}, want: []string{"filesystem:write:{OUT}/old.txt"}},
		{name: "a read under a written directory is covered",
			acc: []isolation.Access{rd("/data/out/old.txt"), wr("/data/out/result.txt")}, want: []string{"filesystem:write:{OUT}"}},
		{name: "system directories and /tmp need nothing",
			acc: []isolation.Access{rd("/usr/lib/x.so"), wr("/tmp/scratch"), rd("/etc/ssl/certs/ca.pem"), rd("/proc/self/status")}, want: []string{}},
		{name: "a path no parameter names is relative to the working directory, or under ~",
			acc:  []isolation.Access{rd("/work/notes.txt"), ex("/work/bin/run"), rd("/home/u/.config/tool.conf")},
			want: []string{"filesystem:read:./bin/run", "filesystem:read:./notes.txt", "filesystem:read:~/.config/tool.conf"}},
		{name: "a path the sandbox did not show is hidden, a missing one ignored",
			acc:  []isolation.Access{rd("/home/u/.ssh/id_rsa"), rd("/home/u/.cache/nothing"), rd("/data/in/missing")},
			want: []string{}, hidden: []string{"/home/u/.ssh/id_rsa"}},
		{name: "hosts: 80 and 443 without a port, others with, refused listed apart",
			conns: []sandbox.EgressEntry{conn("api.example.com", 443, "allow"), conn("api.example.com", 80, "allow"),
				conn("files.example.org", 8443, "allow"), conn("10.0.0.1", 80, "deny")},
			want:    []string{"network:external:api.example.com", "network:external:files.example.org:8443"},
			refused: []string{"10.0.0.1:80"}},
		{name: "everything of the done-when tool",
			acc:   []isolation.Access{ex("/bin/bash"), rd("/data/in/a.txt"), wr("/data/out/result.txt"), ex("/usr/bin/curl"), rd("/etc/nsswitch.conf")},
			conns: []sandbox.EgressEntry{conn("203.0.113.7", 8080, "allow")},
			want:  []string{"filesystem:read:{IN}/a.txt", "filesystem:write:{OUT}", "network:external:203.0.113.7:8080"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := MakeDraft(tc.acc, tc.conns, sc)
			if !reflect.DeepEqual(d.Permissions, tc.want) {
				t.Errorf("permissions\n got %q\nwant %q", d.Permissions, tc.want)
			}
			if !reflect.DeepEqual(d.Hidden, tc.hidden) {
				t.Errorf("hidden: got %q, want %q", d.Hidden, tc.hidden)
			}
			if !reflect.DeepEqual(d.Refused, tc.refused) {
				t.Errorf("refused: got %q, want %q", d.Refused, tc.refused)
			}
			for _, p := range d.Permissions {
				if strings.Contains(p, "//") {
					t.Errorf("%q: doubled slash", p)
				}
			}
		})
	}
}
