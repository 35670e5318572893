package policy

import (
	"testing"
)

// The prefix fast path agrees with the compiled glob.
func FuzzRuleMatchesAgreesWithGlob(f *testing.F) {
	for _, s := range [][2]string{{"/etc/shadow", "/etc/shadow/x"}, {"~/.ssh/**", "/home/a/.ssh/id"}, {"/run/user/*/bus", "/run/user/1/bus"}, {"/etc/", "/etc"}, {"**/.git/hooks", "/a/.git/hooks/x"}, {"/a/[b]", "/a/[b]"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pat, p string) {
		if checkPathPattern(pat) != nil {
			return
		}
		for _, r := range compileRules("paths.deny", []PathPattern{PathPattern(pat)}, []string{"/home/a"}) {
			re := compileGlob(pat, "/home/a")
			if got, want := r.matches(p), p != "" && re.Match(p); got != want {
				t.Fatalf("pattern %q path %q: matches %v, glob %v", pat, p, got, want)
			}
		}
	})
}
