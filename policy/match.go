package policy

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
	"github.com/sandboxed-dev/sandboxed/internal/pathglob"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// Tier is a security tier after spec 003, plus TierUnknown for a tool with
// no security tag (spec 000: such a tool is high risk).
type Tier string

// The tiers, lowest risk first.
const (
	TierReadOnly    Tier = "read_only"
	TierWrite       Tier = "write"
	TierExecute     Tier = "execute"
	TierExternalAPI Tier = "external_api"
	TierUnknown     Tier = "unknown"
)

var tierRank = map[Tier]int{TierReadOnly: 1, TierWrite: 2, TierExecute: 3, TierExternalAPI: 4}

// TagTiers maps the security tags of spec 000 to the tiers of spec 003.
var TagTiers = map[string]Tier{"read": TierReadOnly, "write": TierWrite, "run": TierExecute}

// ToolTier returns a tool's security tier: the highest tier among its
// security tags (read, write, run; case-insensitive), raised by what its
// grants show: a write mount is at least write, an egress grant is
// external_api. Tags are the author's claim; grants are what the tool will
// get. A tool with no security tag is TierUnknown whatever its grants.
func ToolTier(tags []string, grants []permissions.Grant) Tier {
	best := Tier("")
	for _, t := range tags {
		if tier, ok := TagTiers[strings.ToLower(t)]; ok && tierRank[tier] > tierRank[best] {
			best = tier
		}
	}
	if best == "" {
		return TierUnknown
	}
	for _, g := range grants {
		var tier Tier
		switch {
		case g.Kind == permissions.KindMount && g.Mount.Write:
			tier = TierWrite
		case g.Kind == permissions.KindEgress:
			tier = TierExternalAPI
		}
		if tierRank[tier] > tierRank[best] {
			best = tier
		}
	}
	return best
}

func validTier(s string) bool {
	_, ok := tierRank[Tier(s)]
	return ok || Tier(s) == TierUnknown
}

// Approval words other than permission strings and tier:TIER.
const (
	ApproveAll           = "all"
	ApproveElevated      = string(tool.PrivilegeElevated)
	ApproveIsolationNone = "isolation-none"
	// ApproveIsolationLandlock lets the landlock tier stand in for the
	// process tier for one run (isolation.without-namespaces for all).
	ApproveIsolationLandlock = "isolation-landlock"
	ApproveEnvInherit        = "env-inherit"
	// ApproveCredentialPrefix starts the approval of one credential:
	// credential:NAME.
	ApproveCredentialPrefix = "credential:"
)

// ValidateApprovals checks --approve values: all, elevated, isolation-none, isolation-landlock,
// env-inherit, tier:TIER, credential:NAME, or a permission string. The CLI calls it before
// Decide, which ignores (and notes) values it does not understand.
func ValidateApprovals(approvals []string) error {
	for _, a := range approvals {
		switch {
		case a == ApproveAll, a == ApproveElevated, a == ApproveIsolationNone, a == ApproveIsolationLandlock, a == ApproveEnvInherit:
		case strings.HasPrefix(a, ApproveCredentialPrefix):
			if !validVarName(strings.TrimPrefix(a, ApproveCredentialPrefix)) {
				return fmt.Errorf("approval %q: want credential:NAME, NAME the credential's variable: %w", a, ErrInvalidApproval)
			}
		case strings.HasPrefix(a, "tier:"):
			if !validTier(strings.TrimPrefix(a, "tier:")) {
				return fmt.Errorf("approval %q: unknown tier (want read_only, write, execute, external_api or unknown): %w", a, ErrInvalidApproval)
			}
		default:
			if _, err := tool.ParsePermission(a); err != nil {
				return fmt.Errorf("approval %q: want all, elevated, isolation-none, isolation-landlock, env-inherit, tier:TIER, credential:NAME or a permission (%s): %w",
					a, tool.PermissionGrammar, ErrInvalidApproval)
			}
		}
	}
	return nil
}

func checkMatcher(s string) error {
	kind, val, ok := strings.Cut(s, ":")
	if !ok || val == "" {
		return fmt.Errorf("matcher %q: want tool:TAG, tier:TIER or name:TOOL", s)
	}
	switch kind {
	case "tool", "name":
		return nil
	case "tier":
		if !validTier(val) {
			return fmt.Errorf("matcher %q: unknown tier (want read_only, write, execute, external_api or unknown)", s)
		}
		return nil
	}
	return fmt.Errorf("matcher %q: want tool:TAG, tier:TIER or name:TOOL", s)
}

// matches reports whether the matcher selects the tool.
func (m Matcher) matches(name string, tags []string, tier Tier) bool {
	kind, val, _ := strings.Cut(string(m), ":")
	switch kind {
	case "tool":
		for _, t := range tags {
			if strings.EqualFold(t, val) {
				return true
			}
		}
	case "tier":
		return Tier(val) == tier
	case "name":
		return val == name
	}
	return false
}

// checkHostPattern checks a policy host pattern: netrule.ParseHost's
// grammar, a host without a port.
func checkHostPattern(s string) error {
	if _, err := netrule.ParseHost(s); err != nil {
		return fmt.Errorf("host %q: want a host name, an IP address, *.DOMAIN or * (%v)", s, err)
	}
	return nil
}

// hostCovers reports whether every host the grant pattern allows is
// matched by pattern (netrule.Covers).
func hostCovers(pattern, grant string) bool { return netrule.Covers(pattern, grant) }

// EnvDenied returns the index of the first environment.deny pattern that
// names the host variable name, or -1. A pattern is a name in which '*'
// stands for any run of characters and '?' for one (checkEnvPattern
// allows nothing else). The policy's decision on env: grants and the
// plan's scrubbing of an inherited environment both match with it.
func EnvDenied(patterns []string, name string) int {
	// The patterns hold no '/', which internal/pathglob's '*' does not
	// cross: a name with one is matched as if it were another character.
	name = strings.ReplaceAll(name, "/", "\x00")
	for i, pat := range patterns {
		if pathglob.Match(pat, name) {
			return i
		}
	}
	return -1
}

// checkEnvPattern checks an environment.deny pattern: letters, digits,
// '_', '*' and '?'. Anything else would be read by some glob grammar as
// syntax ('[' as a class), and a deny that means less than it says is a
// hole.
func checkEnvPattern(s string) error { return checkNamePattern("environment.deny", s) }

// checkNamePattern checks a variable-name pattern of the policy key key
// (environment.deny, credentials.deny, credentials.approve).
func checkNamePattern(key, s string) error {
	if s == "" {
		return fmt.Errorf("%s: empty pattern", key)
	}
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '*' || c == '?') {
			return fmt.Errorf("%s: pattern %q: write a variable name, with * for any run of characters and ? for one", key, s)
		}
	}
	return nil
}

func checkPathPattern(s string) error {
	return checkPathShape(s)
}

// checkPathShape checks what a path pattern must look like; the glob
// itself always compiles (internal/pathglob).
func checkPathShape(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty path pattern")
	case !(strings.HasPrefix(s, "/") || s == "~" || strings.HasPrefix(s, "~/") || strings.HasPrefix(s, "**/")):
		return fmt.Errorf("path pattern %q: want an absolute path, ~/PATH or **/NAME", s)
	case strings.Contains("/"+s+"/", "/../") || strings.Contains("/"+s+"/", "/./"):
		return fmt.Errorf("path pattern %q: write it without . and .. elements", s)
	case strings.Contains(s, "//"):
		return fmt.Errorf("path pattern %q: write it without empty elements (//)", s)
	}
	return nil
}

// pathRule is a compiled PathPattern.
type pathRule struct {
	list  string // e.g. "paths.deny"
	index int
	raw   string
	exp   string // raw with ~ expanded
	// re matches the path itself or anything under it. It is compiled on
	// first use: most paths are ruled out by prefix, and compiling every
	// rule of the policy cost each run a third of a millisecond.
	re       func() *pathglob.Pattern
	prefix   string // the longest literal directory before any glob; "" for **/ patterns
	literal  bool   // no glob characters: prefix is the whole path
	anywhere bool   // starts with **/
}

func (r pathRule) name() string { return fmt.Sprintf("%s[%d] %s", r.list, r.index, r.raw) }

// compileRules compiles the patterns of one list, once per home
// directory given (the home as given and, when it differs, with symlinks
// resolved), so that ~ rules match declared and resolved paths alike.
//
// A pattern that is not valid (only a Policy built in code can hold one)
// matches everything in the deny lists and nothing elsewhere: it fails
// closed.
func compileRules(list string, pats []PathPattern, homes []string) []pathRule {
	var out []pathRule
	denyList := strings.HasPrefix(list, "paths.deny")
	for i, p := range pats {
		s := string(p)
		if err := checkPathShape(s); err != nil {
			if denyList {
				out = append(out, pathRule{list: list, index: i, raw: s, re: matchAll, prefix: "/", exp: "/"})
			}
			continue
		}
		for _, home := range homes {
			isHome := s == "~" || strings.HasPrefix(s, "~/")
			if isHome && !filepath.IsAbs(home) {
				continue // no home directory: a ~ rule matches nothing
			}
			re := sync.OnceValue(func() *pathglob.Pattern { return compileGlob(s, home) })
			r := pathRule{list: list, index: i, raw: s, re: re, anywhere: strings.HasPrefix(s, "**/")}
			r.exp = expandHome(s, home)
			if !r.anywhere {
				if j := strings.IndexAny(r.exp, pathglob.Meta); j >= 0 {
					r.prefix = filepath.Dir(r.exp[:j+1])
				} else {
					r.prefix, r.literal = filepath.Clean(r.exp), true
				}
			}
			out = append(out, r)
			if !isHome {
				break // the same for every home
			}
		}
	}
	return out
}

var matchAll = sync.OnceValue(func() *pathglob.Pattern { return pathglob.Compile("**", false) })

// matches reports whether p is the rule's path or under it.
func (r pathRule) matches(p string) bool {
	if p == "" {
		return false
	}
	if !r.anywhere && r.prefix != "" && filepath.IsAbs(p) && !under(p, r.prefix) {
		return false // every match starts with the literal prefix
	}
	return r.re().Match(p)
}

// inside reports whether the rule can match something strictly under p
// (p is a parent of a protected path).
func (r pathRule) inside(p string) bool {
	if p == "" || r.anywhere {
		return false
	}
	return under(r.prefix, p) && (r.prefix != p || !r.literal)
}

// masksUnder returns what a glob rule matches strictly under dir, as
// patterns relative to dir, for a rule that does not match dir itself.
// It looks past the rule's literal prefix: /home/*/.ssh matches ".ssh"
// under /home/v although its prefix, /home, is above it. ok is false
// when the rule may match under dir but cannot be written relative to it
// (a "**" inside an element, such as /data/**.pem, whose run may cross
// dir's own elements): the caller must fail closed.
func (r pathRule) masksUnder(dir string) (rels []string, ok bool) {
	pat := strings.Split(strings.Trim(r.exp, "/"), "/")
	var elems []string
	if d := strings.Trim(dir, "/"); d != "" {
		elems = strings.Split(d, "/")
	}
	ok = true
	seen := map[string]bool{}
	// Each call is a suffix of both lists: visiting each pair once keeps
	// rules with many "**" linear in their length times dir's depth.
	visited := map[[2]int]bool{}
	var walk func(pat, elems []string)
	walk = func(pat, elems []string) {
		if k := [2]int{len(pat), len(elems)}; visited[k] {
			return
		} else {
			visited[k] = true
		}
		switch {
		case !ok || len(pat) == 0:
			return // the rule matched dir or above it: not this function's case
		case len(elems) == 0:
			if rel := strings.Join(pat, "/"); !seen[rel] {
				seen[rel] = true
				rels = append(rels, rel)
			}
		case pat[0] == "**":
			walk(pat[1:], elems) // the ** matches no more of dir
			walk(pat, elems[1:]) // it matches dir's next element too
		case strings.Contains(pat[0], "**"):
			// What the element matches starts with a match of the part
			// before its "**", within dir's next element; where that
			// cannot be, the rule matches nothing here.
			pre, _, _ := strings.Cut(pat[0], "**")
			if pathglob.Match(pre+"*", elems[0]) {
				ok = false
			}
		case pathglob.Match(pat[0], elems[0]):
			walk(pat[1:], elems[1:])
		}
	}
	walk(pat, elems)
	if !ok {
		return nil, false
	}
	return rels, true
}

// under reports whether p is dir or under dir.
func under(p, dir string) bool { return pathglob.Within(p, dir) }

func expandHome(s, home string) string {
	if s == "~" {
		return home
	}
	if strings.HasPrefix(s, "~/") {
		return filepath.Join(home, s[2:])
	}
	return s
}

// compileGlob compiles a path glob (internal/pathglob's grammar, with ~
// expanded) into a pattern matching the path or anything under it.
func compileGlob(s, home string) *pathglob.Pattern {
	return pathglob.Compile(expandHome(s, home), true)
}

// globMatch matches a SourceRule path glob against a definition path.
func globMatch(g Glob, p, home string) bool {
	return p != "" && compileGlob(string(g), home).Match(p)
}

// validVarName reports whether s is an environment variable name.
func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || (i > 0 && c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}
