package pathglob

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern string
		yes, no []string
	}{
		{"[draft]", []string{"[draft]"}, []string{"d", "r", "a", "[draft]/x", "draft"}},
		{"[draft]/*.txt", []string{"[draft]/a.txt", "[draft]/.txt"}, []string{"d/a.txt", "[draft]/x/a.txt"}},
		{"{a,b}", []string{"{a,b}"}, []string{"a", "b"}},
		{`a\*`, []string{`a\x`, `a\`}, []string{"a*", "ax"}},
		{"*", []string{"a", "", ".git"}, []string{"a/b"}},
		{"?", []string{"a"}, []string{"", "ab", "/"}},
		{"*/c", []string{"b/c", "/c"}, []string{"c", "a/b/c"}},
		{"**/.git/hooks", []string{".git/hooks", "a/.git/hooks", "a/b/.git/hooks", "home/u/x/.git/hooks"}, []string{".git/hooks/x", "a.git/hooks"}},
		{".git/modules/**/hooks", []string{".git/modules/hooks", ".git/modules/a/hooks", ".git/modules/a/b/hooks"}, []string{".git/modules/ahooks"}},
		{"a/**", []string{"a", "a/b", "a/b/c"}, []string{"ab", "b/a"}},
		{"**", []string{"", "a", "a/b"}, nil},
		{"/home/*/.ssh", []string{"/home/u/.ssh"}, []string{"/home/.ssh", "/home/u/v/.ssh", "/home/u/.ssh/id"}},
		{"/a/**.pem", []string{"/a/x.pem", "/a/b/x.pem"}, []string{"/b/x.pem"}},
	}
	for _, tt := range tests {
		for _, name := range tt.yes {
			if !Match(tt.pattern, name) {
				t.Errorf("Match(%q, %q) = false, want true", tt.pattern, name)
			}
		}
		for _, name := range tt.no {
			if Match(tt.pattern, name) {
				t.Errorf("Match(%q, %q) = true, want false", tt.pattern, name)
			}
		}
	}
}

func TestCompileTree(t *testing.T) {
	tests := []struct {
		pattern string
		yes, no []string
	}{
		{"/etc", []string{"/etc", "/etc/shadow"}, []string{"/etcx", "/"}},
		{"/etc/", []string{"/etc", "/etc/", "/etc/shadow"}, []string{"/et", "/etcx"}},
		{"/", []string{"/", "/etc"}, []string{"", "etc"}},
		{"/a/*/", []string{"/a/b", "/a/b/c"}, []string{"/a", "/ab"}},
		{"/n/[draft]", []string{"/n/[draft]", "/n/[draft]/s"}, []string{"/n/d", "/n/d/s"}},
		{"**/.git/hooks", []string{"/a/.git/hooks", "/a/.git/hooks/pre-commit"}, []string{"/a/.git/hooksx"}},
		{"~/x", []string{"~/x/y"}, []string{"/home/u/x"}},
	}
	for _, tt := range tests {
		p := Compile(tt.pattern, true)
		for _, name := range tt.yes {
			if !p.Match(name) {
				t.Errorf("tree %q: %q does not match", tt.pattern, name)
			}
		}
		for _, name := range tt.no {
			if p.Match(name) {
				t.Errorf("tree %q: %q matches", tt.pattern, name)
			}
		}
	}
}

func TestHasMeta(t *testing.T) {
	for pattern, want := range map[string]bool{"[draft]": false, "{a,b}": false, `a\b`: false, "a*": true, "a?": true, "**/x": true} {
		if got := HasMeta(pattern); got != want {
			t.Errorf("HasMeta(%q) = %v", pattern, got)
		}
	}
}

// A pattern without glob characters matches itself and nothing else; a
// tree pattern matches what the exact one does; a tree match of a literal pattern is the path or
// anything under it.
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{{"[draft]", "[draft]"}, {"**/.git/hooks", "a/.git/hooks"}, {"a/**", "a"}, {"*?**", "x/y"}, {`\[`, `\[`}, {"a**/b", "ab"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		exact, tree := Compile(pattern, false), Compile(pattern, true)
		if exact.Match(name) != Match(pattern, name) {
			t.Fatalf("Match(%q, %q) disagrees with the compiled pattern", pattern, name)
		}
		if exact.Match(name) && !strings.HasSuffix(pattern, "/") && !tree.Match(name) {
			t.Fatalf("%q matches %q exactly but not as a tree", pattern, name)
		}
		if !HasMeta(pattern) {
			if got, want := exact.Match(name), pattern == name; got != want {
				t.Fatalf("literal %q vs %q: match %v", pattern, name, got)
			}
			// A trailing slash names the same directory as without it.
			dir := strings.TrimRight(pattern, "/")
			under := name == dir || strings.HasPrefix(name, dir+"/")
			if dir == "" && pattern != "" {
				under = strings.HasPrefix(name, pattern)
			}
			if got := tree.Match(name); got != under {
				t.Fatalf("literal tree %q vs %q: match %v, want %v", pattern, name, got, under)
			}
		}
	})
}

// Within is a containment of whole path elements; "/" holds every
// absolute path.
func TestWithin(t *testing.T) {
	for _, c := range []struct {
		p, dir string
		want   bool
	}{
		{"/a/b", "/a", true},
		{"/a", "/a", true},
		{"/ab", "/a", false},
		{"/a", "/a/b", false},
		{"/anything", "/", true},
		{"/", "/", true},
		{"relative", "/", false},
	} {
		if got := Within(c.p, c.dir); got != c.want {
			t.Errorf("Within(%q, %q) = %v, want %v", c.p, c.dir, got, c.want)
		}
	}
}
