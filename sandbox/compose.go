package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sandboxed-dev/sandboxed/internal/xdg"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// Composition: a use-tool step runs another tool's steps inside the
// caller's sandbox, so the sub-tool can never get more than the caller
// has. It must not even ask for more: every grant the sub-tool resolves to
// must be covered by a grant of the caller (a path under a caller path,
// write only under a write grant; a host the caller may reach on the same
// ports; the same localhost port; the same variable), or the run is
// refused before anything runs, naming what the sub-tool asks for beyond
// its caller. A sub-tool asking for elevated privilege or an inherited
// environment the caller does not have is refused the same way.
//
// Dependencies (the definition's dependencies:) are checked before
// anything runs too: a required tool missing from its scope, or present in
// a version outside its constraint, refuses the run; an optional one adds
// a note.

// ErrComposition is a use-tool step or dependency that refuses the run.
var ErrComposition = errors.New("refused composition")

// ErrBeyondCaller is a sub-tool that asks for more than its caller has
// (it wraps ErrComposition).
var ErrBeyondCaller = fmt.Errorf("sub-tool asks for more than its caller: %w", ErrComposition)

// maxToolDepth bounds use-tool nesting.
const maxToolDepth = 8

// ToolFinder finds a tool definition by name in scope (aliases already
// merged with their base tool).
type ToolFinder func(name string, scope tool.Scope) (*tool.Definition, error)

// ScopeFinder finds tools in the scopes the CLI uses: the standard layout
// under cwd and home, with the global scope under $SANDBOXED_GLOBAL_DIR
// when set. Aliases are merged with their base tool.
func ScopeFinder(cwd, home string) ToolFinder {
	s := ToolScopes(cwd, home)
	return func(name string, scope tool.Scope) (*tool.Definition, error) {
		def, err := s.Find(name, scope)
		if err != nil {
			return nil, err
		}
		return s.WithBase(def)
	}
}

// ToolScopes is the standard layout of tool scopes under cwd and home,
// with the global scope under $SANDBOXED_GLOBAL_DIR when set, and the
// index of their tools' names kept in the cache (tool-names.json), which
// no grant reaches (OwnDirs).
func ToolScopes(cwd, home string) tool.Scopes {
	s := tool.DefaultScopes(cwd, home)
	if etc := os.Getenv("SANDBOXED_GLOBAL_DIR"); etc != "" {
		s = tool.ScopesAt(cwd, home, etc)
	}
	if dir, err := xdg.CacheDir(); err == nil {
		s.Index = tool.SharedNameIndex(filepath.Join(dir, "tool-names.json"))
	}
	return s
}

// composition is what Prepare learned about sub-tools and dependencies.
type composition struct {
	// subs holds the bound sub-tool of each use-tool step, keyed by the
	// step's path (STEP, or STEP/SUBSTEP for nested use).
	subs  map[string]*tool.Bound
	notes []string
}

// compose checks dependencies and binds every use-tool step's sub-tool
// (recursively), checking that each asks for no more than its caller.
func compose(find ToolFinder, b *tool.Bound, grants []permissions.Grant, env tool.BindEnv, cwd, home string) (*composition, error) {
	if find == nil {
		find = ScopeFinder(cwd, home)
	}
	comp := &composition{subs: map[string]*tool.Bound{}}
	notes, err := checkDependencies(find, b.Def)
	if err != nil {
		return nil, err
	}
	comp.notes = notes
	if err := comp.bindSubs(find, b, grants, env, cwd, home, "", []string{b.Def.Name}); err != nil {
		return nil, err
	}
	return comp, nil
}

func (comp *composition) bindSubs(find ToolFinder, b *tool.Bound, grants []permissions.Grant, env tool.BindEnv, cwd, home, prefix string, chain []string) error {
	for i := range b.Steps {
		st := &b.Steps[i]
		if st.UseTool == "" {
			continue
		}
		where := fmt.Sprintf("step %s%s of %s", prefix, st.Name, b.Def.Name)
		if len(chain) >= maxToolDepth {
			return fmt.Errorf("%s: use-tool nests deeper than %d tools (%s): %w", where, maxToolDepth, strings.Join(chain, " -> "), ErrComposition)
		}
		for _, c := range chain {
			if c == st.UseTool {
				return fmt.Errorf("%s: use-tool %s calls itself (%s -> %s): %w", where, st.UseTool, strings.Join(chain, " -> "), st.UseTool, ErrComposition)
			}
		}
		def, err := find(st.UseTool, tool.ScopeAny)
		if err != nil {
			return fmt.Errorf("%s: use-tool %s: %w", where, st.UseTool, err)
		}
		in := tool.Input{}
		for k, v := range st.With {
			if strings.Contains(v, ".output}") || strings.Contains(v, ".error}") || strings.Contains(v, ".exit-code}") {
				return fmt.Errorf("%s: with.%s uses a step result; a sub-tool is bound (and its permissions checked) before any step runs, so with: takes parameters and fixed values only: %w", where, k, ErrComposition)
			}
			in[k] = tool.Text(v)
		}
		senv := env
		senv.ToolName = def.Name
		sub, err := tool.Bind(def, in, senv)
		if err != nil {
			return fmt.Errorf("%s: bind use-tool %s: %w", where, st.UseTool, err)
		}
		subGrants, err := permissions.Resolve(sub.Permissions, cwd, home)
		if err != nil {
			return fmt.Errorf("%s: use-tool %s: %w", where, st.UseTool, err)
		}
		// Compare real paths too, so a symlink cannot make a path look
		// covered. Nothing is created; a missing read path compares as
		// declared (the caller's sandbox has nothing there anyway).
		_ = ResolveMounts(subGrants, false)
		if extra := beyond(subGrants, grants); len(extra) > 0 {
			return fmt.Errorf("%s: use-tool %s asks for more than %s grants it: %s; add these to %s's required-permissions, or narrow %s's: %w",
				where, st.UseTool, b.Def.Name, strings.Join(extra, ", "), b.Def.Name, st.UseTool, ErrBeyondCaller)
		}
		if sub.Def.Security.ExecutionPrivilege == tool.PrivilegeElevated && b.Def.Security.ExecutionPrivilege != tool.PrivilegeElevated {
			return fmt.Errorf("%s: use-tool %s asks for elevated privilege, which %s does not have: %w", where, st.UseTool, b.Def.Name, ErrBeyondCaller)
		}
		if sub.Def.Environment != nil && sub.Def.Environment.Inherit && (b.Def.Environment == nil || !b.Def.Environment.Inherit) {
			return fmt.Errorf("%s: use-tool %s inherits the host environment, which %s does not: %w", where, st.UseTool, b.Def.Name, ErrBeyondCaller)
		}
		notes, err := checkDependencies(find, sub.Def)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		comp.notes = append(comp.notes, notes...)
		key := prefix + st.Name
		comp.subs[key] = sub
		if err := comp.bindSubs(find, sub, subGrants, env, cwd, home, key+"/", append(chain, def.Name)); err != nil {
			return err
		}
	}
	return nil
}

// beyond returns the grants of sub that no grant of caller covers, as
// permission strings.
func beyond(sub, caller []permissions.Grant) []string {
	var out []string
	for _, s := range sub {
		ok := false
		for _, c := range caller {
			if covers(c, s) {
				ok = true
				break
			}
		}
		if !ok {
			out = append(out, s.Permission)
		}
	}
	sort.Strings(out)
	return out
}

// covers reports whether caller grant c includes everything grant s allows.
func covers(c, s permissions.Grant) bool {
	switch {
	case s.Mount != nil:
		if c.Mount == nil || (s.Mount.Write && !c.Mount.Write) {
			return false
		}
		return pathUnder(s.Mount.HostPath, c.Mount.HostPath) &&
			(s.Mount.Resolved == "" || c.Mount.Resolved == "" || pathUnder(s.Mount.Resolved, c.Mount.Resolved))
	case s.Egress != nil:
		return c.Egress != nil && c.Egress.Rule().Covers(s.Egress.Rule())
	case s.Localhost != nil:
		return c.Localhost != nil && c.Localhost.Port == s.Localhost.Port
	case s.Env != nil:
		return c.Env != nil && c.Env.Name == s.Env.Name
	}
	return false
}

func pathUnder(p, dir string) bool {
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// checkDependencies checks def's dependencies: found in their scope and
// in a version their constraint allows. A required one that fails refuses
// the run (all failures named at once); an optional one becomes a note.
func checkDependencies(find ToolFinder, def *tool.Definition) ([]string, error) {
	var notes, missing []string
	for _, dep := range def.Dependencies {
		problem := ""
		scope, err := tool.ParseScope(dep.Scope)
		if err != nil {
			problem = err.Error()
		} else if got, err := find(dep.Tool, scope); err != nil {
			problem = fmt.Sprintf("%s is not installed in scope %s", dep.Tool, scope)
		} else if dep.Version != "" {
			c, err := tool.ParseConstraint(dep.Version)
			_ = c
			switch {
			case err != nil:
				problem = err.Error()
			case got.Version == "":
				if t := strings.TrimSpace(dep.Version); t != "*" && t != "x" {
					problem = fmt.Sprintf("%s has no version; %q is needed", dep.Tool, dep.Version)
				}
			default:
				v, err := tool.ParseVersion(got.Version)
				if err != nil {
					problem = err.Error()
				} else if !c.Check(v) {
					problem = fmt.Sprintf("%s is version %s; %q is needed", dep.Tool, got.Version, dep.Version)
				}
			}
		}
		if problem == "" {
			continue
		}
		if dep.Required {
			missing = append(missing, problem)
		} else {
			notes = append(notes, "optional dependency not satisfied: "+problem)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("check dependencies of %s: %s; install them (sandboxed tool add/import) or fix dependencies: %w",
			def.Name, strings.Join(missing, "; "), ErrComposition)
	}
	return notes, nil
}
