package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/pathglob"
)

// The walks of the host tree behind the policy's masks: gatherMasks
// expands them before the plan is built, and createdProtected looks again
// after the run. They read the host; the planner (plan.go, masks.go's
// planMasks) does not.

const (
	// maskWalkLimit bounds the walk that expands policy masks with globs.
	maskWalkLimit = 50000
	// maskWalkTime bounds the time of one such walk.
	maskWalkTime = 5 * time.Second
)

// protectedWatch is a protected path or glob under a write grant that
// could not all be masked, and what matched it when the run was planned.
type protectedWatch struct {
	root    string          // the grant's host directory
	target  string          // the grant as the sandbox saw it
	pattern string          // relative to root, e.g. **/.git/hooks
	rule    string          // the policy rule that protects it
	before  map[string]bool // matches at plan time, relative to root
}

// createdProtected returns a warning for each path matching a watch that
// the run created, walking each grant once whatever the number of
// patterns.
func createdProtected(watches []protectedWatch) []string {
	byRoot := map[string][]protectedWatch{}
	var roots []string
	for _, w := range watches {
		if _, ok := byRoot[w.root]; !ok {
			roots = append(roots, w.root)
		}
		byRoot[w.root] = append(byRoot[w.root], w)
	}
	var out []string
	seen := map[string]bool{}
	warn := func(w protectedWatch, rel string) {
		p := filepath.Join(w.target, rel)
		if seen[p] {
			return // nested or repeated grants see the same path
		}
		seen[p] = true
		out = append(out, fmt.Sprintf("the tool created %q, which the policy protects (%s); it did not exist when the run was planned, so it was not protected: review it before you use it", p, w.rule))
	}
	for _, root := range roots {
		var globs []protectedWatch
		for _, w := range byRoot[root] {
			if pathglob.HasMeta(w.pattern) {
				globs = append(globs, w)
			} else if _, err := os.Lstat(filepath.Join(root, w.pattern)); err == nil {
				warn(w, w.pattern)
			}
		}
		if len(globs) == 0 {
			continue
		}
		patterns := make([]string, len(globs))
		for i, w := range globs {
			patterns[i] = w.pattern
		}
		after, unreadable, err := walkMasks(root, patterns)
		if err != nil {
			out = append(out, fmt.Sprintf("could not check %q after the run for new protected paths (%s): %v", globs[0].target, strings.Join(patterns, ", "), err))
			continue
		}
		for _, d := range unreadable {
			rel, _ := filepath.Rel(root, d)
			out = append(out, fmt.Sprintf("could not look inside %q after the run (permission denied): a protected path (%s) could be there unseen", filepath.Join(globs[0].target, rel), strings.Join(patterns, ", ")))
		}
		for i, w := range globs {
			for _, rel := range after[i] {
				if !w.before[rel] {
					warn(w, rel)
				}
			}
		}
	}
	return out
}

// expandMask returns the paths under root (relative to it) that match the
// slash-separated pattern, where "**" matches any number of directories.
// Symlinks are not followed.
func expandMask(root, pattern string) ([]string, error) {
	if !pathglob.HasMeta(pattern) {
		if _, err := os.Lstat(filepath.Join(root, pattern)); err != nil {
			return nil, nil
		}
		return []string{pattern}, nil
	}
	m, err := expandMasks(root, []string{pattern})
	if err != nil {
		return nil, err
	}
	return m[0], nil
}

// expandMasks is expandMask for several glob patterns in one walk: the
// matches of patterns[i] are in the result's [i]. A pattern that starts
// with "**/" is a policy rule that applies anywhere: it is matched against
// the whole host path, so that a grant of a repository's .git itself still
// has its hooks and config protected.
func expandMasks(root string, patterns []string) ([][]string, error) {
	out, _, err := walkMasks(root, patterns)
	return out, err
}

// walkMasks is expandMasks, also returning the directories under root it
// could not read.
func walkMasks(root string, patterns []string) (out [][]string, unreadable []string, err error) {
	out = make([][]string, len(patterns))
	compiled := make([]maskPattern, len(patterns))
	for i, p := range patterns {
		compiled[i] = compileMask(p)
	}
	deadline := time.Now().Add(maskWalkTime)
	n := 0
	// Depth first, directories read in batches: a directory with millions
	// of entries (made by a tool, before the post-run check) costs the
	// walk no more than the limit allows. Symlinks are not followed. Each
	// directory carries the patterns still looking beneath it: a pattern
	// does not look inside its own matches (as a walk of its own would
	// not), the others do.
	type pending struct {
		dir    string
		active []int // indexes into patterns
	}
	all := make([]int, len(patterns))
	for i := range all {
		all[i] = i
	}
	stack := []pending{{root, all}}
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		dir := top.dir
		// Never through a symlink, even one that replaced a directory
		// since it was read.
		f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			if dir != root && errors.Is(err, fs.ErrPermission) {
				// The tool may own it and have made it unreadable to hide
				// what it holds: the caller hears of it.
				unreadable = append(unreadable, dir)
			}
			continue
		}
		for {
			batch, err := f.ReadDir(256)
			for _, de := range batch {
				if n++; n > maskWalkLimit {
					f.Close()
					return nil, nil, fmt.Errorf("more than %d entries to check", maskWalkLimit)
				}
				path := filepath.Join(dir, de.Name())
				rel, _ := filepath.Rel(root, path)
				var still []int
				for _, i := range top.active {
					if compiled[i].match(rel, path) {
						out[i] = append(out[i], rel)
					} else {
						still = append(still, i)
					}
				}
				if len(still) > 0 && de.IsDir() {
					stack = append(stack, pending{path, still})
				}
			}
			if err != nil || len(batch) == 0 {
				break
			}
			if time.Now().After(deadline) {
				f.Close()
				return nil, nil, fmt.Errorf("more than %v to check", maskWalkTime)
			}
		}
		f.Close()
	}
	for i := range out {
		sort.Strings(out[i])
	}
	sort.Strings(unreadable)
	return out, unreadable, nil
}

// maskPattern is a mask's pattern relative to the directory it protects,
// compiled once. It is in the policy's own glob grammar
// (internal/pathglob), so a mask hides exactly what the decision denied.
type maskPattern struct {
	glob *pathglob.Pattern
	// baseOnly: a "**/NAME" pattern whose NAME is one element matches
	// what NAME matches as a base name (a '*' never crosses a '/'): it is
	// matched against the entry's name alone, the cost of a secret mask
	// per entry.
	baseOnly bool
	// anywhere: any other "**/…" pattern is a policy rule that applies
	// anywhere, matched against the whole host path.
	anywhere bool
}

func compileMask(p string) maskPattern {
	if name, ok := strings.CutPrefix(p, "**/"); ok && !strings.Contains(name, "/") && !strings.Contains(name, "**") {
		return maskPattern{glob: pathglob.Compile(name, false), baseOnly: true}
	}
	return maskPattern{glob: pathglob.Compile(p, false), anywhere: strings.HasPrefix(p, "**/")}
}

// match reports whether the entry at rel (relative to the protected
// directory; host path path) is what the pattern names. What is beneath a
// match is protected with it, but is not itself a match.
func (m maskPattern) match(rel, path string) bool {
	switch {
	case m.baseOnly:
		return m.glob.Match(filepath.Base(rel))
	case m.anywhere:
		return m.glob.Match(strings.TrimPrefix(path, "/"))
	}
	return m.glob.Match(rel)
}
