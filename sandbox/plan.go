package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// Planning defaults.
const (
	// DefaultKillGrace is the time between SIGTERM and SIGKILL.
	DefaultKillGrace = 2 * time.Second
	// DefaultPids is the pids limit unless the definition or policy says
	// otherwise; ReducedPids applies to reduced privilege.
	DefaultPids = 256
	ReducedPids = 128
	// DefaultImage is the container tier's image unless sandboxed.image says.
	DefaultImage = "sandboxed-runner:latest"
	// maskWalkLimit bounds the walk that expands policy masks with globs.
	maskWalkLimit = 50000
	// maskWalkTime bounds the time of one such walk.
	maskWalkTime = 5 * time.Second
)

// ErrPlan: the run cannot be planned as asked (a grant that cannot be
// honoured, a mask that cannot be applied). Nothing ran.
var ErrPlan = errors.New("cannot plan run")

// PlanInput is everything the planner needs. It is data; planning does
// no I/O except expanding the policy's glob masks against the host tree.
type PlanInput struct {
	RunID    string
	Bound    *tool.Bound
	Grants   []permissions.Grant // Mount.Resolved filled by ResolveMounts
	Decision *policy.Decision
	// Cwd is the caller's working directory (absolute); relative working
	// directories of the tool resolve against it.
	Cwd, Home string
	// UID and GID of the invoking user (same-as-user).
	UID, GID uint32
	// LookupEnv reads the host environment, for env: grants and
	// environment.inherit. Nil means an empty host environment.
	LookupEnv func(string) (string, bool)
	// HostEnv is the whole host environment, for environment.inherit.
	HostEnv []string
	// ExtraEnv is added last (the egress proxy variables).
	ExtraEnv []string
	// EnvDeny are the policy's environment.deny patterns: host variables
	// never passed in, even when the environment is inherited.
	EnvDeny []string
	// SubTools are the bound sub-tools of use-tool steps, keyed by step
	// path (STEP, STEP/SUBSTEP); Prepare fills it (compose.go).
	SubTools map[string]*tool.Bound
}

// BuildPlan turns a bound tool and the policy's decision into a Plan and
// the commands of its steps. The decision must allow the run.
func BuildPlan(in PlanInput) (*isolation.Plan, []JobStep, error) {
	p, steps, _, err := buildPlan(in)
	return p, steps, err
}

// buildPlan is BuildPlan, also returning what to look at again after the
// run: the protected patterns under write grants.
func buildPlan(in PlanInput) (*isolation.Plan, []JobStep, []protectedWatch, error) {
	b, d := in.Bound, in.Decision
	if d == nil || d.Verdict != policy.Allow {
		return nil, nil, nil, fmt.Errorf("plan %s: the policy has not allowed the run: %w", b.Def.Name, ErrPlan)
	}
	def := b.Def
	priv := string(def.Security.ExecutionPrivilege)
	if priv == "" {
		priv = PrivSameAsUser
	}
	ext := def.Sandboxed
	if ext == nil {
		ext = &tool.SandboxedExt{}
	}

	limits := isolation.Limits{
		MemoryBytes: d.Limits.MemoryBytes,
		Pids:        d.Limits.Pids,
		CPUs:        ext.CPUs,
		TmpfsBytes:  DefaultTmpfsBytes,
		Timeout:     d.Limits.Timeout,
		KillGrace:   DefaultKillGrace,
	}
	if ext.TmpfsSize > 0 {
		limits.TmpfsBytes = ext.TmpfsSize
	}
	if ext.PidsLimit > 0 && (limits.Pids == 0 || ext.PidsLimit < limits.Pids) {
		limits.Pids = ext.PidsLimit // a definition may only narrow the policy's cap
	}
	if limits.Pids <= 0 {
		limits.Pids = DefaultPids
	}
	if priv == PrivReduced && ext.PidsLimit == 0 && limits.Pids > ReducedPids {
		limits.Pids = ReducedPids
	}

	cwd := in.Cwd
	if wd := b.WorkingDirectory; wd != "" {
		cwd = absUnder(in.Cwd, wd)
	}

	env := baseEnv(in, b)
	opts := []SpecOpt{
		WithMemory(limits.MemoryBytes),
		WithPids(limits.Pids),
		WithTmpfs(limits.TmpfsBytes),
		WithEnv(env),
		WithCwd(cwd),
		WithAnnotation(isolation.AnnotationTool, def.Name),
	}
	if limits.CPUs > 0 {
		opts = append(opts, WithCPUs(limits.CPUs))
	}
	if priv == PrivSameAsUser {
		opts = append(opts, WithUser(in.UID, in.GID))
	}
	// Grants, parents before children so a nested grant is not hidden.
	mounts := mountGrants(in.Grants)
	// A working directory no grant covers exists in the sandbox as an
	// empty, read-only directory: commands start where they were told,
	// and see nothing of the host there.
	for _, dir := range workDirs(b, cwd, in.Cwd, in.SubTools) {
		if !covered(dir, mounts) {
			opts = append(opts, emptyDir(dir))
		}
	}
	for _, m := range mounts {
		if m.Resolved == "" {
			return nil, nil, nil, fmt.Errorf("plan %s: grant of %s was not resolved on the host: %w", def.Name, m.HostPath, ErrPlan)
		}
		if m.Write {
			opts = append(opts, WithWriteBind(m.Resolved, m.Target))
		} else {
			opts = append(opts, WithReadBind(m.Resolved, m.Target))
		}
	}
	maskOpts, watches, err := maskOptions(d.Masks, mounts)
	if err != nil {
		return nil, nil, nil, err
	}
	opts = append(opts, maskOpts...)

	spec, err := NewSpec(in.RunID, priv, opts...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("plan %s: %w", def.Name, err)
	}

	p := &isolation.Plan{
		RunID:     in.RunID,
		Tool:      def.Name,
		Tier:      isolation.Tier(d.Isolation),
		Privilege: priv,
		Spec:      spec,
		Limits:    limits,
		// The process tier reads it; the others have no Landlock.
		RequireLandlock: d.RequireLandlock,
	}
	if p.Tier == isolation.TierContainer {
		p.Image = DefaultImage
		if ext.Image != "" {
			p.Image = ext.Image
		}
		p.Runtime = ext.Runtime
	}

	steps, err := jobSteps(b, env, cwd, in.Cwd, d.Limits.OutputBytes, in.SubTools)
	if err != nil {
		return nil, nil, nil, err
	}
	return p, steps, watches, nil
}

func workDirs(b *tool.Bound, toolCwd, callerCwd string, subs map[string]*tool.Bound) []string {
	dirs := []string{toolCwd}
	for _, st := range b.Steps {
		if st.Cwd != "" {
			dirs = append(dirs, absUnder(callerCwd, st.Cwd))
		}
	}
	// Sub-tools of use-tool steps run in the same sandbox.
	for _, sub := range subs {
		for _, st := range sub.Steps {
			if st.Cwd != "" {
				dirs = append(dirs, absUnder(callerCwd, st.Cwd))
			}
		}
	}
	sort.Strings(dirs)
	return dirs
}

func covered(dir string, mounts []*permissions.Mount) bool {
	for _, m := range mounts {
		if dir == m.Target || strings.HasPrefix(dir, strings.TrimSuffix(m.Target, "/")+"/") {
			return true
		}
	}
	return dir == "/" || dir == "/tmp"
}

func emptyDir(dir string) SpecOpt {
	return func(s *specs.Spec) error {
		for _, m := range s.Mounts {
			if m.Destination == dir {
				return nil
			}
		}
		s.Mounts = append(s.Mounts, specs.Mount{Destination: dir, Type: "tmpfs", Source: "tmpfs",
			Options: []string{"ro", "nosuid", "nodev", "noexec", "size=4k", "mode=755"}})
		return nil
	}
}

func mountGrants(grants []permissions.Grant) []*permissions.Mount {
	var ms []*permissions.Mount
	for i := range grants {
		if grants[i].Mount != nil {
			ms = append(ms, grants[i].Mount)
		}
	}
	sort.SliceStable(ms, func(i, j int) bool { return len(ms[i].Target) < len(ms[j].Target) })
	return ms
}

// baseEnv is the scrubbed environment every command starts from: PATH,
// HOME, LANG, the tool's variables, granted host variables, inherited ones
// when the policy allowed environment.inherit, and the proxy variables.
func baseEnv(in PlanInput, b *tool.Bound) []string {
	lookup := in.LookupEnv
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	vars := map[string]string{}
	if b.Def.Environment != nil && b.Def.Environment.Inherit {
		for _, kv := range in.HostEnv {
			if k, v, ok := strings.Cut(kv, "="); ok && !deniedEnv(in.EnvDeny, k) {
				vars[k] = v
			}
		}
	}
	vars["PATH"] = DefaultPath
	vars["HOME"] = "/tmp"
	vars["LANG"] = "C.UTF-8"
	if v, ok := lookup("LANG"); ok && v != "" {
		vars["LANG"] = v
	}
	for k, v := range b.Env {
		vars[k] = v
	}
	for _, g := range in.Grants {
		if g.Env != nil {
			if v, ok := lookup(g.Env.Name); ok {
				vars[g.Env.Name] = v
			}
		}
	}
	for _, kv := range in.ExtraEnv {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	return sortedEnv(vars)
}

// deniedEnv reports whether the policy keeps host variable k out even when
// the environment is inherited (LD_*, SSH_AUTH_SOCK, DOCKER_HOST, ...).
func deniedEnv(deny []string, k string) bool {
	for _, pat := range deny {
		if ok, _ := filepath.Match(pat, k); ok {
			return true
		}
	}
	return false
}

func sortedEnv(vars map[string]string) []string {
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func absUnder(base, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

// maskOptions applies the policy's masks inside granted mounts: hidden
// paths get an empty read-only tmpfs (directories) or /dev/null (files);
// read-only paths are bound onto themselves read-only. Globs are expanded
// against the host tree under the mount's source. A mask that cannot be
// expanded refuses the run: a grant is never wider than the policy allows.
//
// It also returns a watch for each glob mask under a write grant: what
// matches now is masked, but what the tool creates cannot be (a new
// nested repository's .git/hooks), so the controller looks again after
// the run.
func maskOptions(masks []policy.PathMask, mounts []*permissions.Mount) ([]SpecOpt, []protectedWatch, error) {
	type maskMount struct {
		src, dst string
		fi       fs.FileInfo
		hide     bool
		anchor   bool // a read-write bind of a directory onto itself
	}
	byDst := map[string]maskMount{}
	var watches []protectedWatch
	mountOf := func(mk policy.PathMask) *permissions.Mount {
		var m *permissions.Mount
		for _, c := range mounts {
			if c.Target == mk.Under {
				m = c
			}
		}
		return m
	}
	// Every glob of one mount is expanded in a single walk of it.
	globs := map[*permissions.Mount][]string{}
	for _, mk := range masks {
		if m := mountOf(mk); m != nil {
			if rel, err := filepath.Rel(m.Target, mk.Path); err == nil && strings.ContainsAny(rel, "*?[") && !slices.Contains(globs[m], rel) {
				globs[m] = append(globs[m], rel)
			}
		}
	}
	type walked struct {
		matches map[string][]string
		err     error
	}
	walks := map[*permissions.Mount]walked{}
	for m, patterns := range globs {
		res, err := expandMasks(m.Resolved, patterns)
		w := walked{matches: map[string][]string{}, err: err}
		for i, p := range patterns {
			if err == nil {
				w.matches[p] = res[i]
			}
		}
		walks[m] = w
	}
	for _, mk := range masks {
		m := mountOf(mk)
		if m == nil {
			continue // the mount it protects is not granted
		}
		rel, err := filepath.Rel(m.Target, mk.Path)
		if err != nil || strings.HasPrefix(rel, "..") {
			return nil, nil, fmt.Errorf("policy mask %s (%s) is outside the mount %s: %w", mk.Path, mk.Rule, m.Target, ErrPlan)
		}
		var matches []string
		if w, ok := walks[m]; ok && strings.ContainsAny(rel, "*?[") {
			matches, err = w.matches[rel], w.err
		} else {
			matches, err = expandMask(m.Resolved, rel)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("apply policy mask %s (%s) under %s: %v; grant a narrower path: %w", mk.Path, mk.Rule, m.Target, err, ErrPlan)
		}
		// What does not exist yet cannot be masked: under a write grant,
		// the controller looks again after the run (a glob for new
		// matches, a literal path for whether it appeared).
		if m.Write && (strings.ContainsAny(rel, "*?[") || len(matches) == 0) {
			w := protectedWatch{root: m.Resolved, target: m.Target, pattern: rel, rule: mk.Rule, before: map[string]bool{}}
			for _, hostRel := range matches {
				w.before[hostRel] = true
			}
			watches = append(watches, w)
		}
		for _, hostRel := range matches {
			src := filepath.Join(m.Resolved, hostRel)
			fi, err := os.Lstat(src)
			if err != nil {
				continue
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				// A mount on a symlink would land wherever it points; the
				// init refuses it. Say so here, with the way out.
				to, _ := os.Readlink(src)
				return nil, nil, fmt.Errorf("policy mask %s (%s): %s is a symlink (to %s), which cannot be protected in place; grant a narrower path that does not hold it: %w",
					mk.Path, mk.Rule, src, to, ErrPlan)
			}
			dst := filepath.Join(m.Target, hostRel)
			if old, ok := byDst[dst]; !ok || old.anchor || (mk.Hide && !old.hide) {
				byDst[dst] = maskMount{src: src, dst: dst, fi: fi, hide: mk.Hide}
			}
			// A mountpoint cannot be renamed or removed, but its parents
			// can: `mv .git .git.old` would carry a protected .git/hooks
			// away and let the tool make a new one. Under a write grant,
			// every directory between the grant and the protected path is
			// bound onto itself (read-write, as the grant), which pins it
			// in place. A read-only grant renames nothing, and a read-write
			// anchor there would make the directory writable.
			for d := filepath.Dir(hostRel); m.Write && d != "." && d != "/"; d = filepath.Dir(d) {
				adst := filepath.Join(m.Target, d)
				if n := deepestMount(mounts, adst); n != m {
					// Another grant nested in this one covers it: its own
					// bind pins it, and an anchor would replace that bind
					// (a read-only grant would become writable).
					break
				}
				if _, ok := byDst[adst]; ok {
					continue
				}
				asrc := filepath.Join(m.Resolved, d)
				afi, err := os.Lstat(asrc)
				if err != nil || !afi.IsDir() {
					return nil, nil, fmt.Errorf("apply policy mask %s (%s): %s is not a directory; refusing: %w", mk.Path, mk.Rule, asrc, ErrPlan)
				}
				byDst[adst] = maskMount{src: asrc, dst: adst, fi: afi, anchor: true}
			}
		}
	}
	// Shallow first: binds are not recursive, so a parent bound after its
	// child would hide the child's protection.
	all := make([]maskMount, 0, len(byDst))
	for _, mm := range byDst {
		all = append(all, mm)
	}
	sort.Slice(all, func(i, j int) bool {
		di, dj := strings.Count(all[i].dst, "/"), strings.Count(all[j].dst, "/")
		if di != dj {
			return di < dj
		}
		return all[i].dst < all[j].dst
	})
	var opts []SpecOpt
	for _, mm := range all {
		if mm.anchor {
			opts = append(opts, WithWriteBind(mm.src, mm.dst))
			continue
		}
		opts = append(opts, maskOpt(mm.src, mm.dst, mm.fi, mm.hide))
	}
	return opts, watches, nil
}

func maskOpt(src, dst string, fi fs.FileInfo, hide bool) SpecOpt {
	return func(s *specs.Spec) error {
		switch {
		case !hide:
			s.Mounts = append(s.Mounts, specs.Mount{Destination: dst, Type: "bind", Source: src,
				Options: []string{"bind", "ro", "nosuid", "nodev"}})
		case fi.IsDir():
			s.Mounts = append(s.Mounts, specs.Mount{Destination: dst, Type: "tmpfs", Source: "tmpfs",
				Options: []string{"ro", "nosuid", "nodev", "noexec", "size=4k", "mode=000"}})
		default:
			s.Mounts = append(s.Mounts, specs.Mount{Destination: dst, Type: "bind", Source: "/dev/null",
				Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}})
		}
		return nil
	}
}

// deepestMount is the grant whose target holds p most closely.
func deepestMount(mounts []*permissions.Mount, p string) *permissions.Mount {
	var best *permissions.Mount
	for _, m := range mounts {
		if holds(m.Target, p) && (best == nil || len(m.Target) > len(best.Target)) {
			best = m
		}
	}
	return best
}

// holds reports whether dir is p or one of its parents.
func holds(dir, p string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

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
			if strings.ContainsAny(w.pattern, "*?[") {
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
	if !strings.ContainsAny(pattern, "*?[") {
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
					pattern := patterns[i]
					subject := rel
					if strings.HasPrefix(pattern, "**/") {
						subject = strings.TrimPrefix(path, "/")
					}
					if globMatch(pattern, subject) {
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

// globMatch matches rel against pattern segment by segment; "**" matches
// zero or more segments.
func globMatch(pattern, rel string) bool {
	return matchSegs(strings.Split(pattern, "/"), strings.Split(rel, "/"))
}

func matchSegs(p, s []string) bool {
	for len(p) > 0 {
		if p[0] == "**" {
			for i := 0; i <= len(s); i++ {
				if matchSegs(p[1:], s[i:]) {
					return true
				}
			}
			return false
		}
		if len(s) == 0 {
			return false
		}
		if ok, _ := filepath.Match(p[0], s[0]); !ok {
			return false
		}
		p, s = p[1:], s[1:]
	}
	return len(s) == 0
}
