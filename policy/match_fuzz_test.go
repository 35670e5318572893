package policy

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/internal/pathglob"
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

// What a rule matches under a granted directory is masked there: when the
// rule matches DIR/REL but not DIR, one of the masks masksUnder gives for
// DIR covers REL (as the plan walks it: a match hides its whole subtree),
// or masksUnder says the rule cannot be masked and the grant is refused.
func FuzzMasksUnderCoverWhatTheRuleMatches(f *testing.F) {
	for _, s := range [][3]string{{"/home/*/.ssh", "/home/v", ".ssh/id"}, {"/data/**/secret", "/data/a/b", "c/secret"}, {"/data/a*/s", "/data/ab", "s"}, {"/data/*/x/*/s", "/data/a/x", "b/s"}, {"/d/**.pem", "/d/a", "b.pem"}, {"/d/x**", "/d/y", "x"}, {"/d/a*b**c/e", "/d/ab", "c/e"}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, pat, dir, rel string) {
		if checkPathPattern(pat) != nil || !strings.HasPrefix(pat, "/") || !filepath.IsAbs(dir) || filepath.Clean(dir) != dir ||
			rel == "" || filepath.IsAbs(rel) || filepath.Clean(rel) != rel || strings.HasPrefix(rel, "..") {
			return
		}
		for _, r := range compileRules("paths.deny", []PathPattern{PathPattern(pat)}, []string{"/home/a"}) {
			if r.literal || r.matches(dir) || !r.matches(filepath.Join(dir, rel)) {
				continue
			}
			rels, ok := r.masksUnder(dir)
			if !ok {
				continue
			}
			covered := false
			for _, m := range rels {
				covered = covered || pathglob.Compile(m, true).Match(rel)
			}
			if !covered {
				t.Fatalf("rule %q matches %q under %q, but its masks there %q do not", pat, rel, dir, rels)
			}
		}
	})
}
