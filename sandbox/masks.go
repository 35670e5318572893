package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/pathglob"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/policy"
)

// The policy's masks (paths.deny and paths.deny-write inside a granted
// mount) are planned in two halves, as the rest of the plan: gatherMasks
// lists what each mask matches on the host and notes what kind of file
// each match and each directory above it is; planMasks turns that into
// mounts without touching the host.

// MaskMatch is what one policy mask matches under the grant it protects.
type MaskMatch struct {
	// Paths are relative to the grant's host directory (Mount.Resolved).
	Paths []string
	// Err says why the matches could not be listed (a tree too large to
	// walk): the run is refused.
	Err error
}

// FileFact is what planning needs to know of one host path. A path with
// no FileFact does not exist.
type FileFact struct {
	Dir bool
	// Link is the target of a symlink, and IsLink true for one.
	Link   string
	IsLink bool
}

// outside reports whether rel (from filepath.Rel) leaves the directory it
// is relative to: ".." or "../…", not a name such as "..env".
func outside(rel string) bool { return rel == ".." || strings.HasPrefix(rel, "../") }

// hasGlob reports whether a mask path holds the policy's glob metacharacters.
func hasGlob(p string) bool { return pathglob.HasMeta(p) }

// maskMount is the grant mask mk applies to: the last one whose target
// is mk.Under.
func maskMount(mk policy.PathMask, mounts []*permissions.Mount) *permissions.Mount {
	var m *permissions.Mount
	for _, c := range mounts {
		if c.Target == mk.Under {
			m = c
		}
	}
	return m
}

// gatherMasks fills f.Masks and f.Files for the masks of granted mounts.
// Every glob of one mount is expanded in a single walk of it. It reads
// the host and changes nothing.
//
// The matches of a secret mask (secrets.mask) that the policy's
// secrets.except lifts, by the declared or the resolved path, are left
// out: they stay visible.
func gatherMasks(f *HostFacts, d *policy.Decision, mounts []*permissions.Mount) {
	masks := d.Masks
	f.Masks = map[policy.PathMask]MaskMatch{}
	if f.Files == nil {
		f.Files = map[string]FileFact{}
	}
	globs := map[*permissions.Mount][]string{}
	for _, mk := range masks {
		if m := maskMount(mk, mounts); m != nil {
			if rel, err := filepath.Rel(m.Target, mk.Path); err == nil && hasGlob(rel) && !slices.Contains(globs[m], rel) {
				globs[m] = append(globs[m], rel)
			}
		}
	}
	walked := map[*permissions.Mount]map[string]MaskMatch{}
	for m, patterns := range globs {
		res, err := expandMasks(m.Resolved, patterns)
		w := map[string]MaskMatch{}
		for i, p := range patterns {
			if err != nil {
				w[p] = MaskMatch{Err: err}
			} else {
				w[p] = MaskMatch{Paths: res[i]}
			}
		}
		walked[m] = w
	}
	for _, mk := range masks {
		m := maskMount(mk, mounts)
		if m == nil {
			continue
		}
		rel, err := filepath.Rel(m.Target, mk.Path)
		if err != nil || outside(rel) {
			continue // planMasks refuses it
		}
		var mm MaskMatch
		if hasGlob(rel) {
			mm = walked[m][rel]
		} else {
			mm.Paths, mm.Err = expandMask(m.Resolved, rel)
		}
		if mk.Secret && mm.Err == nil {
			mm.Paths = slices.DeleteFunc(mm.Paths, func(hostRel string) bool {
				return d.SecretExcepted(filepath.Join(m.Resolved, hostRel)) || d.SecretExcepted(filepath.Join(m.HostPath, hostRel))
			})
		}
		f.Masks[mk] = mm
		for _, hostRel := range mm.Paths {
			for d := hostRel; d != "." && d != "/"; d = filepath.Dir(d) {
				p := filepath.Join(m.Resolved, d)
				if _, ok := f.Files[p]; ok {
					continue
				}
				if ff, ok := statFact(p); ok {
					f.Files[p] = ff
				}
			}
		}
	}
}

// gatherWriteGrants notes in f.Files what each write grant is on the host:
// a grant of one file is recorded through its directory (planChanges).
func gatherWriteGrants(f *HostFacts, mounts []*permissions.Mount) {
	if f.Files == nil {
		f.Files = map[string]FileFact{}
	}
	for _, m := range mounts {
		if _, ok := f.Files[m.Resolved]; !ok && m.Write && m.Resolved != "" {
			if ff, ok := statFact(m.Resolved); ok {
				f.Files[m.Resolved] = ff
			}
		}
	}
}

// statFact describes p without following a symlink; false when p does not
// exist (or cannot be looked at).
func statFact(p string) (FileFact, bool) {
	fi, err := os.Lstat(p)
	if err != nil {
		return FileFact{}, false
	}
	ff := FileFact{Dir: fi.IsDir()}
	if fi.Mode()&fs.ModeSymlink != 0 {
		ff.IsLink = true
		ff.Link, _ = os.Readlink(p)
	}
	return ff, true
}

// planMasks applies the policy's masks inside granted mounts: hidden
// paths get an empty read-only tmpfs (directories) or /dev/null (files);
// read-only paths are bound onto themselves read-only. The matches come
// from f (gatherMasks). A mask that could not be expanded refuses the
// run: a grant is never wider than the policy allows.
//
// It also returns a watch for each glob mask under a write grant: what
// matches now is masked, but what the tool creates cannot be (a new
// nested repository's .git/hooks), so the controller looks again after
// the run.
//
// A secret mask (secrets.mask) pins no directory: a folder moved with a
// hidden secret inside carries the mount over it along, and the secret
// stays hidden; what it protects is the content, not the place.
//
// In a review (ch), what is bound from a write grant (a read-only mask,
// an anchor) is bound from its working copy: a host directory bound
// read-write there would let the tool write past the review.
//
// The masked paths are returned as the plan lists them (Plan.Masked).
func planMasks(masks []policy.PathMask, mounts []*permissions.Mount, f *HostFacts, ch *isolation.Changes) ([]SpecOpt, []protectedWatch, []isolation.MaskedPath, error) {
	type maskMountPlan struct {
		src, dst string
		dir      bool
		hide     bool
		anchor   bool // a read-write bind of a directory onto itself
		rule     string
	}
	byDst := map[string]maskMountPlan{}
	var watches []protectedWatch
	for _, mk := range masks {
		m := maskMount(mk, mounts)
		if m == nil {
			continue // the mount it protects is not granted
		}
		rel, err := filepath.Rel(m.Target, mk.Path)
		if err != nil || outside(rel) {
			return nil, nil, nil, fmt.Errorf("policy mask %s (%s) is outside the mount %s: %w", mk.Path, mk.Rule, m.Target, ErrPlan)
		}
		mm, ok := f.Masks[mk]
		if !ok {
			// Fail closed: a mask nobody looked for is not an empty one.
			return nil, nil, nil, fmt.Errorf("policy mask %s (%s) under %s was not looked up on the host: %w", mk.Path, mk.Rule, m.Target, ErrPlan)
		}
		if mm.Err != nil {
			fix := "grant a narrower path"
			if mk.Secret {
				fix += ", or lift the secret masks there with secrets.except: [" + m.HostPath + "] in the policy"
			}
			return nil, nil, nil, fmt.Errorf("apply policy mask %s (%s) under %s: %v; %s: %w", mk.Path, mk.Rule, m.Target, mm.Err, fix, ErrPlan)
		}
		// What does not exist yet cannot be masked: under a write grant,
		// the controller looks again after the run (a glob for new
		// matches, a literal path for whether it appeared).
		if m.Write && (hasGlob(rel) || len(mm.Paths) == 0) {
			w := protectedWatch{root: m.Resolved, target: m.Target, pattern: rel, rule: mk.Rule, before: map[string]bool{}}
			for _, hostRel := range mm.Paths {
				w.before[hostRel] = true
			}
			watches = append(watches, w)
		}
		for _, hostRel := range mm.Paths {
			src := filepath.Join(m.Resolved, hostRel)
			fi, ok := f.Files[src]
			if !ok {
				continue // gone since it matched
			}
			if fi.IsLink && mk.Secret {
				// A secret's content is masked under its own name: a link
				// to it inside the grant leads to the mask, one to outside
				// leads nowhere the sandbox can see.
				continue
			}
			if fi.IsLink {
				// A mount on a symlink would land wherever it points; the
				// init refuses it. Say so here, with the way out.
				return nil, nil, nil, fmt.Errorf("policy mask %s (%s): %s is a symlink (to %s), which cannot be protected in place; grant a narrower path that does not hold it: %w",
					mk.Path, mk.Rule, src, fi.Link, ErrPlan)
			}
			dst := filepath.Join(m.Target, hostRel)
			if old, ok := byDst[dst]; !ok || old.anchor || (mk.Hide && !old.hide) {
				byDst[dst] = maskMountPlan{src: src, dst: dst, dir: fi.Dir, hide: mk.Hide, rule: mk.Rule}
			}
			if mk.Secret {
				continue
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
				if afi, ok := f.Files[asrc]; !ok || afi.IsLink || !afi.Dir {
					return nil, nil, nil, fmt.Errorf("apply policy mask %s (%s): %s is not a directory; refusing: %w", mk.Path, mk.Rule, asrc, ErrPlan)
				}
				byDst[adst] = maskMountPlan{src: asrc, dst: adst, dir: true, anchor: true}
			}
		}
	}
	// Shallow first: binds are not recursive, so a parent bound after its
	// child would hide the child's protection.
	all := make([]maskMountPlan, 0, len(byDst))
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
	var masked []isolation.MaskedPath
	for _, mm := range all {
		if mm.anchor {
			opts = append(opts, WithWriteBind(reviewSource(mm.src, ch), mm.dst))
			continue
		}
		opts = append(opts, maskOpt(reviewSource(mm.src, ch), mm.dst, mm.dir, mm.hide))
		masked = append(masked, isolation.MaskedPath{Path: mm.dst, Source: mm.src, Dir: mm.dir, Hide: mm.hide, Rule: mm.rule})
	}
	return opts, watches, masked, nil
}

func maskOpt(src, dst string, dir, hide bool) SpecOpt {
	return func(s *specs.Spec) error {
		switch {
		case !hide:
			s.Mounts = append(s.Mounts, specs.Mount{Destination: dst, Type: "bind", Source: src,
				Options: []string{"bind", "ro", "nosuid", "nodev"}})
		case dir:
			s.Mounts = append(s.Mounts, specs.Mount{Destination: dst, Type: "tmpfs", Source: "tmpfs",
				Options: []string{"ro", "nosuid", "nodev", "noexec", "size=4k", "mode=000"}})
		default:
			s.Mounts = append(s.Mounts, specs.Mount{Destination: dst, Type: "bind", Source: "/dev/null",
				Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}})
		}
		return nil
	}
}
