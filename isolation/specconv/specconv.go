package specconv

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// How says how a tier honours a spec field.
type How string

const (
	// Enforced: the tier applies the field as the spec says, or refuses
	// a value it cannot apply.
	Enforced How = "enforced"
	// Approximated: the tier applies the field by another mechanism that
	// holds less (Rule.Note says what); the plan and the result say so.
	Approximated How = "approximated"
)

// Rule says how a tier honours a spec field and every field below it.
type Rule struct {
	// Field is the field's path: Go field names from specs.Spec joined
	// by dots ("Linux.Resources.Memory.Limit"); an element of a slice or
	// map adds nothing to the path.
	Field string
	How   How
	// Note says, for an approximation, what holds and what does not.
	Note string
}

// Target is what decides a tier's rules: the tier, whether the run is a
// pod of the Kubernetes backend, the runtime (runsc counts gVisor's own
// kernel against the memory limit) and whether the spec names the run's
// cgroup.
type Target struct {
	Tier       isolation.Tier
	Kubernetes bool
	Runtime    string
	// Cgroup: the spec names the run's cgroup (Linux.CgroupsPath), which
	// holds the limits of the landlock and none tiers as written; without
	// one, rlimits approximate them. Review takes it from the spec.
	Cgroup bool
}

// TargetOf is the target of plan p.
func TargetOf(p *isolation.Plan) Target {
	return Target{Tier: p.Tier, Kubernetes: p.Backend == isolation.BackendKubernetes, Runtime: p.Runtime,
		Cgroup: specCgroup(p.Spec)}
}

// specCgroup reports whether s names the run's cgroup.
func specCgroup(s *specs.Spec) bool {
	return s != nil && s.Linux != nil && s.Linux.CgroupsPath != ""
}

// String names the target in messages: "the process tier", "the
// container tier on runsc", "a Kubernetes pod".
func (t Target) String() string {
	switch {
	case t.Kubernetes && t.Runtime != "":
		return "a Kubernetes pod (RuntimeClass " + t.Runtime + ")"
	case t.Kubernetes:
		return "a Kubernetes pod"
	case t.Runtime != "":
		return "the " + string(t.Tier) + " tier on " + t.Runtime
	}
	return "the " + string(t.Tier) + " tier"
}

// Review checks that target honours every field set in s: a field no rule
// of the target covers refuses the spec with an *isolation.UnsupportedError
// naming it. It returns the approximations of the fields set, in field
// order. Whether a cgroup holds the limits is the spec's to say
// (t.Cgroup is set from it).
func Review(t Target, s *specs.Spec) ([]isolation.Approximation, error) {
	if s == nil {
		return nil, &isolation.UnsupportedError{What: "a plan without a spec", Fix: "plan the run with sandbox.Plan"}
	}
	t.Cgroup = specCgroup(s)
	rules := Rules(t)
	var out []isolation.Approximation
	for _, f := range Fields(s) {
		r, ok := ruleFor(rules, f)
		if !ok {
			return nil, &isolation.UnsupportedError{
				What: fmt.Sprintf("the spec's %s in %s (it does not honour that field)", f, t),
				Fix:  "leave it out of the plan, or run the tool in a tier that honours it",
			}
		}
		if r.How == Approximated && !slices.ContainsFunc(out, func(a isolation.Approximation) bool { return a.Field == r.Field }) {
			out = append(out, isolation.Approximation{Field: r.Field, How: r.Note})
		}
	}
	return out, nil
}

// ruleFor is the rule of rules that covers field f: its own, else that of
// the nearest field above it.
func ruleFor(rules []Rule, f string) (Rule, bool) {
	for p := f; ; {
		for _, r := range rules {
			if r.Field == p {
				return r, true
			}
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return Rule{}, false
		}
		p = p[:i]
	}
}

// Fields lists, sorted and each once, the path of every leaf field set in
// s: a scalar that is not zero, a pointer that is not nil (to a scalar),
// a map or a slice of scalars that is not empty. Structs, and slices of
// them, are walked into; their fields name the path.
func Fields(s *specs.Spec) []string {
	set := map[string]bool{}
	walk(reflect.ValueOf(s), "", set)
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

func walk(v reflect.Value, path string, set map[string]bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if e := v.Elem(); e.Kind() != reflect.Struct {
			set[path] = true // a pointer to a scalar: set, whatever it holds
			return
		}
		walk(v.Elem(), path, set)
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			if !t.Field(i).IsExported() {
				continue
			}
			p := t.Field(i).Name
			if t.Field(i).Anonymous {
				p = "" // an embedded struct's fields are its holder's
			}
			walk(v.Field(i), join(path, p), set)
		}
	case reflect.Slice, reflect.Array:
		if v.Len() == 0 {
			return
		}
		if structish(v.Type().Elem()) {
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i), path, set)
			}
			return
		}
		set[path] = true
	case reflect.Map:
		if v.Len() > 0 {
			set[path] = true
		}
	default:
		if !v.IsZero() {
			set[path] = true
		}
	}
}

func structish(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "." + b
}

// Leaves lists the path of every leaf field of specs.Spec's type, as
// Fields names them: what a test walks to hold every tier to an answer
// for each.
func Leaves() []string {
	var out []string
	leaves(reflect.TypeOf(specs.Spec{}), "", map[reflect.Type]bool{}, &out)
	sort.Strings(out)
	return slices.Compact(out)
}

func leaves(t reflect.Type, path string, seen map[reflect.Type]bool, out *[]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		if !structish(t.Elem()) && t.Kind() != reflect.Pointer {
			*out = append(*out, path) // a slice of scalars is one leaf
			return
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		*out = append(*out, path)
		return
	}
	if seen[t] {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		p := f.Name
		if f.Anonymous {
			p = ""
		}
		leaves(f.Type, join(path, p), seen, out)
	}
}
