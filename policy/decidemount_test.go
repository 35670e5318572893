package policy

import (
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/permissions"
)

func TestInWorkingDir(t *testing.T) {
	for _, tc := range []struct {
		name               string
		req                Request
		paths              []string
		wantAll, wantBroad bool
	}{
		{"inside", Request{Cwd: "/src/proj", Home: "/home/u"}, []string{"/src/proj/a"}, true, false},
		{"the directory itself", Request{Cwd: "/src/proj", Home: "/home/u"}, []string{"/src/proj"}, true, false},
		{"resolved outside", Request{Cwd: "/src/proj", Home: "/home/u"}, []string{"/src/proj/a", "/etc/a"}, false, false},
		{"resolved cwd counts", Request{Cwd: "/src/link", CwdResolved: "/data/proj", Home: "/home/u"}, []string{"/data/proj/x"}, true, false},
		{"sibling prefix", Request{Cwd: "/src/proj", Home: "/home/u"}, []string{"/src/project"}, false, false},
		{"root is broad", Request{Cwd: "/", Home: "/home/u"}, []string{"/etc"}, false, true},
		{"home is broad", Request{Cwd: "/home/u", Home: "/home/u"}, []string{"/home/u/.ssh"}, false, true},
		{"above home is broad", Request{Cwd: "/home", Home: "/home/u"}, []string{"/home/u/x"}, false, true},
		{"resolved home is broad", Request{Cwd: "/data/u", Home: "/home/u", HomeResolved: "/data/u"}, []string{"/data/u/x"}, false, true},
		{"under home is narrow", Request{Cwd: "/home/u/proj", Home: "/home/u"}, []string{"/home/u/proj/x"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all, broad := inWorkingDir(tc.req, tc.paths)
			if all != tc.wantAll || broad != tc.wantBroad {
				t.Errorf("inWorkingDir = %v, %v; want %v, %v", all, broad, tc.wantAll, tc.wantBroad)
			}
		})
	}
}

func TestAllowedWrite(t *testing.T) {
	rules := compileRules("paths.allow-write", []PathPattern{"/srv/out", "~/cache/**"}, []string{"/home/u"})
	for _, tc := range []struct {
		paths []string
		want  string // the rule's raw pattern, "" for none
	}{
		{[]string{"/srv/out/a"}, "/srv/out"},
		{[]string{"/home/u/cache/x"}, "~/cache/**"},
		{[]string{"/srv/out/link", "/home/u/cache/real"}, "/srv/out"},
		{[]string{"/srv/out/link", "/etc/real"}, ""},
		{[]string{"/srv/outer"}, ""},
		{[]string{"/tmp/x"}, ""},
	} {
		got := ""
		if r := allowedWrite(rules, tc.paths); r != nil {
			got = r.raw
		}
		if got != tc.want {
			t.Errorf("allowedWrite(%q) = %q, want %q", tc.paths, got, tc.want)
		}
	}
}

func TestDeniedMountAndMasks(t *testing.T) {
	homes := []string{"/home/u"}
	rules := compiledPaths{
		deny:      compileRules("paths.deny", []PathPattern{"~/.ssh", "**/.env"}, homes),
		denyWrite: compileRules("paths.deny-write", []PathPattern{"~/.bashrc"}, homes),
	}
	for _, tc := range []struct {
		name      string
		m         permissions.Mount
		wantDeny  string // rule and path, "" for none
		wantMasks []string
		wantHolds int
	}{
		{name: "read of a denied path", m: permissions.Mount{HostPath: "/home/u/.ssh/id", Target: "/x"}, wantDeny: "paths.deny[0] ~/.ssh /home/u/.ssh/id"},
		{name: "read resolving to a denied path", m: permissions.Mount{HostPath: "/home/u/k", Resolved: "/home/u/.ssh", Target: "/x"}, wantDeny: "paths.deny[0] ~/.ssh /home/u/.ssh"},
		{name: "read of a deny-write path", m: permissions.Mount{HostPath: "/home/u/.bashrc", Target: "/x"},
			wantMasks: []string{"/x/**/.env hide"}},
		{name: "write of a deny-write path", m: permissions.Mount{HostPath: "/home/u/.bashrc", Target: "/x", Write: true}, wantDeny: "paths.deny-write[0] ~/.bashrc /home/u/.bashrc"},
		{name: "home holds .ssh", m: permissions.Mount{HostPath: "/home/u", Target: "/h", Write: true},
			wantMasks: []string{"/h/.ssh hide", "/h/**/.env hide", "/h/.bashrc ro"}, wantHolds: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paths := mountPaths(&tc.m)
			r, p, _ := deniedMount(rules, tc.m.Write, paths)
			got := ""
			if r != nil {
				got = r.name() + " " + p
			}
			if got != tc.wantDeny {
				t.Fatalf("deniedMount = %q, want %q", got, tc.wantDeny)
			}
			if r != nil {
				return
			}
			pm := protectedMasks(rules, &tc.m, paths)
			var masks []string
			for _, mk := range pm.masks {
				how := "ro"
				if mk.Hide {
					how = "hide"
				}
				masks = append(masks, mk.Path+" "+how)
			}
			if strings.Join(masks, ",") != strings.Join(tc.wantMasks, ",") || len(pm.holds) != tc.wantHolds || pm.unmaskable != nil {
				t.Errorf("protectedMasks = %q, %d holds, unmaskable %v; want %q, %d holds", masks, len(pm.holds), pm.unmaskable, tc.wantMasks, tc.wantHolds)
			}
		})
	}
}
